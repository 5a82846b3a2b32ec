"""A long session of a real agent CLI, on its own or through ``ipse proxy --autopilot cut``,
and what it proved: the journey that tests/proxy/test_autopilot_*.py assert on and
bench/autopilot_journey.py repeats.

`run_journey` runs ``turns`` turns of `tests.support.long_session` (Claude Code or Codex)
against a scripted upstream whose usage grows with the body (bytes / 4), straight to it
(``proxy=False``: the baseline) or through a proxy process with the autopilot's thresholds,
and returns a `Journey`: the seconds its turns took, how many compaction requests the CLI
sent, how many cuts the forwarded bodies show, and every way in which it fell short
(``problems``, empty when it passed):

- a turn failed, or did not print the model's answer;
- through the proxy: the CLI sent a compaction request (in what it sent, or in what was
  forwarded); the proxy never cut; the forwarded requests that do not repeat the one before
  them are not exactly the ones the proxy recorded as its autopilot's cuts (a cut is recorded
  at the request that made it, and only there); a request between two cuts does not
  repeat the one before it; a word the user or the model wrote is missing from the last
  forwarded request (byte for byte); the usage reported reached the CLI's compaction point.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ipse import jsonio
from ipse.handoff._autopilot_plan import bytes_per_token, json_size
from tests.support.anthropic_upstream import anthropic_upstream
from tests.support.claude_code_session import ClaudeCodeSession
from tests.support.codex_session import CodexSession, codex_model, is_codex_compaction_request
from tests.support.long_session import (
    authored,
    claude_code_model,
    extends,
    input_tokens,
    is_compaction_request,
    said,
    texts,
)
from tests.support.openai_upstream import openai_upstream
from tests.support.proxy_process import autopilot_at, cut_at, proxy_process


@dataclass(frozen=True)
class Agent:
    """How one CLI's journey runs: its compaction point and the autopilot's thresholds below
    it, the list its requests carry the conversation in, the path they go to."""

    name: str
    limit: int  # tokens: where the CLI compacts (as configured by the journey)
    soft: int
    hard: int
    key: str
    path: str
    is_compaction: Callable[[dict[str, Any]], bool]


CLAUDE_CODE = Agent(
    "claude-code", 67_000, 25_000, 40_000, "messages", "/v1/messages", is_compaction_request
)
CODEX = Agent("codex", 60_000, 30_000, 40_000, "input", "/responses", is_codex_compaction_request)
AGENTS = {agent.name: agent for agent in (CLAUDE_CODE, CODEX)}


@dataclass
class Journey:
    agent: str
    turns: int = 0
    seconds: float = 0.0
    compactions: int = 0
    cuts: int = 0
    problems: list[str] = field(default_factory=list)


def _offers_tools(body: dict[str, Any]) -> bool:
    return bool(body.get("tools")) or any(
        isinstance(i, dict) and i.get("type") == "additional_tools" for i in body.get("input") or []
    )


def run_journey(agent: Agent, cli: str, root: Path, turns: int, *, proxy: bool = True) -> Journey:
    """``turns`` turns in a fresh folder ``root``; see the module docstring."""
    project = root / "project"
    project.mkdir(parents=True)
    journey = Journey(agent.name)
    if agent is CLAUDE_CODE:
        upstream_cm: Any = anthropic_upstream(claude_code_model(project), sized=True)
    else:
        upstream_cm = openai_upstream(codex_model, sized=True)
    with upstream_cm as upstream:
        options = ["--autopilot", "cut", "--autopilot-soft", str(agent.soft)]
        options += ["--autopilot-hard", str(agent.hard)]
        side = "--anthropic-upstream" if agent is CLAUDE_CODE else "--openai-upstream"
        if proxy:
            with proxy_process(root / "proxy", side, upstream.url, *options) as running:
                _turns(agent, cli, root, running.url, turns, journey)
            records, log = running.records(), running.log.read_text()
        else:
            _turns(agent, cli, root, upstream.url, turns, journey)
            records, log = [], ""
        received = list(upstream.received)
    forwarded = [
        r["body"]
        for r in received
        if r["path"].split("?")[0].endswith(agent.path) and _offers_tools(r["body"])
    ]
    journey.compactions = sum(agent.is_compaction(b) for b in forwarded)
    if proxy:
        _check(agent, journey, forwarded, received, records, log)
    return journey


def _turns(agent: Agent, cli: str, root: Path, url: str, turns: int, journey: Journey) -> None:
    session: Any
    if agent is CLAUDE_CODE:
        window = {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "100000"}  # compacts at 67,000
        session = ClaudeCodeSession.create(cli, root, url, window)
    else:
        session = CodexSession.create(cli, root, url, agent.limit)
    started = time.monotonic()
    for n in range(1, turns + 1):
        done = session.turn()
        journey.turns = n
        if done.returncode != 0 or said(n)[2] not in done.stdout:
            journey.problems.append(f"turn {n} failed: {done.stderr[-600:]}")
            break
    journey.seconds = time.monotonic() - started


def _check(
    agent: Agent,
    journey: Journey,
    forwarded: list[dict[str, Any]],
    received: list[dict[str, Any]],
    records: list[dict[str, Any]],
    log: str,
) -> None:
    problems = journey.problems
    sent = [(r.get("client_request") or r["request"]).get("body") for r in records]
    if any(isinstance(b, dict) and agent.is_compaction(b) for b in sent) or journey.compactions:
        problems.append("the CLI sent a compaction request")
    key = agent.key
    cuts = [
        i + 1 for i, (a, b) in enumerate(itertools.pairwise(forwarded)) if not extends(a, b, key)
    ]
    journey.cuts = len(cuts)
    if not cuts:
        problems.append(f"the proxy never cut: {log[-1500:]}")
        return
    made = cut_at(records, agent.path)
    shown = [i for i, m in enumerate(made) if m]
    if len(made) != len(forwarded) or shown != cuts:  # each way: none unrecorded, none made up
        problems.append(f"forwarded bodies cut at {cuts}, the record says {shown}")
    problems += _cut_sizes(autopilot_at(records, agent.path), forwarded, key)
    between = [i for i in range(cuts[0], len(forwarded) - 1) if i + 1 not in cuts]
    if not between or not all(extends(forwarded[i], forwarded[i + 1], key) for i in between):
        problems.append("a request between two cuts does not repeat the one before it")
    last = list(texts(forwarded[-1].get(key)))
    written = authored(journey.turns)[:-1]  # (the last answer is printed, never sent back)
    missing = [t for t in written if not any(t in s for s in last)]
    if missing:
        problems.append(f"authored words missing from the last request: {missing[:3]}")
    reported = max(input_tokens(r["raw"]) for r in received)
    if reported >= agent.limit:
        problems.append(f"the usage reported reached {reported} (compaction at {agent.limit})")


def _cut_sizes(
    recorded: list[dict[str, Any]], forwarded: list[dict[str, Any]], key: str
) -> list[str]:
    """Where a recorded cut's size after it is not the body the proxy forwarded there, counted
    as the autopilot counts (`json_size`: JSON bytes less the cache breakpoints, over
    `bytes_per_token`; each item's rounding and the keys around the history and its front are
    the slack)."""
    ratio = bytes_per_token()
    wrong = []
    for i, (autopilot, body) in enumerate(zip(recorded, forwarded, strict=False)):
        if autopilot.get("action") != "cut":
            continue
        size = json_size(body) / ratio
        front = (key, "system", "tools", "instructions")  # (Responses: its instructions)
        around = {k: v for k, v in body.items() if k not in front}
        slack = 2 * len(body.get(key) or ()) + 16 + len(jsonio.dumps(around)) / ratio
        after = autopilot.get("tokens_after")
        if not isinstance(after, int) or abs(size - after) > slack:
            wrong.append(f"the cut at request {i} is recorded at {after} tokens, sent {size:.0f}")
    return wrong
