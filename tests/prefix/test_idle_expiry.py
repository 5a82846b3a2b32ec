"""A call after an idle gap longer than its chain's TTL is named by the expiry, whatever else
changed: nothing the chain cached was left to read, edit or no edit. Within the TTL the edit
is the cause."""

from __future__ import annotations

from pathlib import Path

from ipse.prefix import analyze, read_requests

from .sessions import Session, text, usage
from .util import body, run

HOURS = 3600.0


def _edited_after(tmp_path: Path, idle: float) -> Path:
    """Two calls, then, ``idle`` seconds later, the second prompt sent again, edited (a
    branch from the first answer)."""
    s = Session()
    s.user("fix the failing test " * 400)
    answer = s.assistant(text("a"), usage(0, 20_000), message_id="m1")
    s.user("go on " * 10)
    s.assistant(text("b"), usage(20_000, 900), message_id="m2")
    s.user("go on, but run the tests first " * 10, after=idle, parent=answer)
    s.assistant(text("c"), usage(0, 21_000), message_id="m3")
    return s.write(tmp_path / "edited.jsonl")


def test_a_session_edit_after_hours_idle_is_named_an_expiry(tmp_path: Path) -> None:
    report = analyze(read_requests(_edited_after(tmp_path, 12.8 * HOURS)).requests)
    last = report.rows[-1]
    assert last.cause is not None and last.cause.kind == "ttl_expired"
    assert "12.8 h" in last.cause.detail and "5m TTL" in last.cause.detail
    assert "message_edited" in last.cause.detail
    assert last.lost_tokens == last.ideal_read > 19_000  # (the money as before)


def _edited() -> list[dict[str, object]]:
    second = body(2)
    second["messages"][1]["content"][0]["text"] = "answer 0: corrected"
    return [body(1), second]


def test_an_edit_after_the_ttl_ran_out_is_named_an_expiry() -> None:
    row = run(_edited(), gaps=[12.8 * HOURS]).rows[1]
    assert row.cause is not None and row.cause.kind == "ttl_expired"
    assert "message_edited" in row.cause.detail
    assert row.cause.location == "messages[1].content[0]"


def test_an_edit_within_the_ttl_is_named_an_edit() -> None:
    row = run(_edited(), gaps=[60]).rows[1]
    assert row.cause is not None and row.cause.kind == "message_edited"
