"""The cost analysis against the bill: each TTL and write price as the record gives it, every
billed call counted once and in time order, losses from 1,000 tokens, compaction apart."""

from __future__ import annotations

from pathlib import Path

import pytest

from ipse.prefix import PrefixReport, analyze, read_requests
from ipse.prefix._rules import prices

from .sessions import Session, text, tool_use, usage

PRICE = prices().price("claude-opus-4-6", "anthropic")[0]  # base input, USD per million


def _report(path: Path) -> PrefixReport:
    log = read_requests(path)
    return analyze(log.requests, warnings=log.warnings)


def _hour_session(tmp_path: Path, gap: float, second: dict[str, int]) -> Path:
    """Two calls on a 1-hour chain (the record's writes are 1-hour writes), ``gap`` seconds
    apart, the second with the usage given."""
    s = Session()
    s.user("start the work " * 40)
    s.assistant(tool_use("t1"), usage(0, 30_000, hour=True), message_id="m1")
    s.result("t1")
    s.assistant(text("done"), usage(30_000, 400, hour=True), message_id="m2")
    s.user("and now the next part " * 20, after=gap)
    s.assistant(text("ok"), second, message_id="m3")
    return s.write(tmp_path / "hour.jsonl")


def test_a_one_hour_chain_is_alive_after_31_minutes(tmp_path: Path) -> None:
    report = _report(_hour_session(tmp_path, 31 * 60, usage(30_400, 300, hour=True)))
    last = report.rows[-1]
    assert last.cause is None
    assert last.predicted_cause is None  # no expiry predicted that the record contradicts
    assert last.agrees is True
    assert last.predicted.cache_read > 0


def test_one_hour_writes_cost_twice_the_base_input(tmp_path: Path) -> None:
    report = _report(_hour_session(tmp_path, 60, usage(30_400, 300, hour=True)))
    first = report.rows[0]
    assert first.cost_usd == pytest.approx(PRICE * (30_000 * 2.0 + 3) / 1e6)
    five = report.rows[-1]
    assert five.cost_usd == pytest.approx(PRICE * (30_400 * 0.1 + 300 * 2.0 + 3) / 1e6)


def test_a_rebuild_on_a_one_hour_chain_is_priced_at_the_one_hour_write(tmp_path: Path) -> None:
    report = _report(_hour_session(tmp_path, 20 * 60, usage(0, 30_700, hour=True)))
    last = report.rows[-1]
    assert last.cause is not None
    assert last.cause.kind != "ttl_expired"  # 20 minutes is inside the hour
    assert last.lost_tokens == 30_400
    assert last.cost_lost_usd == pytest.approx(PRICE * 30_400 * (2.0 - 0.1) / 1e6, rel=1e-3)


def test_a_five_minute_chain_still_expires(tmp_path: Path) -> None:
    s = Session()
    s.user("start the work " * 40)
    s.assistant(text("a"), usage(0, 30_000), message_id="m1")
    s.user("more " * 20, after=31 * 60)
    s.assistant(text("b"), usage(0, 30_100), message_id="m2")
    report = _report(s.write(tmp_path / "five.jsonl"))
    last = report.rows[-1]
    assert last.cause is not None and last.cause.kind == "ttl_expired"
    assert last.cost_lost_usd == pytest.approx(PRICE * 30_000 * (1.25 - 0.1) / 1e6, rel=1e-2)


def _interrupted(tmp_path: Path) -> Path:
    """A request interrupted after its response began (billed: it rebuilt the cache after a
    469 s gap), and the user's second try sent from the turn before it."""
    s = Session()
    s.user("start the work " * 40)
    first = s.assistant(text("a"), usage(0, 30_000), message_id="m1")
    s.user("next part " * 10, after=469)
    s.assistant(text("partial answ"), usage(0, 30_200), message_id="m2")  # interrupted
    s.user("next part, said better " * 10, after=10, parent=first)
    s.assistant(text("b"), usage(30_000, 300), message_id="m3")
    return s.write(tmp_path / "interrupted.jsonl")


def test_a_billed_call_off_the_live_path_is_counted_in_time_order(tmp_path: Path) -> None:
    report = _report(_interrupted(tmp_path))
    assert len(report.rows) == 3
    rebuilt = report.rows[1]
    assert rebuilt.off_path and rebuilt.actual is not None
    assert rebuilt.actual.cache_write == 30_200
    assert rebuilt.cause is not None and rebuilt.cause.kind == "ttl_expired"
    assert rebuilt.lost_tokens == 30_000
    assert rebuilt.cost_lost_usd == pytest.approx(PRICE * 30_000 * (1.25 - 0.1) / 1e6, rel=1e-3)
    summary = report.summary()
    assert summary["off_path"] == 1
    recorded = PRICE * ((30_000 + 30_200 + 300) * 1.25 + 30_000 * 0.1 + 3 * 9 - 9 * 2) / 1e6
    assert summary["cost_usd"] == pytest.approx(recorded, rel=1e-3)
    # the call after it read what the interrupted one wrote: no loss there
    assert report.rows[2].cause is None and not report.rows[2].off_path


def _split_records(tmp_path: Path, calls: int = 3) -> Path:
    """A session written without response ids: each call's thinking, text and tool use as
    three records with the call's usage repeated on each."""
    s = Session()
    s.user("fix the failing test " * 40)
    cached = 0
    for n in range(calls):
        used = usage(cached, 20_000 if n == 0 else 900)
        s.assistant({"type": "thinking", "thinking": f"plan {n}", "signature": "sig"}, used)
        s.assistant(text(f"I will run step {n}"), used, after=1)
        s.assistant(tool_use(f"t{n}", f"step {n}"), used, after=1)
        s.result(f"t{n}", "passed " * 30)
        cached += 20_000 if n == 0 else 900
    return s.write(tmp_path / "split.jsonl")


def test_records_of_one_call_without_ids_are_one_call(tmp_path: Path) -> None:
    log = read_requests(_split_records(tmp_path))
    assert len(log.requests) == 3
    assert log.merged == 6
    assert any("merged" in w for w in log.warnings)
    report = analyze(log.requests, warnings=log.warnings, merged=log.merged)
    assert [r.cause for r in report.rows] == [None, None, None]
    assert report.summary()["merged_records"] == 6


def _small_rebuild(tmp_path: Path) -> Path:
    """A 1,497-token rebuild on a 60,000-token prompt (under 5% of the input)."""
    s = Session()
    s.user("start the work " * 40)
    s.assistant(text("a"), usage(0, 60_000), message_id="m1")
    s.user("more " * 10)
    s.assistant(text("b"), usage(60_000 - 1_497, 1_497 + 200), message_id="m2")
    return s.write(tmp_path / "small.jsonl")


def test_a_loss_from_1000_tokens_is_reported(tmp_path: Path) -> None:
    path = _small_rebuild(tmp_path)
    row = _report(path).rows[1]
    assert row.cause is not None and row.lost_tokens == 1_497
    log = read_requests(path)
    quiet = analyze(log.requests, min_tokens=2_000).rows[1]
    assert quiet.cause is None and quiet.lost_tokens == 0


def _compacted(tmp_path: Path) -> Path:
    s = Session()
    s.user("start the work " * 40)
    s.assistant(text("a"), usage(0, 40_000), message_id="m1")
    s.user("more " * 10)
    s.assistant(text("b"), usage(40_000, 500), message_id="m2")
    s.compact()
    s.user("go on " * 10)
    s.assistant(text("c"), usage(3_000, 12_000), message_id="m3")  # a front not served
    s.user("and then " * 10)
    s.assistant(text("d"), usage(15_000, 400), message_id="m4")  # (a front of 12,000)
    return s.write(tmp_path / "compacted.jsonl")


def test_the_call_after_a_compaction_is_reported_apart(tmp_path: Path) -> None:
    report = _report(_compacted(tmp_path))
    after = report.rows[2]
    assert after.compaction
    assert after.cause is not None and after.cause.kind == "compaction"
    summary = report.summary()
    assert summary["compaction"]["requests"] == 1
    assert summary["compaction"]["tokens_lost"] == after.lost_tokens > 0
    assert summary["cost_lost_usd"] == 0  # not in the headline loss
    assert summary["by_cause"] == {}


def test_sub_agents_are_analysed_with_the_main_thread(tmp_path: Path) -> None:
    main = Session("s-main")
    main.user("look into the failing build " * 30)
    main.assistant(tool_use("task1"), usage(0, 25_000), message_id="m1")
    agent = Session("s-main")
    agent.time = main.time
    agent.user("search the logs for the first error " * 20, parent=None)
    agent.records[-1]["isSidechain"] = True
    agent.assistant(tool_use("g1", "grep"), usage(0, 9_000), message_id="a1", model="sonnet-x")
    agent.result("g1", "error: missing file " * 20)
    agent.assistant(text("found it"), usage(0, 9_400), message_id="a2", model="sonnet-x")
    for record in agent.records:
        record["isSidechain"] = True
        record["agentId"] = "a77"
    main.time = agent.time
    main.result("task1", "the first error is a missing file")
    main.assistant(text("fixed"), usage(25_000, 300), message_id="m2")
    path = main.write(tmp_path / "s-main.jsonl")
    folder = tmp_path / "s-main" / "subagents"
    folder.mkdir(parents=True)
    agent.write(folder / "agent-a77.jsonl")
    (folder / "agent-a77.meta.json").write_text('{"agentType": "Explore"}', encoding="utf-8")
    report = _report(path)
    assert [r.agent for r in report.rows] == [
        None,
        "agent-a77 (Explore)",
        "agent-a77 (Explore)",
        None,
    ]
    assert [r.index for r in report.rows] == [0, 1, 2, 3]  # numbered in time order
    lost = report.rows[2]  # the agent's second call read nothing of its first
    assert lost.cause is not None and lost.lost_tokens == 9_000
    assert report.rows[1].cold_start and report.rows[1].cause is None
    summary = report.summary()
    agents = summary["by_agent"]
    assert agents["main"]["requests"] == 2 and agents["main"]["tokens_lost"] == 0
    assert agents["agent-a77 (Explore)"]["requests"] == 2
    assert agents["agent-a77 (Explore)"]["tokens_lost"] == 9_000
    assert summary["cold_starts"]["requests"] == 2


def test_the_apis_own_diagnosis_is_the_cause(tmp_path: Path) -> None:
    s = Session()
    s.user("start the work " * 40)
    s.assistant(text("a"), usage(0, 30_000), message_id="m1")
    s.user("more " * 10)
    reason = {"type": "tools_changed", "cache_missed_input_tokens": 26_000}
    diagnosis = {"cache_miss_reason": reason}
    s.assistant(text("b"), usage(4_000, 26_300), message_id="m2", diagnostics=diagnosis)
    row = _report(s.write(tmp_path / "diagnosed.jsonl")).rows[1]
    assert row.cause is not None and row.cause.kind == "tools_changed"
    assert row.cause.location == "api" and "diagnosis" in row.cause.detail
    assert row.lost_tokens == 26_000


def test_a_harness_update_between_calls_is_named(tmp_path: Path) -> None:
    s = Session(version="2.1.38")
    s.user("start the work " * 40)
    s.assistant(text("a"), usage(0, 30_000), message_id="m1")
    s.user("more " * 10, after=60)
    s.assistant(text("b"), usage(0, 30_300), message_id="m2", version="2.1.39")
    report = _report(s.write(tmp_path / "updated.jsonl"))
    row = report.rows[1]
    assert row.cause is not None and row.cause.kind == "cli_version_changed"
    assert "2.1.38" in row.cause.detail and "2.1.39" in row.cause.detail
    assert report.summary()["cold_starts"] == {
        "requests": 1,
        "tokens_written": 30_000,
        "cost_usd": pytest.approx(PRICE * (30_000 * 1.25 + 3) / 1e6),
    }


def test_advice_names_the_fix_and_the_keep_alive_break_even(tmp_path: Path) -> None:
    s = Session()
    s.user("start the work " * 40)
    s.assistant(text("a"), usage(0, 30_000), message_id="m1")
    s.user("more " * 10, after=20 * 60)
    s.assistant(text("b"), usage(0, 30_300), message_id="m2")
    advice = _report(s.write(tmp_path / "idle.jsonl")).summary()["advice"]
    assert "ttl_expired" in advice["fixes"]
    ttl = advice["ttl"]
    assert ttl["idle_breaks"] == 1
    keep = ttl["keep_alive"]
    assert keep["pings"] == 4  # every 270 s across a 1,205 s gap
    assert keep["cost_usd"] == pytest.approx(4 * 30_000 * 0.1 * PRICE / 1e6, rel=1e-2)
    assert keep["pays"] is True
    assert keep["break_even_gap_s"]["5m"] == round((1.25 - 0.1) / 0.1 * 300 * 0.9)
    hour = ttl["one_hour_ttl"]
    assert hour["extra_write_usd"] == pytest.approx((30_000 + 30_300) * 0.75 * PRICE / 1e6)
    assert hour["saved_usd"] == pytest.approx(30_000 * 1.15 * PRICE / 1e6, rel=1e-2)
    assert hour["pays"] is False


def test_inline_sidechains_are_agents_of_their_own(tmp_path: Path) -> None:
    """Older sessions write a sub-agent's records inline (``isSidechain``): its calls are its
    own chain, not a break in the main thread's."""
    s = Session(version="1.0.98")
    s.user("review the change " * 40)
    s.assistant(tool_use("task"), usage(0, 18_000), message_id="m1")
    main_tip = s.records[-1]["uuid"]
    s.user("read the diff and report " * 20, parent=None)
    s.records[-1]["isSidechain"] = True
    s.assistant(tool_use("r1", "git diff"), usage(0, 12_000), message_id="a1")
    s.records[-1]["isSidechain"] = True
    s.result("r1", "diff " * 50)
    s.records[-1]["isSidechain"] = True
    s.assistant(text("looks fine"), usage(12_000, 600), message_id="a2")
    s.records[-1]["isSidechain"] = True
    s.result("task", "the agent says it looks fine")
    s.records[-1]["parentUuid"] = main_tip
    s.assistant(text("merged"), usage(18_000, 300), message_id="m2")
    report = _report(s.write(tmp_path / "inline.jsonl"))
    assert [r.agent for r in report.rows] == [None, "sidechain-1", "sidechain-1", None]
    assert all(r.cause is None for r in report.rows)  # reading 18,000 after 12,600 is no loss
    assert report.summary()["cold_starts"]["requests"] == 2


def test_each_off_path_request_sends_its_whole_parent_chain(tmp_path: Path) -> None:
    """Calls off the live path share the live history where they branch from the end of a
    live message, and are rebuilt whole where they branch from inside one: either way each
    sends exactly the messages of its parent chain."""
    from ipse.transcript._formats.claude_code import read_session
    from ipse.transcript._formats.claude_code_requests import _messages, billed_thread

    s = Session()
    s.user("start the work " * 40)
    s.assistant(text("a"), usage(0, 20_000), message_id="m1")
    tip = s.records[-1]["uuid"]
    prompt = s.user("next " * 10)
    s.assistant(text("retried"), usage(20_000, 90), message_id="x1")  # retried: same prompt
    answer = s.assistant(text("b"), usage(20_000, 100), message_id="m2", parent=prompt)
    s.user("an edit " * 10, parent=tip)  # an edited prompt, then its call, both left
    s.assistant(text("edited"), usage(20_000, 80), message_id="x2")
    s.user("go on " * 10, parent=answer)
    thinking = {"type": "thinking", "thinking": "hmm", "signature": "sig"}
    first = s.assistant(thinking, usage(20_100, 120), message_id="m3")
    s.assistant(text("c"), usage(20_100, 120), message_id="x3", parent=first)  # inside m3
    s.assistant(text("d"), usage(20_100, 120), message_id="m3", parent=first)
    path = s.write(tmp_path / "branches.jsonl")

    session = read_session(path)
    _, off = billed_thread(session)
    assert [c.meta["message_id"] for c in off] == ["x1", "x2", "x3"]
    assert [c.segment is None for c in off] == [False, False, True]
    place = {r.uuid: r for r in session.records}
    report = _report(path)
    for call in off:
        record = place[call.meta["uuids"][0]]
        chain = []
        at = record.parent
        while at in place:
            chain.append(place[at])
            at = place[at].parent
        expected = [m.body for m in _messages(chain[::-1]) or []]
        row = next(
            r for r in read_requests(path).requests if r.source.endswith(f"line {record.line}")
        )
        assert list(row.body["messages"]) == expected
    assert sum(r.off_path for r in report.rows) == 3


def test_the_ideal_cost_leaves_the_compaction_call_as_it_was(tmp_path: Path) -> None:
    summary = _report(_compacted(tmp_path)).summary()
    assert summary["compaction"]["cost_lost_usd"] > 0
    assert summary["cost_ideal_usd"] == summary["cost_usd"]  # nothing lost in the headline


def test_records_of_one_request_id_without_a_response_id_are_one_call(tmp_path: Path) -> None:
    s = Session()
    s.user("fix the failing test " * 40)
    for n, used in enumerate([usage(0, 20_000), usage(20_000, 900)]):
        for block in (text(f"step {n}"), tool_use(f"t{n}")):
            s.assistant(block, used, after=1)
            s.records[-1]["requestId"] = f"req_{n}"
        s.result(f"t{n}", "passed " * 30)
    log = read_requests(s.write(tmp_path / "request-ids.jsonl"))
    assert len(log.requests) == 2 and log.merged == 2
    assert [r.cause for r in analyze(log.requests).rows] == [None, None]
