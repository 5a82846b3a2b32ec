"""What a probe run adds up to: the headline micro-averaged over facts; ``ipse-budget`` held to
the summary's own tokens at each compaction (to ``--budget`` elsewhere); the targets at each
compaction point, with the facts that fall short and why; every strategy's context written per
cut, so a verdict can be checked by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ipse.probe import probe_session
from tests.conftest import run_cli
from tests.probe.build import assistant, call, result, text, user, write_session

OUTPUT = "\n".join(f"row {i}: value={i * 7} unit=ms" for i in range(80))
WORDS = " ".join(f"word{i}" for i in range(120))  # a summary of some size
THOUGHT = " ".join(f"step{i}" for i in range(80))  # narration a budget can page out


def _work(n: int) -> list[dict[str, Any]]:
    """One round of work: a read whose output names a file, then narration about it."""
    return [
        assistant(text(f"Round {n}: reading."), call(f"read{n:04d}", "Read", file_path=f"s{n}.py")),
        user(result(f"read{n:04d}", f"{OUTPUT}\nthe helper is in lib/helpers/h{n}.py")),
        assistant(text(f"Round {n} read; next I will edit lib/helpers/h{n}.py. {THOUGHT}")),
        user(text(f"Go on with round {n}.")),
    ]


def _turns(rounds: int = 4) -> list[dict[str, Any]]:
    turns = [user(text("Refactor the helpers. Never change the public names."))]
    for n in range(rounds):
        turns += _work(n)
    for n in range(rounds):  # after every cut: each helper is edited
        turns.append(assistant(call(f"edit{n:04d}", "Edit", file_path=f"lib/helpers/h{n}.py")))
        turns.append(user(result(f"edit{n:04d}", "ok")))
    return turns


def test_the_headline_is_micro_averaged_over_facts(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.jsonl", _turns())
    document = probe_session(path)
    probes = document["probes"]
    assert len(probes) >= 2
    for row in document["headline"]:
        lines = [s for p in probes for s in p["strategies"] if s["name"] == row["name"]]
        held = sum(s["held"] for s in lines)
        demanded = sum(s["held"] + s["missing"] for s in lines)
        assert row["cuts"] == len(lines) and row["demanded"] == demanded
        assert row["in_context"] == round(100.0 * held / demanded, 1)
    ipse = next(r for r in document["headline"] if r["name"] == "ipse")
    searched = sum(s["missing"] for p in probes for s in p["strategies"] if s["name"] == "ipse")
    reached = sum(s["reached"] for p in probes for s in p["strategies"] if s["name"] == "ipse")
    assert ipse["reachable"] == (round(100.0 * reached / searched, 1) if searched else None)


def test_ipse_budget_is_held_to_each_summary_and_to_the_budget_elsewhere(tmp_path: Path) -> None:
    summaries = {8: f"Summary one: {WORDS}", 12: f"Summary two: {WORDS} {WORDS}"}
    path = write_session(tmp_path / "s.jsonl", _turns(), compactions=summaries)
    document = probe_session(path)
    compacted = [p for p in document["probes"] if p["kind"] == "compaction"]
    assert len(compacted) == 2 == len(document["compactions"])
    for probe in compacted:
        lines = {s["name"]: s for s in probe["strategies"]}
        held, summary = lines["ipse-budget"], lines["compaction-summary"]
        assert held["tokens"] <= summary["tokens"], held
        assert held["tokens"] < lines["ipse"]["tokens"]
        assert probe["targets"]["ipse-budget"]["tokens"] == held["tokens"]
    others = [p for p in document["probes"] if p["kind"] != "compaction"]
    assert others and all("ipse-budget" not in {s["name"] for s in p["strategies"]} for p in others)
    budgeted = probe_session(path, budget=200)
    for probe in budgeted["probes"]:
        if probe["kind"] != "compaction":
            held = next(s for s in probe["strategies"] if s["name"] == "ipse-budget")
            assert held["tokens"] <= 200 or "not met" in held["note"]


def test_the_targets_name_the_facts_that_fall_short_and_why(tmp_path: Path) -> None:
    # the summary names a helper that only a tool's output showed: ipse does not hold it
    summary = "Summary: refactoring; the helpers are lib/helpers/h0.py and lib/helpers/h1.py."
    turns = [user(text("Refactor the helpers."))]
    for n in range(2):
        turns += [
            assistant(call(f"grep{n:04d}", "Grep", pattern=f"helper{n}")),
            user(result(f"grep{n:04d}", f"{OUTPUT}\nlib/helpers/h{n}.py")),
        ]
    turns += [assistant(text("Found them.")), user(text("Edit both."))]
    turns += [
        assistant(call("edit0000", "Edit", file_path="lib/helpers/h0.py")),
        user(result("edit0000", "ok")),
        assistant(call("edit0001", "Edit", file_path="lib/helpers/h1.py")),
        user(result("edit0001", "ok")),
    ]
    path = write_session(tmp_path / "s.jsonl", turns, compact_after=6, summary=summary)
    [probe] = probe_session(path, "checkpoint")["probes"]
    point = probe["targets"]
    assert point["met"]["ipse"] is False
    short = [f for f in point["short"] if f["target"] == "ipse"]
    assert {f["value"] for f in short} >= {"lib/helpers/h0.py", "lib/helpers/h1.py"}
    assert all("only in a tool's output" in f["why"] for f in short)
    shown = run_cli("probe", str(path), "--at", "checkpoint", env={"COLUMNS": "200"})
    assert shown.returncode == 0, shown.stderr
    assert "NOT MET" in shown.stdout and "short of ipse: path: lib/helpers/h0.py" in shown.stdout


def test_each_context_is_written_per_cut_to_check_a_verdict_by_hand(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.jsonl", _turns(), compactions={8: f"Summary: {WORDS}"})
    folder = tmp_path / "contexts"
    done = run_cli("probe", str(path), "--contexts", str(folder), "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    for probe in document["probes"]:
        for line in probe["strategies"]:
            written = folder / f"cut-{probe['cut']}" / f"{line['name']}.txt"
            context = written.read_text(encoding="utf-8")
            assert written.stat().st_mode & 0o077 == 0  # conversation content: private
            for fact in line["lost"]:  # a lost fact is not in the context written
                assert fact["value"] not in context
    missing = tmp_path / "no" / "such" / "contexts"
    refused = run_cli("probe", str(path), "--contexts", str(missing))
    assert refused.returncode == 2 and "does not exist" in refused.stderr
    assert not (tmp_path / "no").exists()
