"""A Codex CLI user's first hour with ipse, end to end, with the real Codex CLI and its default
model.

In a fresh HOME, CODEX_HOME and project folder (a CRLF ``AGENTS.md`` and a ``config.toml`` with a
comment already there): ``ipse install --agent codex --proxy --port PORT --openai-upstream URL
--record FILE``; the proxy started with exactly the command install printed (its upstream a scripted
Responses API); three ``codex exec`` turns with Codex's default model, which gets MCP tools
as deferred tool namespaces and calls them from its JavaScript ``exec`` tool: the model reads
``notes.txt`` (``await tools.exec_command(...)``), checkpoints (``await
tools.mcp__ipse__micro_handoff({...})``, a ``custom_tool_call`` named ``exec`` on the wire), then
answers. Then: the first request already offered ipse's tools, and the tools stay the same; the
request after the checkpoint lost the read and kept every authored text, every untouched item as
Codex wrote it, and the next request shares its prefix; ``ipse report`` and ``ipse prefix`` read
the record, show the handoff and quote the proxy log's saving, as the MCP result does; one
session key holds the notes and what the handoff removed; ``ipse recall`` gives back the file
content; ``ipse uninstall`` gives every file back byte for byte. A failure lists every seam that
broke.

``codex exec`` asks no questions (an MCP call that needs approval fails there): install approves
ipse's own tools in its server entry, so the turns pass no ``-c``. Which ipse, and which port:
see test_claude_code_journey.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.journey._world import Broken, missing_extras
from tests.support.clients import codex_binary


def test_codex_first_hour(tmp_path: Path) -> None:
    codex = codex_binary()
    missing = missing_extras()
    assert not missing, f"the extras the README names are not installed: {missing}"
    from tests.journey.codex import journey

    try:
        result = journey(tmp_path, codex)
    except Broken as exc:  # a seam the rest stands on broke
        pytest.fail(str(exc), pytrace=False)
    print("seconds:", {k: round(v, 1) for k, v in result.world.seconds.items()})
    result.world.seams.verdict()
