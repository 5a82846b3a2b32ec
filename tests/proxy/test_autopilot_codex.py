"""The real Codex CLI in a long session: on its own it compacts its conversation once the usage
reaches its ``model_auto_compact_token_limit``; through ``ipse proxy --autopilot cut`` it never
does, because the proxy cuts first and every word the user and the model wrote goes on, byte for
byte.

The session (`tests.support.long_session`): each ``codex exec`` / ``codex exec resume`` turn reads
a 30 KB file and runs a command with a 14 KB output, both through Codex's ``exec`` code tool,
against a scripted Responses API upstream that streams as the API documents and reports
``input_tokens`` = the body's bytes / 4. With a custom model provider Codex 0.169.0 compacts
inline: it sends the history with a last user message "You are performing a CONTEXT CHECKPOINT
COMPACTION. ...", and the next request starts from "Another language model started to solve
this problem and produced a summary ..." in place of the history. With
``model_auto_compact_token_limit = 60000`` that comes in turn 4 or 5.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from tests.support.autopilot_journey import CODEX, run_journey
from tests.support.clients import codex_binary
from tests.support.codex_session import CodexSession, codex_model, is_codex_compaction_request
from tests.support.long_session import (
    extends,
    said,
    texts,
)
from tests.support.openai_upstream import Upstream, openai_upstream

LIMIT = CODEX.limit  # model_auto_compact_token_limit
COMPACTED_BY = 8  # turns
TURNS = 14


def _requests(upstream: Upstream) -> list[dict[str, Any]]:
    return upstream.bodies("/responses")


def test_codex_compacts_on_its_own(tmp_path: Path) -> None:
    codex = codex_binary()
    with openai_upstream(codex_model, sized=True) as upstream:
        session = CodexSession.create(codex, tmp_path, upstream.url, LIMIT)
        compacted: list[dict[str, Any]] = []
        while not compacted and session.turns_run < COMPACTED_BY:
            done = session.turn()
            assert done.returncode == 0, done.stderr[-2000:]
            assert said(session.turns_run)[2] in done.stdout
            compacted = [b for b in _requests(upstream) if is_codex_compaction_request(b)]
    assert compacted, f"no compaction request in {session.turns_run} turns"
    requests = _requests(upstream)
    at = next(i for i, body in enumerate(requests) if is_codex_compaction_request(body))
    pairs = itertools.pairwise(requests[:at])
    assert all(extends(a, b, "input") for a, b in pairs)
    assert not extends(requests[at], requests[at + 1], "input")
    assert any("produced a summary" in t for t in texts(requests[at + 1]["input"]))


def test_through_the_autopilot_codex_never_compacts(tmp_path: Path) -> None:
    journey = run_journey(CODEX, codex_binary(), tmp_path, TURNS)
    assert journey.problems == []
    assert journey.turns == TURNS and journey.compactions == 0 and journey.cuts >= 1
