"""A Claude Code user's first hour with ipse, end to end, with the real Claude Code CLI.

In a fresh HOME and project folder (a CRLF ``CLAUDE.md`` and ``.claude/settings.json`` already
there): ``ipse install --agent claude-code --proxy --port PORT --anthropic-upstream URL
--record FILE`` (the hook's ``ipse proxy start`` gets the upstream, a scripted model that answers
as the Anthropic API does, and the record); three ``claude -p`` turns, not ``--bare`` (hooks and
MCP as a user has them), in which the model reads a file, calls ``mcp__ipse__micro_handoff`` with
notes, then answers; the later two turns go on with ``--resume ID``, or with ``--continue`` (for
both, Claude Code starts its MCP server under a new session id, then switches to the one it goes
on with). Then: the SessionStart hook started the proxy; the first request already
offered ipse's tools and what it offers is the same in every request (run twice: as Claude Code
comes, with its tool search on, which leaves ipse's tools in ``tools`` because the entry says
``alwaysLoad``, and with ``ENABLE_TOOL_SEARCH=false``); the request after the
checkpoint lost the tool traffic before it and kept every authored text, and the next one shares
its prefix; ``ipse report`` and ``ipse prefix`` read the proxy's record, show the handoff and
quote the saving the proxy log and the MCP result quote; the checkpoint's notes and what the
handoff removed are filed under the session Claude Code reports (``ipse archive list
session:<id>`` finds both) and the MCP result says what the next request drops; ``ipse recall``
gives back the file
content the handoff removed; ``ipse uninstall`` gives every file of the project back byte for
byte. A failure lists every seam that broke.

Which ipse: the ``ipse`` executable of the environment the tests run in. ``.ci/run`` builds that
environment with ``pip install '.[test]'``, a superset of the extras the README names for this
loop (``proxy`` and ``mcp``), and the test checks that their requirements are met there. A second
``pip install`` into a fresh virtual environment would need the build backend the project asks
for (setuptools>=77), which is not installed here and cannot be fetched offline; the test runs
the tests' environment with its ``bin`` off PATH instead, so everything install registers must
name ipse by absolute path, as for a user whose environment is not active.

The proxy listens where install points Claude Code: a port free when the journey starts, which
it gives install's ``--port``, so journeys run side by side and whatever holds ipse's default
port (8765) changes nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.journey._world import Broken, missing_extras
from tests.support.clients import claude_binary


@pytest.mark.parametrize(
    ("tool_search", "resume"),
    [(True, "--resume"), (False, "--resume"), (True, "--continue")],
    ids=["as-it-comes", "tool-search-off", "continue"],
)
def test_claude_code_first_hour(tmp_path: Path, tool_search: bool, resume: str) -> None:
    claude = claude_binary()
    missing = missing_extras()
    assert not missing, f"the extras the README names are not installed: {missing}"
    from tests.journey.claude_code import journey

    try:
        result = journey(tmp_path, claude, tool_search, resume=resume)
    except Broken as exc:  # a seam the rest stands on broke
        pytest.fail(str(exc), pytrace=False)
    print("seconds:", {k: round(v, 1) for k, v in result.world.seconds.items()})
    result.world.seams.verdict()
