"""``--at now`` keeps only an unfinished tool exchange at the end (as ``ipse handoff --help`` and
the README say): an answered one is finished and goes with the rest. A rerun that finds the
removed items already archived says so instead of "archived 0 item(s)"."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from ipse.cli.main import cli
from ipse.handoff import strip
from tests.handoff.build import anthropic_conv, assistant, call, result, text, user


def test_an_answered_exchange_at_the_end_is_handed_off() -> None:
    conversation = anthropic_conv(
        user(text("Read a.py.")),
        assistant(text("Reading it."), call("t1", "Read")),
        user(result("t1", "print(1)")),
    )
    after, report = strip(conversation, "now")
    assert report.cut == 3 and report.removed_calls == 1
    assert [m.role for m in after.messages] == ["user", "assistant"]


def test_an_unfinished_exchange_at_the_end_stays() -> None:
    conversation = anthropic_conv(
        user(text("Read a.py and b.py.")),
        assistant(text("Reading them."), call("t1", "Read"), call("t2", "Read")),
        user(result("t1", "print(1)")),
    )
    _, report = strip(conversation, "now")
    assert report.cut == 1 and report.removed_calls == 0


def test_a_rerun_says_the_items_were_already_archived(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("IPSE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("IPSE_DATABASE_URL", raising=False)
    body = {
        "model": "claude-opus-4-8",
        "max_tokens": 1024,
        "messages": [
            user(text("Read a.py.")),
            assistant(text("Reading it."), call("t1", "Read")),
            user(result("t1", "print(1)")),
            assistant(text("It prints 1.")),
        ],
    }
    source = tmp_path / "body.json"
    source.write_bytes(orjson.dumps(body))
    args = ["handoff", str(source), "--at", "now", "-o", str(tmp_path / "out.json")]
    first = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert first.exit_code == 0, first.output
    assert "archived 1 item(s) under session" in " ".join(first.output.split())
    again = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert again.exit_code == 0, again.output
    said = " ".join(again.output.split())
    assert "the 1 removed item(s) were already archived under session" in said
    assert "archived 0 item(s)" not in said
