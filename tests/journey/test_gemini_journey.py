"""A Gemini CLI user's headless run with ipse, end to end, with the real Gemini CLI.

In a fresh HOME and project folder (a CRLF ``GEMINI.md`` and a ``.gemini/settings.json`` with a
comment already there; the user's Gemini CLI set up with an API key and the project folder
trusted): ``ipse install --agent gemini``, whose notes say what the entry trusts; one ``gemini
-p`` run (no terminal to ask on) against a scripted Gemini API (`tests.support.gemini_upstream`),
in which the model checkpoints with ``mcp_ipse_micro_handoff`` and reads the notes back with
``mcp_ipse_recall``. Then: the first request already offered ipse's checkpoint tool with its
schema; the checkpoint came back recorded; recall gave back its notes; ``ipse uninstall`` gives
every file of the project back byte for byte. No proxy runs (none serves Gemini's API), so no
port is shared with the other journeys.
"""

from __future__ import annotations

from pathlib import Path

from tests.journey._world import Broken
from tests.support.clients import gemini_binary


def test_gemini_headless_first_run(tmp_path: Path) -> None:
    gemini = gemini_binary()
    from tests.journey.gemini import journey

    try:
        result = journey(tmp_path, gemini)
    except Broken as exc:
        import pytest

        pytest.fail(str(exc), pytrace=False)
    print("seconds:", {k: round(v, 1) for k, v in result.world.seconds.items()})
    result.world.seams.verdict()
