"""``--at best`` picks the turn boundary where a handoff saves most history over the turns that
follow, discounted by the demanded facts it loses; on a conversation built so that the answer
is known: two large tool exchanges, then a run of text-only turns that add nothing removable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from ipse.cli.main import cli
from ipse.probe._best import best_of
from ipse.transcript import load
from tests.handoff.build import assistant, call, result, text, user

LISTING = "\n".join(f"def handler_{i}(request): return respond({i})" for i in range(300))


def conversation(chats: int = 8) -> list[dict[str, Any]]:
    messages = [
        user(text("Fix the failing test in `parser.py`. Never touch vendor/lib.py.")),
        assistant(text("Reading the handlers."), call("t1", "Read")),
        user(result("t1", LISTING)),
        assistant(text("And the routes."), call("t2", "Read")),
        user(result("t2", LISTING.replace("handler", "route"))),
    ]
    for turn in range(chats):
        messages.append(assistant(text(f"Step {turn}: the fix is in `parser.py`.")))
        messages.append(user(text(f"Go on with step {turn + 1}.")))
    messages.append(assistant(text("Done: `parser.py` is fixed.")))
    return messages


def write(tmp_path: Path, messages: list[dict[str, Any]]) -> Path:
    body = {"model": "claude-opus-4-8", "max_tokens": 1024, "messages": messages}
    path = tmp_path / "body.json"
    path.write_bytes(orjson.dumps(body))
    return path


def test_the_best_cut_is_right_after_the_last_large_exchange(tmp_path: Path) -> None:
    # Cuts before an agent turn: 1 (saves nothing), 3 (one listing), 5 (both), then 7, 9, ...
    # (the same saving, as text-only turns add nothing removable, but fewer turns follow).
    path = write(tmp_path, conversation())
    best = best_of(load(path).current(), path)
    assert best["cut"] == 5
    c = best["continuity"]
    assert c["tokens_before"] - c["tokens_after"] == c["saved_tokens"] > 1000
    assert c["later_turns"] == 9
    assert c["in_context"] == 100.0 and c["lost_total"] == 0  # the rule and `parser.py` stay
    assert best["candidates"] == 11


def test_a_cut_that_loses_what_the_agent_needs_next_is_passed_over(tmp_path: Path) -> None:
    # The agent cites a path that only the second listing held: at cut 5 it is not in context,
    # but the ledger's line for the call that printed it leads a query to it (reachable), so
    # cut 5's value drops by half that fact; one late citation at the end.
    messages = conversation()
    messages[4] = user(result("t2", LISTING + "\nsrc/routes/only_here.py"))
    messages[-1] = assistant(text("Done: see src/routes/only_here.py."))
    path = write(tmp_path, messages)
    best = best_of(load(path).current(), path)
    c = best["continuity"]
    assert c["demanded"] >= 1 and c["in_context"] is not None and c["in_context"] < 100.0
    assert c["reachable"] == 100.0 and c["lost_total"] == 0
    assert best["cut"] == 5  # still the best: the loss is reachable, the saving large


def test_the_command_cuts_there_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("IPSE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("IPSE_DATABASE_URL", raising=False)
    path = write(tmp_path, conversation())
    run = CliRunner().invoke(cli, ["handoff", str(path), "--at", "best", "--json"])
    assert run.exit_code == 0, run.output
    document = json.loads(run.stdout)
    assert document["cut"]["at"] == 5 and document["best"]["cut"] == 5
    assert "later agent turns" in document["best"]["rule"]
    probe = CliRunner().invoke(cli, ["probe", str(path), "--at", "5", "--json"])
    lines = {s["name"]: s for s in json.loads(probe.stdout)["probes"][0]["strategies"]}
    chosen = document["best"]["continuity"]
    assert chosen["in_context"] == lines["ipse"]["in_context"]
    assert chosen["reachable"] == lines["ipse"]["reachable"]
    assert chosen["saved_tokens"] == lines["none"]["tokens"] - lines["ipse"]["tokens"]
    shown = CliRunner().invoke(cli, ["handoff", str(path), "--at", "best"])
    assert shown.exit_code == 0, shown.output
    said = " ".join(shown.output.split())
    assert "best cut: message 5 of 11 turn boundaries scored" in said
    assert "on each of 9 later turns" in said


def test_a_conversation_with_nothing_to_remove_has_no_best_cut(tmp_path: Path) -> None:
    messages = [user(text("Hello.")), assistant(text("Hi.")), user(text("Bye."))]
    messages.append(assistant(text("Bye.")))
    path = write(tmp_path, messages)
    run = CliRunner().invoke(cli, ["handoff", str(path), "--at", "best", "--json"])
    assert run.exit_code != 0
    assert "no cut of this conversation saves a token" in run.output
