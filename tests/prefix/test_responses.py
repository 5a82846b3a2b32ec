"""``ipse prefix`` and ``ipse lint`` on OpenAI Responses bodies and Codex rollouts."""

from __future__ import annotations

import itertools
from pathlib import Path

import orjson
import pytest

from ipse.cli.main import main
from ipse.prefix._hashing import Flattener
from ipse.prefix._requests import read_requests
from ipse.prefix._rules import rules
from ipse.transcript._formats.codex import rollout_requests
from tests.handoff.test_cli_responses import BODY


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    out, _ = capsys.readouterr()
    code = exit_info.value.code
    return int(code) if isinstance(code, int) else 0, out


def test_a_responses_body_flattens_instructions_then_one_position_per_item() -> None:
    flat = Flattener(rules("openai")).flatten(BODY)
    layers = [where[0] for where in flat.where if where[0] != "settings"]
    items = len(BODY["input"])
    # the body ends with the model's pending call: all of it is history, no new input
    assert layers == ["system", "tools", *["history"] * items]
    assert flat.messages == items
    output = {"type": "function_call_output", "call_id": "call_3", "output": "ok"}
    appended = Flattener(rules("openai")).flatten({**BODY, "input": [*BODY["input"], output]})
    assert appended.where[-1] == ("input", items, 0)
    assert appended.chain[: len(flat.chain)] == flat.chain


def test_prefix_and_lint_read_a_responses_body(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "body.json"
    path.write_bytes(orjson.dumps(BODY))
    code, out = _run(["prefix", str(path), "--json"], capsys)
    assert code == 0
    document = orjson.loads(out)
    assert document["provider"] == "openai"
    assert document["summary"]["requests"] == 1
    code, _ = _run(["lint", str(path)], capsys)
    assert code in (0, 1)


def test_codex_requests_carry_the_recorded_cached_tokens(shared_data: Path) -> None:
    for path in sorted((shared_data / "codex").glob("*.jsonl")):
        calls = list(rollout_requests(path))
        records = [orjson.loads(line) for line in path.read_bytes().splitlines()]
        totals = {
            orjson.dumps(r["payload"]["info"]["total_token_usage"])
            for r in records
            if r["type"] == "event_msg"
            and r["payload"].get("type") == "token_count"
            and r["payload"].get("info")
        }
        with_usage = [c for c in calls if c.usage is not None]
        assert len(with_usage) == len(totals)  # each distinct count belongs to one call
        first = with_usage[0].usage
        assert first is not None and first["input_tokens_details"]["cached_tokens"] >= 0
        # every request extends its input, except across the compaction
        grown = sum(
            len(b.body["input"]) >= len(a.body["input"]) for a, b in itertools.pairwise(calls)
        )
        assert grown >= len(calls) - 2
        log = read_requests(path)
        assert log.format == "codex" and len(log.requests) == len(calls)


def test_prefix_on_a_codex_rollout_compares_with_recorded_usage(
    shared_data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for path in sorted((shared_data / "codex").glob("*.jsonl")):
        code, out = _run(["prefix", str(path), "--json"], capsys)
        assert code == 0
        summary = orjson.loads(out)["summary"]
        agreement = summary["agreement"]
        assert agreement["compared"] == summary["requests"] > 50
        assert agreement["share"] > 0.75
        predicted, actual = agreement["cache_read"]["predicted"], agreement["cache_read"]["actual"]
        assert abs(predicted - actual) <= 0.05 * actual


def test_each_codex_row_holds_the_recorded_cached_input_tokens_and_says_if_it_agrees(
    shared_data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for path in sorted((shared_data / "codex").glob("*.jsonl")):
        recorded: list[int] = []
        last_total = None
        for line in path.read_bytes().splitlines():
            record = orjson.loads(line)
            payload = record.get("payload") or {}
            info = payload.get("info") if payload.get("type") == "token_count" else None
            if record.get("type") != "event_msg" or not info:
                continue
            if info["total_token_usage"] != last_total:  # a repeated count is the same call's
                last_total = info["total_token_usage"]
                recorded.append(info["last_token_usage"]["cached_input_tokens"])
        code, out = _run(["prefix", str(path), "--json"], capsys)
        document = orjson.loads(out)
        rows = [r for r in document["requests"] if r["actual"] is not None]
        assert code == 0 and [r["actual"]["cache_read"] for r in rows] == recorded
        tolerance = [max(128, 0.05 * sum(r["actual"].values())) for r in rows]
        assert [r["agrees"] for r in rows] == [
            abs(r["predicted"]["cache_read"] - r["actual"]["cache_read"]) <= t
            for r, t in zip(rows, tolerance, strict=True)
        ]
        agreement = document["summary"]["agreement"]
        assert sum(r["agrees"] for r in rows) == agreement["agreeing"]
        human = _run(["prefix", str(path)], capsys)[1]
        if not all(r["agrees"] for r in rows):
            assert "agrees no: the recorded read differs" in human
