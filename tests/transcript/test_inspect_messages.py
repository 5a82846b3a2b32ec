"""``ipse inspect --messages``: the messages by the index ``ipse handoff --at N`` counts,
what each holds and its tokens, and never the words themselves."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import CliRun
from tests.handoff.build import assistant, call, result, text, thinking, user

SECRET = "sk-live-0123456789abcdef"


def _body(tmp_path: Path) -> Path:
    body = {
        "model": "claude-x",
        "max_tokens": 100,
        "messages": [
            user(text(f"deploy with {SECRET}")),
            assistant(thinking(), text("looking"), call("t1", "Bash"), call("t2", "Read")),
            user(result("t1", f"echo {SECRET}"), result("t2")),
            assistant(text("done")),
            user(text("thanks")),
        ],
    }
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body))
    return path


def test_rows_follow_the_message_indices(tmp_path: Path, cli: CliRun) -> None:
    done = cli("inspect", str(_body(tmp_path)), "--messages", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["message_index"]
    assert [r["index"] for r in rows] == [0, 1, 2, 3, 4]
    assert [r["role"] for r in rows] == ["user", "assistant", "user", "assistant", "user"]
    assert rows[1]["holds"] == ["thinking", "agent_text", "tool_call Bash", "tool_call Read"]
    assert rows[2]["holds"] == ["tool_results x2"]
    assert all(r["tokens"] > 0 for r in rows)


def test_an_index_from_the_list_is_the_cut_handoff_takes(tmp_path: Path, cli: CliRun) -> None:
    path = _body(tmp_path)
    rows = json.loads(cli("inspect", str(path), "--messages", "--json").stdout)["message_index"]
    at = next(r["index"] for r in rows if r["holds"] == ["agent_text"])
    done = cli("handoff", str(path), "--at", str(at), "--json")
    assert done.returncode == 0, done.stderr
    cut = json.loads(done.stdout)["cut"]
    assert cut["requested"] == at and cut["at"] == at


def test_the_list_never_shows_the_words(tmp_path: Path, cli: CliRun) -> None:
    for args in ((), ("--json",)):
        done = cli("inspect", str(_body(tmp_path)), "--messages", *args)
        assert done.returncode == 0
        assert SECRET not in done.stdout
        assert "deploy" not in done.stdout
