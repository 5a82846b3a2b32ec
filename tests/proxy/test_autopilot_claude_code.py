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
40000`` the forwarded bodies stay far below it, so the usage the upstream reports does too, and
Claude Code's meter follows from the next reply on.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from tests.support.anthropic_upstream import Upstream, anthropic_upstream
from tests.support.claude_code_session import ClaudeCodeSession
from tests.support.clients import claude_binary
from tests.support.long_session import (
    authored,
    claude_code_model,
    extends,
    input_tokens,
    is_compaction_request,
    said,
    texts,
)
from tests.support.proxy_process import cut_at, proxy_process

WINDOW = {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "100000"}  # compacts at 67,000 tokens
COMPACTED_BY = 8  # turns: the baseline compacts in turn 5
TURNS = 14  # through the proxy: far past where Claude Code compacts on its own
SOFT, HARD = 25_000, 40_000


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
    claude = claude_binary()
    project = tmp_path / "project"
    project.mkdir()
    autopilot = ["--autopilot", "cut", "--autopilot-soft", str(SOFT), "--autopilot-hard", str(HARD)]
    with (
        anthropic_upstream(claude_code_model(project), sized=True) as upstream,
        proxy_process(
            tmp_path / "proxy", "--anthropic-upstream", upstream.url, *autopilot
        ) as proxy,
    ):
        session = ClaudeCodeSession.create(claude, tmp_path, proxy.url, WINDOW)
        for n in range(1, TURNS + 1):
            done = session.turn()
            assert done.returncode == 0, done.stderr[-2000:]
            assert said(n)[2] in done.stdout
    log = proxy.log.read_text()
    sent = [r["request"].get("client_body") or r["request"]["body"] for r in proxy.records()]
    assert not [b for b in sent if isinstance(b, dict) and is_compaction_request(b)], log[-2000:]
    forwarded = _main_requests(upstream)
    assert not [b for b in forwarded if is_compaction_request(b)]
    cuts = [i + 1 for i, (a, b) in enumerate(itertools.pairwise(forwarded)) if not extends(a, b)]
    assert cuts, "the proxy never cut"
    # each cut the forwarded bodies show is one the proxy recorded as its autopilot's
    made = cut_at(proxy.records(), "/v1/messages")
    assert len(made) == len(forwarded)
    assert all(made[i] for i in cuts), (cuts, [i for i, m in enumerate(made) if m])
    # between cuts every forwarded request carries the one before it unchanged (cache hits)
    after_cut = [i for i in range(cuts[0], len(forwarded) - 1) if i + 1 not in cuts]
    assert after_cut and all(extends(forwarded[i], forwarded[i + 1]) for i in after_cut)
    # every word the user and the model wrote is in the last request, byte for byte
    last = list(texts(forwarded[-1]["messages"]))
    written = authored(TURNS)[:-1]  # (the last answer is printed, never sent back)
    missing = [t for t in written if not any(t in s for s in last)]
    assert not missing, missing[:5]
    # what the upstream reported stayed below where Claude Code compacts
    assert max(input_tokens(r["raw"]) for r in upstream.received) < 67_000
