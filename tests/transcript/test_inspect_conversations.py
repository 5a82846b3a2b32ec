"""``ipse inspect`` on a proxy's record that holds several sessions: a row per conversation
(its requests, its last request's messages and tokens), and each request names its own; a log
of one conversation has no such rows."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import HTTP_LOG, SHARED, CliRun
from tests.prefix.test_record_conversations import record


def test_a_record_of_several_sessions_has_a_row_for_each(cli: CliRun, tmp_path: Path) -> None:
    done = cli("inspect", str(record(tmp_path)), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    rows = report["conversations"]
    assert [r["conversation"] for r in rows] == ["session:run-a", "session:run-b", "session:run-c"]
    assert [(r["requests"], r["last_request"]) for r in rows] == [(3, 2), (3, 5), (3, 8)]
    assert [r["conversation"] for r in report["requests"]][:4] == ["session:run-a"] * 3 + [
        "session:run-b"
    ]
    text = cli("inspect", str(record(tmp_path)))
    assert "session:run-b" in text.stdout


@SHARED
def test_a_log_of_one_conversation_has_no_rows_of_conversations(cli: CliRun) -> None:
    report = json.loads(cli("inspect", str(HTTP_LOG), "--json").stdout)
    assert "conversations" not in report
