"""`ipse probe` on the real sessions: every cut is scored, every fact ipse loses is one the
history held and says why, ipse's context is smaller than the history and every masking, and at
the real Claude Code compaction the targets hold against Claude Code's own summary."""

from __future__ import annotations

from pathlib import Path

import pytest

from ipse._tokens import CharCounter
from ipse.probe import probe_session
from tests.conftest import CLAUDE_CODE, SHARED_DATA, needs_shared

SESSIONS = [
    needs_shared(CLAUDE_CODE / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl", id="cc-compacted"),
    needs_shared(CLAUDE_CODE / "python-to-rust-port.transcript.jsonl", id="cc-port"),
    needs_shared(
        next(iter(sorted((SHARED_DATA / "codex").glob("*12-54-34*.jsonl"))), SHARED_DATA),
        id="codex-compacted",
    ),
    needs_shared(
        SHARED_DATA / "openai-chat" / "deepseek-chat__django__django-13265.traj.json", id="swe"
    ),
]


@pytest.mark.parametrize("path", SESSIONS)
def test_every_cut_is_scored_and_every_fact_ipse_loses_says_why(path: Path) -> None:
    document = probe_session(path, counter=CharCounter())
    assert len(document["probes"]) >= 3
    for probe in document["probes"]:
        scores = {s["name"]: s for s in probe["strategies"]}
        none, ipse = scores["none"], scores["ipse"]
        assert "note" not in ipse, ipse.get("note")
        assert not none["lost"]
        assert all(f["why"] for f in ipse["lost"])
        assert ipse["tokens"] < none["tokens"]
        assert all(ipse["tokens"] < scores[f"mask-{n}"]["tokens"] for n in (3, 5, 10))
        assert scores["truncate"]["tokens"] <= ipse["tokens"]


@pytest.mark.parametrize("path", SESSIONS[:1])
def test_the_compacted_session_is_scored_against_its_real_summary(path: Path) -> None:
    document = probe_session(path, "checkpoint")
    [probe] = document["probes"]
    assert probe["kind"] == "compaction" and probe["demanded"]["total"] > 0
    harness = next(s for s in probe["strategies"] if s["name"] == "compaction-summary")
    assert harness["tokens"] > 0 and harness["lost"]
    # Claude Code's summary names its transcript: it is searched there, as ipse's archive is
    assert harness["reachable"] is not None
    point = probe["targets"]
    assert point["met"] == {"ipse": True, "ipse-budget": True, "reachable": True}, point
    assert point["ipse-budget"]["tokens"] <= point["summary"]["tokens"]
