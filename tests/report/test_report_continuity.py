"""At each checkpoint it lists, the report says what a handoff there keeps of the facts the agent
used next: the same numbers as ``ipse probe --at N --json`` at the same cut, in the page and in
``--json``, with the lost facts on hover, escaped and redacted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from ipse.cli.main import cli
from ipse.report._continuity import LOST_SHOWN
from ipse.report._data import HandoffSaving
from ipse.report._page import _continuity_list
from tests.probe.build import assistant, call, result, text, user, write_session

LISTING = "\n".join(f"def handler_{i}(request): return respond({i})" for i in range(200))


def session(tmp_path: Path) -> Path:
    turns = [
        user(text("Fix the failing test in `parser.py`. Never touch vendor/lib.py.")),
        assistant(text("Reading it."), call("t1", "Read", file_path="src/app/handlers.py")),
        user(result("t1", LISTING + "\nsee src/app/hidden_only.py")),
        assistant(text("Found the handler.")),
        user(text("Now fix src/app/handlers.py please.")),
        assistant(call("t2", "Edit", file_path="src/app/handlers.py", old="a", new="b")),
        user(result("t2", "ok")),
        assistant(text("Fixed; src/app/hidden_only.py needs the same change.")),
        user(text("Thanks. Run the tests.")),
        assistant(text("Ran `pytest`: 3 tests passed.")),
    ]
    return write_session(tmp_path / "s.jsonl", turns)


def run_json(*args: str) -> Any:
    out = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)


def test_the_report_and_the_probe_agree_at_each_checkpoint(tmp_path: Path) -> None:
    path = session(tmp_path)
    page = tmp_path / "r.html"
    report = run_json("report", str(path), "-o", str(page), "--json")
    probed = [c for c in report["checkpoints"] if c["continuity"] is not None]
    assert probed, report["checkpoints"]
    for checkpoint in probed:
        k = checkpoint["continuity"]
        probe = run_json("probe", str(path), "--at", str(k["cut"]), "--json")["probes"][0]
        assert probe["cut"] == k["cut"]
        lines = {s["name"]: s for s in probe["strategies"]}
        assert k["demanded"] == probe["demanded"]["total"]
        assert k["in_context"] == lines["ipse"]["in_context"]
        assert k["reachable"] == lines["ipse"]["reachable"]
        assert k["saved_tokens"] == lines["none"]["tokens"] - lines["ipse"]["tokens"]
        assert k["lost"] == lines["ipse"]["lost"][:LOST_SHOWN]
    first = min(probed, key=lambda c: c["index"])["continuity"]
    assert first["cut"] == 5  # right after "Now fix src/app/handlers.py please."
    # hidden_only.py: only a tool saw it, and the ledger's Read line leads a query to it
    assert first["reachable"] and first["reachable"] > 0
    html = page.read_text(encoding="utf-8")
    said = (
        f"a handoff here keeps {first['in_context']:g}% of what the agent used next "
        f"({first['demanded']} facts), {first['reachable']:g}% of the rest is reachable by "
        f"a recall query formed from it, saves "
        f"{first['saved_tokens']:,} tokens"
    )
    assert said in html


def test_a_request_log_has_no_continuity(tmp_path: Path) -> None:
    from tests.report.build import write_log

    log = write_log(tmp_path / "log.jsonl")
    report = run_json("report", str(log), "-o", str(tmp_path / "r.html"), "--json")
    assert all(c["continuity"] is None for c in report["checkpoints"])


def test_the_lost_facts_show_on_hover_escaped_redacted_and_capped() -> None:
    lost = [
        {"kind": "grit", "sub": "path", "value": f'<script>alert("{i}")</script>'}
        for i in range(LOST_SHOWN - 1)
    ]
    lost.append({"kind": "grit", "sub": "url", "value": "postgresql://app:hunter2@db/prod"})
    continuity = {
        "cut": 7,
        "demanded": 20,
        "in_context": 50.0,
        "reachable": 10.0,
        "saved_tokens": 1234,
        "lost_total": LOST_SHOWN + 3,
        "lost": lost,
    }
    checkpoint = HandoffSaving(
        index=4,
        tokens_now=100,
        removable=50,
        later_requests=3,
        break_even_turns=1,
        saved_tokens=10,
        saved_usd=0.1,
        continuity=continuity,
    )
    html = _continuity_list([checkpoint])
    assert "<script>" not in html
    assert 'title="lost: path: &lt;script&gt;alert(&quot;0&quot;)&lt;/script&gt;' in html
    assert "hunter2" not in html and "postgresql://app:***@db/prod" in html
    assert "(+3 more)" in html and f"<summary>{LOST_SHOWN + 3} lost</summary>" in html
    assert "saves 1,234 tokens" in html
