"""`ipse probe` on small Claude Code sessions built here: the cuts, the agent CLI's own
compaction summary as a strategy and ipse held to its tokens, re-discovery, the seams,
invariants beside the session, redacted lost facts, the headline over facts, the targets at a
compaction point and what falls short of them, the contexts written for checking by hand, and
a checkpoint that ends the session."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from ipse._tokens import CharCounter
from ipse.probe import probe_session
from tests.conftest import EXAMPLE_SESSION, REPO, CliRun, run_cli
from tests.probe.build import assistant, call, result, text, user, write_session

SECRET_URL = "postgresql://app:hunter2pass@db.internal/prod"
LISTING = "\n".join(f"def rule_{i}(tokens): return match(tokens, {i})" for i in range(60))


def _turns() -> list[dict[str, Any]]:
    turns = [
        user(text("Port the parser. Never touch vendor/lib.c and always keep the tests green.")),
        assistant(text("Reading it."), call("r1", "Read", file_path="src/parse/core.py")),
        user(
            result(
                "r1", f"{LISTING}\ndef parse(): ...  # raises ParseError at src/parse/core.py:88"
            )
        ),
        assistant(call("b1", "Bash", command="pytest -q tests/test_core.py")),
        user(result("b1", f"Exit code: 1\nFAILED tests/test_core.py::test_empty; db {SECRET_URL}")),
    ]
    for n in range(6):  # enough later results for masking to drop the early ones
        turns.append(assistant(call(f"x{n}", "Bash", command=f"ls dir{n}")))
        turns.append(user(result(f"x{n}", f"file{n}.txt")))
    turns += [
        assistant(text("Next I'll fix `parse` for empty input.")),
        user(text("Go ahead.")),
        # after the cut: the agent uses what it learnt before it
        assistant(
            text("Fixing ParseError at src/parse/core.py:88."),
            call("e1", "Edit", file_path="src/parse/core.py", old_string="a", new_string="b"),
        ),
        user(result("e1", "ok")),
        assistant(call("r2", "Read", file_path="src/parse/core.py")),
        user(result("r2", "def parse(): return []")),
        assistant(call("b2", "Bash", command="pytest -q tests/test_core.py")),
        user(result("b2", f"Exit code: 0\npassed; connected to {SECRET_URL}")),
        assistant(text("Done; tests/test_core.py::test_empty passes.")),
    ]
    return turns


def _session(tmp_path: Path) -> Path:
    return write_session(
        tmp_path / "s.jsonl",
        _turns(),
        compact_after=18,
        summary="Summary: porting the parser; ParseError in src/parse/core.py.",
    )


def _probe(document: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(p for p in document["probes"] if p["kind"] == kind)


def _strategy(probe: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in probe["strategies"] if s["name"] == name)


def test_probe_at_the_compaction_scores_every_strategy(tmp_path: Path) -> None:
    document = probe_session(_session(tmp_path), counter=CharCounter())
    assert document["compactions"] == [19]
    probe = _probe(document, "compaction")
    assert probe["cut"] == 19
    names = [s["name"] for s in probe["strategies"]]
    strategies = ["none", "ipse", "ipse-budget", "mask-3", "mask-5", "mask-10", "truncate"]
    assert names == [*strategies, "compaction-summary"]
    demanded = probe["demanded"]
    assert demanded["by_kind"]["constraint"] == 1  # the rule is standing
    none, ipse = _strategy(probe, "none"), _strategy(probe, "ipse")
    assert none["in_context"] == 100.0 and not none["lost"]
    assert ipse["tokens"] < none["tokens"]
    harness = _strategy(probe, "compaction-summary")
    held = _strategy(probe, "ipse-budget")
    # the human's words alone are more than this tiny summary: the budget says it is not met
    assert held["tokens"] > harness["tokens"] and "not met" in held["note"]
    lost = {f["value"] for f in harness["lost"]}
    assert "Never touch vendor/lib.c and always keep the tests green." in lost
    assert "src/parse/core.py:88" in lost
    mask = _strategy(probe, "mask-3")
    assert "src/parse/core.py:88" in {f["value"] for f in mask["lost"]}
    assert probe["rediscovery"] == {
        "files": 1,
        "commands": 1,
        "examples": ["Read: src/parse/core.py", "Bash: pytest -q tests/test_core.py"],
    }


def test_a_lost_secret_is_shown_redacted(tmp_path: Path) -> None:
    turns = _turns()
    turns.insert(-1, assistant(text(f"I will connect to {SECRET_URL} again.")))
    turns.insert(-1, user(text("fine")))
    document = probe_session(_session_file(tmp_path, turns), "19", counter=CharCounter())
    probe = document["probes"][0]
    values = [f["value"] for s in probe["strategies"] for f in s["lost"]]
    assert any("postgresql://app:***@db.internal/prod" in v for v in values)
    assert "hunter2pass" not in json.dumps(document)


def _session_file(tmp_path: Path, turns: list[dict[str, Any]]) -> Path:
    return write_session(tmp_path / "t.jsonl", turns)


def test_invariants_beside_the_session_are_standing_constraints(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "10_invariants.md").write_text("# Invariants\n- No network in tests\n")
    document = probe_session(_session(tmp_path), "checkpoint", counter=CharCounter())
    probe = document["probes"][0]
    assert probe["kind"] == "compaction"
    none = _strategy(probe, "none")
    assert "No network in tests" in {f["value"] for f in none["lost"]}


def test_every_k_turns_gives_a_sawtooth(tmp_path: Path) -> None:
    document = probe_session(_session(tmp_path), "every:3", counter=CharCounter())
    seams = document["seams"]
    assert [p["cut"] for p in seams["seams"]] == sorted({p["cut"] for p in seams["seams"]})
    assert len(seams["seams"]) >= 3
    for point in seams["seams"]:
        assert point["tokens_after"] < point["tokens_before"]
    authored = [p["authored_chars"] for p in seams["seams"]]
    assert authored == sorted(authored)
    requests = seams["requests"]
    assert all(r["tokens"] <= r["tokens_without_handoff"] for r in requests)
    drops = [b for a, b in itertools.pairwise(requests) if b["tokens"] < a["tokens"]]
    assert drops  # the saw's teeth


def test_cli_json_and_text(tmp_path: Path) -> None:
    path = _session(tmp_path)
    result = run_cli("probe", str(path), "--at", "19", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert [p["cut"] for p in document["probes"]] == [19]
    assert document["tokenizer"] == "o200k_base"
    text = run_cli("probe", str(path))
    assert text.returncode == 0, text.stderr
    assert "continuity at message 19" in text.stdout and "compaction-summary lost " in text.stdout
    assert "headline: every cut's facts together" in text.stdout and "targets: ipse" in text.stdout
    seams = run_cli("probe", str(path), "--at", "every:4")
    assert seams.returncode == 0 and "a handoff every 4 turns" in seams.stdout


def test_bad_cuts_are_usage_errors(tmp_path: Path) -> None:
    path = _session(tmp_path)
    assert run_cli("probe", str(path), "--at", "999").returncode == 2
    assert run_cli("probe", str(path), "--at", "sometime").returncode == 2
    assert run_cli("probe", str(path), "--at", "every:0").returncode == 2
    plain = write_session(tmp_path / "p.jsonl", _turns())
    refused = run_cli("probe", str(plain), "--at", "checkpoint")
    assert refused.returncode == 2 and "no checkpoint call" in refused.stderr


def _headers(text: str) -> list[str]:
    """The column names of every table in a rendered output."""
    names: list[str] = []
    for line in text.splitlines():
        if line.startswith("┃"):
            names += [cell.strip() for cell in line.strip("┃").split("┃")]
    return names


def test_every_column_and_kind_the_probe_prints_is_explained(cli: CliRun) -> None:
    from ipse.probe._facts import KINDS

    session = str(EXAMPLE_SESSION)
    wide = {"COLUMNS": "300"}
    shown = _headers(cli("probe", session, env=wide).stdout)
    shown += _headers(cli("probe", session, "--at", "every:2", env=wide).stdout)
    assert "strategy" in shown and "seam" in shown
    names = {n.replace(f"{k} ", "KIND ") for n in shown for k in KINDS if n.startswith(k)}
    names |= {n for n in shown if not any(n.startswith(k) for k in KINDS)}
    names -= {"strategy", "seam"}  # the row's own name
    help_text = " ".join(cli("probe", "--help", env=wide).stdout.split())
    page = " ".join((REPO / "docs" / "probe.md").read_text().split())
    for name in sorted(names) + list(KINDS):
        assert name in help_text, f"probe --help does not explain {name!r}"
        assert f"*{name}*" in page, f"docs/probe.md does not explain {name!r}"
