"""Property: a session written without response ids, where each call's content blocks are
records of their own whose usage repeats the call's input side with the output count rising
as the response streamed (and whose tool results may come between its records), is read as
one request per call, each with the call's usage, and a replay finds no break where every
call read what the one before it cached."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipse.prefix import analyze, read_requests
from ipse.prefix._rules import prices, rules

from .sessions import OPUS, Session, text, tool_use, usage

# one call: its blocks (text, thinking or a tool use), the output added by each record, whether
# each tool use's result is written as soon as its block is (else after the call's last
# record), and whether a person's words, not tool results, come before the next call
BLOCK = st.sampled_from(["text", "thinking", "tool"])
CALL = st.tuples(
    st.lists(st.tuples(BLOCK, st.integers(min_value=0, max_value=400)), min_size=1, max_size=5),
    st.booleans(),
    st.booleans(),
)


def _block(kind: str, name: str) -> dict[str, Any]:
    if kind == "tool":
        return tool_use(name)
    if kind == "thinking":
        return {"type": "thinking", "thinking": f"plan {name}", "signature": "sig"}
    return text(f"about {name}")


def _streamed(
    calls: list[tuple[list[tuple[str, int]], bool, bool]],
) -> tuple[Session, list[dict[str, Any]]]:
    """The session, and each call's usage as billed (its input side, its final output)."""
    s = Session()
    s.user("fix the failing test " * 40)
    cached, billed = 0, []
    for n, (blocks, interleaved, human_next) in enumerate(calls):
        write = 20_000 if n == 0 else 900 + 37 * n
        output, pending = 0, []
        for j, (kind, added) in enumerate(blocks):
            output += added
            used = {**usage(cached, write), "output_tokens": output}
            s.assistant(_block(kind, f"c{n}b{j}"), used, after=1)
            if kind == "tool":
                pending.append(f"c{n}b{j}")
                if interleaved:
                    s.result(pending.pop(), "passed " * 30, after=1)
        for call in pending:
            s.result(call, "passed " * 30, after=1)
        billed.append({**usage(cached, write), "output_tokens": output})
        cached += write
        if human_next or not any(kind == "tool" for kind, _ in blocks):
            s.user(f"now step {n + 1} " * 5)
    return s, billed


def _cost(used: dict[str, Any]) -> float:
    price = prices().price(OPUS, "anthropic")[0]
    table = rules("anthropic")
    weighted = (
        used["input_tokens"]
        + used["cache_read_input_tokens"] * table.read_multiplier(OPUS)
        + used["cache_creation_input_tokens"] * table.write_multiplier("5m")
    )
    return price * weighted / 1e6


@settings(max_examples=80, deadline=None)
@given(st.lists(CALL, min_size=1, max_size=7))
def test_a_streamed_call_is_one_request_whatever_its_records(
    calls: list[tuple[list[tuple[str, int]], bool, bool]],
) -> None:
    s, billed = _streamed(calls)
    records = sum(len(blocks) for blocks, _, _ in calls)
    with tempfile.TemporaryDirectory() as folder:
        log = read_requests(s.write(Path(folder) / "streamed.jsonl"))
    assert len(log.requests) == len(calls)
    assert log.merged == records - len(calls)
    for request, used in zip(log.requests, billed, strict=True):
        assert request.usage is not None
        inputs = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
        assert {k: request.usage[k] for k in inputs} == {k: used[k] for k in inputs}
    report = analyze(log.requests, warnings=log.warnings, merged=log.merged)
    assert [row.cause for row in report.rows] == [None] * len(calls)
    summary = report.summary()
    assert summary["cost_usd"] == pytest.approx(sum(_cost(u) for u in billed), abs=1e-6)
    assert summary["cost_lost_usd"] == 0


def test_a_call_after_its_tool_results_with_the_same_input_is_still_one_call(
    tmp_path: Path,
) -> None:
    """The shape that was read as two calls: a response's tool use, its result, then the
    response's last record (the output count risen), then the next call."""
    s = Session()
    s.user("fix the failing test " * 40)
    s.assistant(text("I will look"), {**usage(0, 20_000), "output_tokens": 10})
    s.assistant(tool_use("t1"), {**usage(0, 20_000), "output_tokens": 10}, after=1)
    s.result("t1", "passed " * 30, after=1)
    s.assistant(tool_use("t2"), {**usage(0, 20_000), "output_tokens": 299}, after=1)
    s.result("t2", "passed " * 30, after=1)
    s.assistant(text("done"), {**usage(20_000, 900), "output_tokens": 40})
    log = read_requests(s.write(tmp_path / "streamed.jsonl"))
    assert len(log.requests) == 2 and log.merged == 2
    report = analyze(log.requests, merged=log.merged)
    assert [row.cause for row in report.rows] == [None, None]


def test_a_new_call_is_not_merged_for_its_output(tmp_path: Path) -> None:
    """Two calls one after another (a person's words between them) stay two, however their
    output counts compare."""
    s = Session()
    s.user("fix the failing test " * 40)
    s.assistant(text("a"), {**usage(0, 20_000), "output_tokens": 10})
    s.user("go on " * 5)
    s.assistant(text("b"), {**usage(0, 20_000), "output_tokens": 50})
    assert len(read_requests(s.write(tmp_path / "two.jsonl")).requests) == 2
