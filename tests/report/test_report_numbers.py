"""The numbers behind the report's charts, checked against `ipse prefix` and `ipse inspect` on
the same input, and the page's safety: everything from the input is escaped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ipse.cli.main import cli
from ipse.prefix import analyze, read_requests
from ipse.report import collect, render
from tests.report.build import HOSTILE_TOOL, write_log


def run_json(*args: str) -> dict:
    result = CliRunner().invoke(cli, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return write_log(tmp_path / "log.jsonl")


def test_cache_numbers_are_the_prefix_analysis(log: Path) -> None:
    data = collect(str(log))
    prefix = run_json("prefix", str(log))
    assert len(data.points) == len(prefix["requests"]) == 8
    for point, row in zip(data.points, prefix["requests"], strict=True):
        tokens = row["actual"] or row["predicted"]
        assert (point.cache_read, point.cache_write, point.uncached) == (
            tokens["cache_read"],
            tokens["cache_write"],
            tokens["uncached"],
        )
        assert point.cache_source == ("recorded" if row["actual"] else "predicted")
        assert point.cause == row["cause"]
        assert point.context_tokens == sum(tokens.values())
    assert dict(data.summary) == prefix["summary"]


def test_composition_of_each_request_is_what_inspect_counts(log: Path, tmp_path: Path) -> None:
    data = collect(str(log))
    for point, line in zip(data.points, log.read_text().splitlines(), strict=True):
        body = tmp_path / f"body-{point.index}.json"
        body.write_text(json.dumps(json.loads(line)["request"]["body"]))
        inspected = run_json("inspect", str(body))["tokens"]["by_kind"]
        assert {k: v for k, v in point.composition.items() if v} == {
            k: v for k, v in inspected.items() if v
        }


def test_tools_and_checkpoints(log: Path) -> None:
    data = collect(str(log))
    assert [name for name, _ in data.top_tools] == [HOSTILE_TOOL]
    last = data.points[-1]
    assert data.top_tools[0][1] == last.composition["tool_calls"] + last.composition["tool_results"]
    human = [p.index for p in data.points if p.human_turn]
    assert human == [0, 5]  # the first request and the one after the new human message
    assert [c.index for c in data.checkpoints] == [5]
    checkpoint = data.checkpoints[0]
    assert checkpoint.removable == sum(
        data.points[5].composition[k] for k in ("tool_calls", "tool_results", "thinking")
    )
    assert checkpoint.later_requests == 3 and checkpoint.saved_tokens >= 0


def test_hostile_text_is_escaped(log: Path) -> None:
    page = render(collect(str(log), command="ipse report log.jsonl"))
    assert "<script" not in page
    assert "\x1b" not in page or "&" in page
    assert "alert(1)" in page  # shown as text, escaped


def test_report_of_a_real_captured_log(shared_data: Path) -> None:
    path = shared_data / "anthropic-http" / "captured-2"
    data = collect(str(path))
    report = analyze(read_requests(path).requests)
    assert len(data.points) == len(report.rows)
    assert sum(p.cache_source == "recorded" for p in data.points) == len(data.points)


def test_cli_writes_one_page_and_json(log: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    document = run_json("report", str(log), "-o", str(out))
    page = out.read_text()
    assert page.startswith("<!doctype html>") and document["bytes"] == len(page.encode())
    assert len(document["requests"]) == 8
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page
