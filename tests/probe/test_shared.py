"""`ipse probe` on the real sessions: every cut is scored, nothing the whole history holds is
lost by ipse (kept or recallable), and ipse's context is smaller than the history and every
masking."""

from __future__ import annotations

from pathlib import Path

import pytest

from ipse.probe import probe_session
from ipse.tokens import CharCounter
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
def test_ipse_keeps_or_can_recall_every_demanded_fact_the_history_holds(path: Path) -> None:
    document = probe_session(path, counter=CharCounter())
    assert len(document["probes"]) >= 3
    for probe in document["probes"]:
        scores = {s["name"]: s for s in probe["strategies"]}
        none, ipse = scores["none"], scores["ipse"]
        assert "note" not in ipse, ipse.get("note")
        held = {f["value"] for f in none["lost"]}
        assert {f["value"] for f in ipse["lost"]} <= held
        assert ipse["tokens"] < none["tokens"]
        assert all(ipse["tokens"] < scores[f"mask-{n}"]["tokens"] for n in (3, 5, 10))
        assert scores["truncate"]["tokens"] <= ipse["tokens"]


@pytest.mark.parametrize("path", SESSIONS[:1])
def test_the_compacted_session_is_scored_against_its_real_summary(path: Path) -> None:
    document = probe_session(path, "checkpoint", counter=CharCounter())
    [probe] = document["probes"]
    assert probe["kind"] == "compaction" and probe["demanded"]["total"] > 0
    harness = next(s for s in probe["strategies"] if s["name"] == "compaction-summary")
    assert harness["tokens"] > 0 and harness["lost"]
