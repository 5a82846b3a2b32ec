"""``ipse report`` reads every format ``ipse inspect`` reads; where an input records one
conversation and not the requests sent (OpenHands, Gemini CLI), the page shows what fills it
and says why the prompt cache and handoff sections are empty."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ipse.transcript import FORMATS
from tests.conftest import CliRun
from tests.report.build import write_log
from tests.support.generated import Turn, journaled_records, rollout_records
from tests.transcript import harness_cases as cases

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _input(kind: str, folder: Path) -> Path:
    anthropic = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "hi"}],
        "system": "be brief",
    }
    builders: dict[str, Any] = {
        "anthropic": lambda p: cases.write_json(p, anthropic),
        "openai-chat": lambda p: cases.write_json(
            p, {"model": "gpt-5", "messages": [{"role": "user", "content": "hi"}]}
        ),
        "openai-responses": lambda p: cases.write_json(
            p, {"model": "gpt-5", "input": [{"role": "user", "content": "hi"}]}
        ),
        "claude-code": lambda p: cases.write_jsonl(
            p, list(journaled_records([Turn("read", tool=True), Turn("next")]))
        ),
        "http-log": lambda p: write_log(p),
        "codex": lambda p: cases.write_jsonl(p, list(rollout_records(3))),
        "cline": lambda p: cases.write_json(p, cases.cline_history()),
        "swe-agent": lambda p: cases.write_json(p, cases.swe_agent_traj()),
        "mini-swe-agent": lambda p: cases.write_json(p, cases.mini_swe_agent_traj()),
        "openhands": lambda p: cases.write_json(p, cases.openhands_events()),
        "gemini-cli": lambda p: cases.write_jsonl(p, cases.gemini_session_jsonl()),
    }
    path = folder / f"input-{kind}.{'jsonl' if kind in ('claude-code', 'codex') else 'json'}"
    builders[kind](path)
    return path


@pytest.mark.parametrize("kind", FORMATS)
def test_report_reads_every_format_inspect_reads(cli: CliRun, tmp_path: Path, kind: str) -> None:
    path = _input(kind, tmp_path)
    assert cli("inspect", str(path), "--json").returncode == 0
    page = tmp_path / "page.html"
    done = cli("report", str(path), "-o", str(page), "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["format"] == kind
    assert data["requests"] and data["requests"][-1]["context_tokens"] > 0
    html = page.read_text()
    if kind in ("openhands", "gemini-cli"):
        assert data["no_requests"] and "not the requests sent" in data["no_requests"]
        assert html.count("Nothing to show") == 2  # the cache and the handoff sections
    else:
        assert data["no_requests"] is None and "Nothing to show" not in html


@pytest.mark.parametrize("name", ["basic.json", "basic_interactions.json"])
def test_report_on_the_openhands_examples(cli: CliRun, tmp_path: Path, name: str) -> None:
    done = cli("report", str(EXAMPLES / "openhands" / name), "-o", str(tmp_path / "p.html"))
    assert done.returncode == 0, done.stderr
