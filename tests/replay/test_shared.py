"""The replay on the real sessions: off, it bills what ``ipse prefix`` bills; with the autopilot,
every request stays below the agent CLI's compaction point, sub-agents are replayed with the
main thread, a compaction the autopilot prevents is not made, each cut is probed, and a session
that misses half its conversation's cost says why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ipse.agents._install import compaction_rule
from ipse.handoff._autopilot import AutopilotPolicy
from ipse.prefix import analyze, read_requests
from ipse.replay import ReplayOptions, document, replay_log
from ipse.replay._document import TARGET
from tests.conftest import CLAUDE_CODE, SHARED, SHARED_DATA, shared_glob

SESSIONS = shared_glob(CLAUDE_CODE, "*.jsonl") + shared_glob(SHARED_DATA / "codex", "*.jsonl")
BIG = CLAUDE_CODE / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"


def _replayed(path: Path, policy: AutopilotPolicy) -> dict[str, Any]:
    log = read_requests(path)
    options = ReplayOptions(policy=policy, compaction=compaction_rule(log.format))
    return document(replay_log(log, options, session=path))


@SHARED
@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.name[:40])
def test_off_bills_what_the_prefix_replay_bills(path: Path) -> None:
    log = read_requests(path)
    expected = analyze(log.requests, warnings=log.warnings).summary()["cost_usd"]
    found = _replayed(path, AutopilotPolicy(mode="off"))
    assert found["recorded"]["input_usd"] == expected
    assert found["with_policy_at_recorded"]["input_usd"] == expected
    assert found["with_policy"] == found["recorded_as_modelled"]
    assert found["requests"]["sent"] == found["requests"]["recorded"] == len(log.requests)


@SHARED
@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.name[:40])
def test_with_the_autopilot_no_request_passes_the_compaction_point(path: Path) -> None:
    found = _replayed(path, AutopilotPolicy())
    assert found["with_policy"]["above_limit"] == 0
    assert found["targets"]["no_request_above_limit"] is True
    dropped = found["requests"]["compaction_calls_dropped"]
    assert found["requests"]["sent"] == found["requests"]["recorded"] - len(dropped)
    for cut in found["cuts"]:
        assert cut["tokens_after"] < cut["tokens_before"]
        assert cut["continuity"] is not None and cut["continuity"]["in_context"] is not None
    ratio = found["ratio"]["conversation"]
    assert (ratio is not None and ratio <= TARGET) or found["why"]
    assert all(r["share"] >= 0 and r["detail"] for r in found["why"])


@SHARED
def test_a_session_and_its_sub_agents_replayed_through_its_compaction() -> None:
    found = _replayed(BIG, AutopilotPolicy())
    conversations = {line["conversation"] for line in found["lines"]}
    assert "main" in conversations and any(c.startswith("agent:") for c in conversations)
    # the session compacted once, through a compacting sub-agent: the autopilot cut before it,
    # so the compacting call is not made and the history goes on
    assert found["cuts"] and found["requests"]["compactions_prevented"]
    assert len(found["requests"]["compaction_calls_dropped"]) == 1
    main = next(line for line in found["lines"] if line["conversation"] == "main")
    assert main["stretches"] == 2
    # where it compacted, the session shows the point: no higher than its largest request then
    assert main["limit"] < 167_000 == compaction_rule("claude-code")(200_000, 64_000)  # type: ignore[misc]
    (compaction,) = found["compactions"]
    assert compaction["summary"]["in_context"] is not None
    assert compaction["summary"]["reachable"] is not None  # the transcript it names, searched
    assert found["targets"]["continuity_at_least_summary"] is not None
    # what each cut removed is searched for as the agent would, from the context it left
    assert all(cut["continuity"]["reachable"] is not None for cut in found["cuts"])


ROLLOUT = (
    SHARED_DATA
    / "codex"
    / ("localpush_redacted__rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl")
)


@SHARED
@pytest.mark.parametrize("path", [BIG, ROLLOUT], ids=["claude-code", "codex"])
def test_the_defaults_halve_a_long_sessions_conversation_and_never_raise_the_bill(
    path: Path,
) -> None:
    found = _replayed(path, AutopilotPolicy())
    assert found["ratio"]["conversation"] <= TARGET
    assert found["with_policy_at_recorded"]["bill_usd"] <= found["recorded"]["bill_usd"]
    # each cut after a nudge the recorded agent never answered, none before one
    assert found["nudges"] >= len(found["cuts"]) > 1


@SHARED
def test_lower_thresholds_cut_more_and_peak_lower() -> None:
    """Lower thresholds cut more often and keep the conversation smaller; both bills are below
    the one recorded. Which costs less is not a matter of the thresholds alone: each cut writes
    the cache again (on this session, cutting at 60,000 costs more than the defaults)."""
    default = _replayed(BIG, AutopilotPolicy())
    lower = _replayed(BIG, AutopilotPolicy(hard=60_000, soft=60_000))
    assert len(lower["cuts"]) > len(default["cuts"])
    assert lower["with_policy"]["peak_tokens"] < default["with_policy"]["peak_tokens"]
    assert 0 < default["ratio"]["conversation"] < 1 and 0 < lower["ratio"]["conversation"] < 1
