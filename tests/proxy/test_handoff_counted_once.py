"""A handoff is an event at its cut, counted once everywhere, with one token figure.

A conversation through the proxy takes two checkpoints; after each, more requests carry the same
cut (each is rewritten the same way, none is another handoff), and one request is sent again
unchanged. Then the proxy's log, its record, the conversation store, ``ipse prefix``, ``ipse
report`` and ``ipse inspect`` each count two handoffs, at the two checkpoint calls, and quote the
same saving for each."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx

from ipse.store import open_conversations
from tests.conftest import CliRun
from tests.proxy.conftest import ProxyFactory
from tests.support.anthropic_upstream import anthropic_upstream

HEADERS = {"x-api-key": "k", "anthropic-version": "2023-06-01", "x-claude-code-session-id": "once"}
SAVED = re.compile(r"handoff at (\S+): .*?saved (\d+) tokens, (\d+) bytes")


def _call(call_id: str, name: str, arguments: dict[str, Any], output: str) -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": [
            {"type": "text", "text": f"calling {name}"},
            {"type": "tool_use", "id": call_id, "name": name, "input": arguments}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call_id, "content": output}]},
    ]  # fmt: skip


def _said(text: str, reply: str) -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": [{"type": "text", "text": text}]},
        {"role": "user", "content": reply},
    ]


def _histories() -> list[list[dict[str, Any]]]:
    """Seven requests: the second checkpoint's cut at the fifth, the first's at the second."""
    h0: list[dict[str, Any]] = [{"role": "user", "content": "fix the parser"}]
    h1 = h0 + _call("toolu_read", "Read", {"path": "a.py"}, "x = 1\n" * 300)
    h2 = h1 + _call("toolu_cp1", "micro_handoff", {"notes": "found it"}, "saved")
    h3 = h2 + _said("the bug is in a.py", "go on")
    h4 = h3 + _call("toolu_bash", "Bash", {"cmd": "make test"}, "FAILED test_parse\n" * 200)
    h5 = h4 + _call("toolu_cp2", "micro_handoff", {"notes": "fixed"}, "saved")
    h6 = h5 + _said("all green", "thanks")
    return [h0, h1, h2, h3, h4, h5, h6]


def test_each_checkpoint_is_one_handoff_everywhere(
    proxy_factory: ProxyFactory, cli: CliRun, tmp_path: Path
) -> None:
    with anthropic_upstream(["ok"]) as upstream, proxy_factory(upstream.url) as proxy:
        with httpx.Client(timeout=30) as client:
            for n, history in enumerate(_histories()):
                body = {"model": "claude-sonnet-5", "max_tokens": 20, "messages": history}
                for _ in range(2 if n == 3 else 1):  # the fourth request sent again unchanged
                    answer = client.post(f"{proxy.url}/v1/messages", json=body, headers=HEADERS)
                    assert answer.status_code == 200
        proxy.settle()
        log, record, store = proxy.log.getvalue(), proxy.record, proxy.store
    anchors = ["toolu_cp1", "toolu_cp2"]

    # the log: one line with a saving per checkpoint, the later requests say their cut only
    logged = SAVED.findall(log)
    assert [anchor for anchor, _, _ in logged] == anchors
    # the fourth request (sent twice), the fifth and the seventh
    assert log.count("(the handoff of an earlier request)") == 4
    figure = {anchor: int(tokens) for anchor, tokens, _ in logged}
    assert all(tokens > 0 for tokens in figure.values())

    # the record: each exchange rewritten from the cut on, the handoff marked at two
    entries = [json.loads(line) for line in record.read_text().splitlines()]
    handoffs = [e["ipse"]["handoff"] for e in entries]
    assert sum(1 for h in handoffs if h and h["applied"]) == 6
    events = [h for h in handoffs if h and h["event"]]
    assert [h["anchor"] for h in events] == anchors
    assert {h["anchor"]: h["saved"]["tokens"] for h in events} == figure
    assert all(h["saved"] is None for h in handoffs if h and not h["event"])

    # the conversation store: eight sent, seven requests, two handoffs
    conversations = open_conversations(store)
    try:
        state = conversations.get("session:once")
    finally:
        conversations.close()
    assert state is not None and (state.requests, state.handoffs) == (7, 2)

    # ipse prefix, ipse report and ipse inspect read the record: two handoffs, the same figures
    prefix = json.loads(cli("prefix", str(record), "--json").stdout)
    rows = [r["handoff"] for r in prefix["requests"] if r["handoff"] is not None]
    assert {r["anchor"]: r["saved_tokens"] for r in rows} == figure and len(rows) == 2
    text = cli("prefix", str(record)).stdout
    assert len(re.findall(r"ipse's handoff at \S+ removed .*? saved \d+ tokens", text)) == 2

    page = tmp_path / "report.html"
    done = cli("report", str(record), "--json", "-o", str(page))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert {h["anchor"]: h["saved_tokens"] for h in report["handoffs"]} == figure
    assert len(report["handoffs"]) == 2
    assert sum(1 for r in report["requests"] if r["marker"] == "handoff") == 2
    assert "Handoffs already in this input: 2." in page.read_text()

    inspected = json.loads(cli("inspect", str(record), "--json").stdout)
    assert {h["anchor"]: h["saved_tokens"] for h in inspected["handoffs"]} == figure
    assert len(inspected["handoffs"]) == 2
