"""The real Claude Code CLI in a long session: on its own it compacts its conversation (a summary
in place of the history); through ``ipse proxy --autopilot cut`` it never does, because the
proxy cuts first and every word the user and the model wrote goes on, byte for byte.

The session (`tests.support.long_session`): each ``claude -p`` / ``claude -p --continue`` turn
reads a 30 KB file and runs a command with a 14 KB output, against a scripted upstream that
streams as the Messages API does, answers ``count_tokens``, reports ``input_tokens`` = the body's
bytes / 4, and answers a compaction request with a ``<summary>``.

Claude Code 2.1.332 with ``CLAUDE_CODE_AUTO_COMPACT_WINDOW=100000`` compacts at 67,000 tokens
(the window less 20,000 of output less 13,000): the last reply's usage plus its own count of the
messages since. Here that is turn 5 (the request after the Read result, once the reply before
reported 63,110 tokens). Through the proxy with ``--autopilot-soft 25000 --autopilot-hard
40000`` (`tests.support.autopilot_journey`) the forwarded bodies stay far below it, so the usage
the upstream reports does too, and Claude Code's meter follows from the next reply on.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from tests.support.anthropic_upstream import Upstream, anthropic_upstream
from tests.support.autopilot_journey import CLAUDE_CODE, run_journey
from tests.support.claude_code_session import ClaudeCodeSession
from tests.support.clients import claude_binary
from tests.support.long_session import (
    claude_code_model,
    extends,
    is_compaction_request,
    said,
    texts,
)

WINDOW = {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "100000"}  # compacts at 67,000 tokens
COMPACTED_BY = 8  # turns: the baseline compacts in turn 5
TURNS = 14  # through the proxy: far past where Claude Code compacts on its own


def _main_requests(upstream: Upstream) -> list[dict[str, Any]]:
    """The forwarded Messages requests that offer tools (the conversation's own)."""
    return [b for b in upstream.messages_requests() if b.get("tools")]


def test_claude_code_compacts_on_its_own(tmp_path: Path) -> None:
    claude = claude_binary()
    project = tmp_path / "project"
    project.mkdir()
    with anthropic_upstream(claude_code_model(project), sized=True) as upstream:
        session = ClaudeCodeSession.create(claude, tmp_path, upstream.url, WINDOW)
        compacted: list[dict[str, Any]] = []
        while not compacted and session.turns_run < COMPACTED_BY:
            done = session.turn()
            assert done.returncode == 0, done.stderr[-2000:]
            assert said(session.turns_run)[2] in done.stdout
            compacted = [b for b in upstream.messages_requests() if is_compaction_request(b)]
    assert compacted, f"no compaction request in {session.turns_run} turns"
    requests = _main_requests(upstream)
    at = next(i for i, body in enumerate(requests) if is_compaction_request(body))
    # every request before it carried the one before unchanged; the compaction's answer did not
    assert all(extends(a, b) for a, b in itertools.pairwise(requests[:at]))
    assert not extends(requests[at], requests[at + 1])
    summary = texts(requests[at + 1]["messages"][0])
    assert any("continued from a previous conversation" in t for t in summary)


def test_through_the_autopilot_claude_code_never_compacts(tmp_path: Path) -> None:
    journey = run_journey(CLAUDE_CODE, claude_binary(), tmp_path, TURNS)
    assert journey.problems == []
    assert journey.turns == TURNS and journey.compactions == 0 and journey.cuts >= 1
