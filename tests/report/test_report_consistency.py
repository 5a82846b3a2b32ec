"""The report never contradicts itself: what fills the context adds up to the context size
(a band for what the input does not record), a handoff never saves more than the requests
after it cost, handoffs the proxy made are shown whatever their size, and the checkpoint
call a handoff keeps is never offered as something to remove."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipse.report import collect, render
from ipse.report._data import Point, _checkpoints
from tests.conftest import SHARED, CliRun
from tests.proxy.conftest import ProxyFactory, proxy_factory  # noqa: F401 (the fixture)
from tests.support.anthropic_upstream import anthropic_upstream

# --------------------------------------------------------------- what fills the context


@SHARED
@pytest.mark.parametrize("name", ["tool_heavy.jsonl", "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"])
def test_composition_adds_up_to_the_recorded_context(shared_data: Path, name: str) -> None:
    """A Claude Code session does not record the system prompt and tools it sent: the band
    for them is what the recorded usage holds beyond what the session shows."""
    data = collect(str(shared_data / "claude-code" / name))
    recorded = [p for p in data.points if p.cache_source == "recorded"]
    assert recorded
    for point in recorded:
        assert sum(point.composition.values()) == point.context_tokens
        assert point.composition["not_recorded"] > point.context_tokens // 2
        assert point.composition["system"] == 0  # the placeholder is not the prompt
    assert "not recorded" in render(data)


# ------------------------------------------------------------------- savings and spend


def _point(index: int, draw: Any) -> Point:
    context = draw(st.integers(0, 300_000))
    parts = draw(st.lists(st.integers(0, 50_000), min_size=3, max_size=3))
    price = draw(st.sampled_from([0.25e-6, 3e-6, 15e-6]))
    read = draw(st.sampled_from([0.025, 0.1, 0.5]))
    return Point(
        index=index,
        time=None,
        model=None,
        context_tokens=context,
        composition=dict(zip(("tool_calls", "tool_results", "thinking"), parts, strict=True)),
        tool_tokens={draw(st.sampled_from(["Read", "mcp__ipse__micro_handoff"])): parts[0]},
        cache_read=context,
        cache_write=0,
        uncached=0,
        cache_source="recorded",
        cause=None,
        cause_detail=None,
        lost_tokens=0,
        cost_lost_usd=0.0,
        marker=draw(st.sampled_from([None, None, None, "compaction", "reset", "handoff"])),
        human_turn=draw(st.booleans()),
        cost_usd=context * read * price,  # the least a request can cost: all of it cached
        price_usd=price,
        read_multiplier=read,
    )


@st.composite
def _points(draw: st.DrawFn) -> list[Point]:
    return [_point(i, draw) for i in range(draw(st.integers(1, 30)))]


@settings(max_examples=300, deadline=None)
@given(_points(), st.sampled_from(["anthropic", "openai"]))
def test_a_saving_never_exceeds_what_the_later_requests_cost(
    points: list[Point], provider: str
) -> None:
    for checkpoint in _checkpoints(points, provider):
        position = next(i for i, p in enumerate(points) if p.index == checkpoint.index)
        later = sum(p.cost_usd for p in points[position + 1 :])
        assert checkpoint.saved_usd <= later + 1e-12
        assert checkpoint.saved_usd <= sum(p.cost_usd for p in points) + 1e-12


def _reset_log(path: Path) -> Path:
    """Tool results fill the context, the human speaks (a checkpoint), the context is then
    reset to a fresh task, and many small requests follow: the removed results are gone from
    them anyway, so a handoff at the checkpoint saves nothing there."""
    big = "lorem ipsum dolor sit amet " * 800
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test."}]
    bodies = [list(messages)]
    for n in range(5):
        call = {"type": "tool_use", "id": f"t{n}", "name": "Read", "input": {"n": n}}
        messages += [
            {"role": "assistant", "content": [call]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": big}],
            },
        ]
        bodies.append(list(messages))
    messages += [
        {"role": "assistant", "content": "Read them all."},
        {"role": "user", "content": "Good; now the other test."},
    ]
    bodies.append(list(messages))
    fresh: list[dict[str, Any]] = [{"role": "user", "content": "A new task."}]
    for n in range(300):
        bodies.append(list(fresh))
        fresh += [
            {"role": "assistant", "content": f"step {n}"},
            {"role": "user", "content": "go on"},
        ]
    lines = []
    seen = 0
    for n, messages in enumerate(bodies):
        body = {"model": "claude-sonnet-4-5", "max_tokens": 50, "messages": messages}
        size = len(json.dumps(messages)) // 4
        read = seen if size >= seen else 0
        usage = {
            "input_tokens": 3,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": max(size - read - 3, 0),
        }
        seen = size
        lines.append(
            json.dumps(
                {
                    "time": f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}Z",
                    "request": {"url": "https://api.anthropic.com/v1/messages", "body": body},
                    "response": {"status": 200, "body": {"usage": usage}},
                }
            )
        )
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_saving_stops_at_a_reset_and_never_exceeds_the_spend(tmp_path: Path) -> None:
    data = collect(str(_reset_log(tmp_path / "log.jsonl")))
    assert [p.index for p in data.points if p.marker == "reset"] == [7]
    spend = float(data.summary["cost_usd"])
    assert data.checkpoints
    for checkpoint in data.checkpoints:
        assert checkpoint.saved_usd <= spend
    at_six = next(c for c in data.checkpoints if c.index == 6)
    assert at_six.later_requests == 1  # (the reset ends what it could save)


@SHARED
def test_no_saving_exceeds_the_spend_on_any_shared_session(shared_data: Path) -> None:
    inputs = [
        *sorted((shared_data / "claude-code").glob("*.jsonl")),
        *sorted((shared_data / "codex").glob("*.jsonl")),
        shared_data / "anthropic-http" / "captured-2",
    ]
    for path in inputs:
        data = collect(str(path))
        spend = float(data.summary["cost_usd"])
        for checkpoint in data.checkpoints:
            assert checkpoint.saved_usd <= spend + 1e-9, (path.name, checkpoint, spend)


# ------------------------------------------------------------- handoffs the proxy made

BODY: dict[str, Any] = {"model": "claude-sonnet-4-5", "max_tokens": 20}


def test_handoffs_the_proxy_made_are_shown_and_the_kept_call_is_not_offered(
    proxy_factory: ProxyFactory,  # noqa: F811 (the fixture)
    cli: CliRun,
    tmp_path: Path,
) -> None:
    replies: list[Any] = [
        {"text": "reading", "tool_use": {"id": "toolu_1", "name": "Read", "input": {"p": "a"}}},
        {
            "text": "saving",
            "tool_use": {
                "id": "toolu_cp",
                "name": "mcp__ipse__micro_handoff",
                "input": {"notes": "the file says a"},
            },
        },
        "noted",
        "done",
    ]
    with anthropic_upstream(replies) as upstream, proxy_factory(upstream.url) as proxy:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "read the file"}]
        with httpx.Client(base_url=proxy.url, timeout=30) as client:
            for reply in replies:
                answer = client.post("/v1/messages", json={**BODY, "messages": messages}).json()
                messages.append({"role": "assistant", "content": answer["content"]})
                calls = [b for b in answer["content"] if b["type"] == "tool_use"]
                if calls:
                    result = {"type": "tool_result", "tool_use_id": calls[0]["id"], "content": "x"}
                    messages.append({"role": "user", "content": [result]})
                else:
                    messages.append({"role": "user", "content": f"and now {reply}"})
        proxy.settle()
        record = proxy.record
    applied = [
        i
        for i, line in enumerate(record.read_text().splitlines())
        if json.loads(line)["ipse"]["handoff"] and json.loads(line)["ipse"]["handoff"]["applied"]
    ]
    assert applied  # the proxy cut at the checkpoint
    page = tmp_path / "page.html"
    done = cli("report", str(record), "-o", str(page), "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    marked = [r["index"] for r in data["requests"] if r["marker"] == "handoff"]
    assert marked == applied[:1] or set(applied) <= set(marked)
    assert "Handoffs already in this input: 0" not in page.read_text()
    # after the handoff only the checkpoint call and its result are tool traffic: nothing to
    # offer (removing the checkpoint call is not a handoff)
    assert all(c["index"] < applied[0] for c in data["checkpoints"])
