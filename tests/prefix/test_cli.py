"""``ipse prefix`` and ``ipse lint`` from the command line."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from ipse.cli.main import main

from ..conftest import HTTP_LOG, SHARED
from .util import body


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    out, err = capsys.readouterr()
    code = exit_info.value.code
    return int(code) if isinstance(code, int) else 0, out, err


@SHARED
def test_prefix_json_document(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["prefix", str(HTTP_LOG), "--json"], capsys)
    assert code == 0
    document = orjson.loads(out)
    assert document["provider"] == "anthropic"
    row = document["requests"][1]
    assert set(row) >= {
        "index",
        "time",
        "model",
        "predicted",
        "actual",
        "cause",
        "detail",
        "cost_lost_usd",
    }
    assert row["index"] == 1
    assert set(row["predicted"]) == {"cache_read", "cache_write", "uncached"}
    assert document["summary"]["agreement"]["compared"] == 18


@SHARED
def test_prefix_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["prefix", str(HTTP_LOG)], capsys)
    assert code == 0
    assert "hit rate" in out and "agreement with recorded usage" in out


def test_prefix_without_times_says_ttl_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bodies.jsonl"
    path.write_bytes(orjson.dumps(body(1)) + b"\n" + orjson.dumps(body(2)) + b"\n")
    code, out, err = _run(["prefix", str(path), "--json"], capsys)
    assert code == 0
    assert orjson.loads(out)["summary"]["ttl_analysis"].startswith("skipped")
    code, out, err = _run(["prefix", str(path)], capsys)
    assert "TTL analysis skipped" in err and "Traceback" not in err


def test_prefix_bad_input_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"model": "x", "messages": []}\n')
    code, _, err = _run(["prefix", str(path)], capsys)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("ipse: error:")


def test_lint_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clean = tmp_path / "clean.json"
    clean.write_bytes(orjson.dumps(body(2)))
    code, out, _ = _run(["lint", str(clean)], capsys)
    assert code == 0 and "no problems" in out
    dirty = body(2)
    dirty["system"][0]["text"] = "Current time: 2026-01-05 09:00:00. " + dirty["system"][0]["text"]
    bad = tmp_path / "dirty.json"
    bad.write_bytes(orjson.dumps(dirty))
    code, out, _ = _run(["lint", str(bad), "--json"], capsys)
    assert code == 1
    document = orjson.loads(out)
    assert document["ok"] is False
    assert document["findings"][0]["code"] == "volatile_system"


@pytest.mark.parametrize("command", ["prefix", "lint"])
def test_help_has_an_example(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run([command, "--help"], capsys)
    assert code == 0 and "Examples:" in out


def _idle_session(tmp_path: Path) -> Path:
    from .sessions import Session, text, usage

    s = Session()
    s.user("start the work " * 40)
    s.assistant(text("a"), usage(0, 30_000), message_id="m1")
    s.user("more " * 10, after=20 * 60)
    s.assistant(text("b"), usage(0, 30_300), message_id="m2")
    return s.write(tmp_path / "idle.jsonl")


@pytest.mark.parametrize(
    ("limit", "code"),
    [("0.01", 1), ("$0.50", 0), ("40%", 1), ("60%", 0), ("0", 1)],
)
def test_prefix_fail_over_is_a_ci_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], limit: str, code: int
) -> None:
    # a $0.1725 loss on a $0.4157 bill (41.5%)
    got, out, err = _run(["prefix", str(_idle_session(tmp_path)), "--fail-over", limit], capsys)
    assert got == code
    assert ("exceeds" in err) == (code == 1)
    assert "ttl_expired" in out


def test_prefix_fail_over_refuses_a_bad_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(["prefix", str(_idle_session(tmp_path)), "--fail-over", "lots"], capsys)
    assert code == 2 and "--fail-over" in err and len(err.strip().splitlines()) == 1


def test_prefix_min_tokens_and_the_advice_on_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _idle_session(tmp_path)
    _, out, _ = _run(["prefix", str(path)], capsys)
    assert "fix ttl_expired:" in out and "keep-alive: 4 ping(s)" in out
    _, out, _ = _run(["prefix", str(path), "--min-tokens", "40000", "--json"], capsys)
    document = orjson.loads(out)
    assert document["summary"]["min_tokens"] == 40_000
    assert document["summary"]["cost_lost_usd"] == 0
