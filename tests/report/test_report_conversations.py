"""The report of a proxy's record that holds several sessions: each session's requests are one
timeline of their own. A session's first request is no reset of the one before it (another
session's), and what a handoff at a checkpoint would save counts the later requests of its own
session only."""

from __future__ import annotations

from pathlib import Path

from ipse.report import collect
from tests.prefix.test_record_conversations import record


def test_sessions_of_a_record_are_separate_timelines(tmp_path: Path) -> None:
    data = collect(str(record(tmp_path)))
    assert [p.marker for p in data.points] == [None] * 9
    assert [p.cause for p in data.points] == [None] * 9
    assert data.checkpoints and all(c.later_requests <= 2 for c in data.checkpoints)
    assert len(data.summary["by_conversation"]) == 3
