"""The histories the autopilot plans over: requests grouped by the history they send, and a
compaction the autopilot prevents joined into the history as it would have gone on."""

from __future__ import annotations

from pathlib import Path

from ipse.handoff._autopilot import AutopilotPolicy
from ipse.prefix import read_requests
from ipse.replay import ReplayOptions, document, replay_log
from ipse.replay._lines import group
from tests.prefix.sessions import Session, text, tool_use, usage

from .build import bodies, log_of

SUMMARY = "Summary: the tests were fixed, the docs are next"


def test_requests_that_resend_the_newest_prompt_as_plain_text_are_one_history() -> None:
    # the client marks its newest prompt (blocks, a breakpoint) and sends it as a string after
    sent = bodies(3, 500)
    grouped = group(log_of(sent).requests)
    assert len(grouped.stretches) == 1
    stretch = grouped.stretches[0]
    assert [m.count for m in stretch.members] == [len(b["messages"]) for b in sent]
    assert stretch.items[-1] is sent[-1]["messages"][-1]


def test_a_request_of_another_history_opens_a_stretch_of_its_own() -> None:
    sent = bodies(2, 500)
    side = {**sent[0], "messages": [{"role": "user", "content": "a title for this chat"}]}
    grouped = group(log_of([*sent[:2], side, *sent[2:]]).requests)
    assert [len(s.members) for s in grouped.stretches] == [len(sent), 1]


def _compacted(tmp_path: Path) -> Path:
    """Four turns of large tool results, the agent CLI's compaction, two turns after it; each
    call reads what the one before it sent and writes what it adds (20,000 tokens of a tool
    result, a prompt, an answer)."""
    s = Session()
    cached = 20_000
    for n in range(6):
        if n == 4:
            s.compact(SUMMARY)
            cached = 22_000
        s.user(f"step {n}: fix module {n}")
        s.assistant(tool_use(f"c{n}", f"cat module{n}.py"), usage(cached, 300), message_id=f"a{n}")
        cached += 300
        s.result(f"c{n}", f"line of module {n} " * 4_000)
        s.assistant(text(f"module {n} fixed"), usage(cached, 20_250), message_id=f"b{n}")
        cached += 20_250
    return s.write(tmp_path / "compacted.jsonl")


def test_a_prevented_compaction_sends_the_history_as_it_went_on(tmp_path: Path) -> None:
    path = _compacted(tmp_path)
    log = read_requests(path)
    first_after = next(r.index for r in log.requests if r.compaction)
    cutting = ReplayOptions(
        policy=AutopilotPolicy(soft=60_000, hard=60_000), compaction=110_000, continuity=False
    )
    done = replay_log(log, cutting, session=path)
    found = document(done)
    assert found["requests"]["compactions_prevented"] == [first_after]
    assert found["with_policy"]["above_limit"] == 0
    sent = {r.index: r for r in done.sent}
    # the first request after the compaction: the history before it, not the summary
    items = sent[first_after].body["messages"]
    words = str([dict(item) for item in items])  # (a session's messages are read back lazily)
    assert SUMMARY not in words and "module 3 fixed" in words
    size = sent[first_after].tokens
    assert size is not None and size > (sent[first_after - 1].tokens or 0)
    # ... and the requests after it go on from there
    later = sent[first_after + 1].body["messages"]
    assert later[: len(items)] == items


def test_without_cuts_the_compaction_happens_as_recorded(tmp_path: Path) -> None:
    path = _compacted(tmp_path)
    log = read_requests(path)
    nudging = ReplayOptions(
        policy=AutopilotPolicy(mode="nudge", soft=60_000), compaction=110_000, continuity=False
    )
    done = replay_log(log, nudging, session=path)
    found = document(done)
    assert found["requests"]["compactions_prevented"] == []
    first_after = next(r for r in log.requests if r.compaction)
    assert [r.index for r in done.sent] == [r.index for r in log.requests]
    assert done.sent[first_after.index] is first_after  # (nothing was nudged after it yet)
    assert found["nudges"] >= 1 and found["cuts"] == []
    assert found["why"][0]["reason"] == "no cuts"
