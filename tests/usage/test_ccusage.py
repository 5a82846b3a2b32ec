"""``ipse usage`` against ccusage on the shared sessions, where ccusage is installed.

ccusage is the tool people run for this bill. Where both count the same thing (tokens of each
kind and cost, by day and model, for Claude Code and Codex) the totals must be equal. Where
they differ, the records say who is right: ccusage's ``session`` report leaves out the calls of
a sub-agent that appear only in its parent's ``progress`` records (its ``daily`` report counts
them), and those calls are billed: each has its own response id, request id and usage.

The binary is ``IPSE_CCUSAGE_BIN``, else ``ccusage`` on the PATH (``python bench/usage.py``
installs it from npm); without one the tests are skipped, saying so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SHARED, CliRun
from tests.usage.history import shared_history

pytestmark = SHARED


def _ccusage() -> str:
    found = os.environ.get("IPSE_CCUSAGE_BIN") or shutil.which("ccusage")
    if not found:
        pytest.skip("ccusage is not installed (set IPSE_CCUSAGE_BIN; bench/usage.py installs it)")
    return found


def _run(binary: str, args: list[str], env: dict[str, str]) -> Any:
    done = subprocess.run([binary, *args, "--json", "--offline", "-z", "UTC"], env=env,
                          capture_output=True, text=True, check=True, timeout=120)  # fmt: skip
    return json.loads(done.stdout)


@pytest.fixture
def history(shared_data: Path, tmp_path: Path) -> dict[str, str]:
    claude, codex = shared_history(shared_data, tmp_path)
    (tmp_path / "home").mkdir()
    return {**os.environ, "HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(claude),
            "CODEX_HOME": str(codex), "GEMINI_CLI_HOME": str(tmp_path / "home")}  # fmt: skip


def test_daily_totals_by_day_and_model_are_ccusages(cli: CliRun, history: dict[str, str]) -> None:
    theirs = _run(_ccusage(), ["daily"], history)
    mine = json.loads(cli("usage", "--json", "--timezone", "UTC", env=history).stdout)
    expected = {
        (row["period"], m["modelName"]): (m["inputTokens"], m["cacheCreationTokens"],
                                         m["cacheReadTokens"], m["outputTokens"], m["cost"])
        for row in theirs["daily"] for m in row["modelBreakdowns"]
    }  # fmt: skip
    got = {
        (row["label"], model): (m["input_tokens"],
                                m["cache_write_5m_tokens"] + m["cache_write_1h_tokens"],
                                m["cache_read_tokens"], m["output_tokens"], m["cost_usd"])
        for row in mine["rows"] for model, m in row["models"].items()
    }  # fmt: skip
    assert set(got) == set(expected)
    for key, values in expected.items():
        assert got[key][:4] == values[:4], key
        assert got[key][4] == pytest.approx(values[4], rel=1e-6, abs=1e-6), key


def test_ccusages_session_report_leaves_out_billed_sub_agent_calls(
    cli: CliRun, history: dict[str, str], shared_data: Path
) -> None:
    binary = _ccusage()
    daily = _run(binary, ["claude", "daily"], history)["totals"]
    sessions = _run(binary, ["claude", "session"], history)["totals"]
    left_out = daily["inputTokens"] - sessions["inputTokens"]
    assert left_out > 0 and daily["outputTokens"] > sessions["outputTokens"]
    # the calls left out: the haiku sub-agent's, only in subagent.jsonl's progress records
    keys, tokens = set(), 0
    for line in (shared_data / "claude-code" / "subagent.jsonl").read_text().splitlines():
        record = json.loads(line)
        inner = (record.get("data") or {}).get("message") or {}
        message = inner.get("message") or {}
        haiku = message.get("model", "").startswith("claude-haiku")
        if (
            record.get("type") == "progress"
            and haiku
            and (message["id"], inner["requestId"]) not in keys
        ):
            keys.add((message["id"], inner["requestId"]))
            tokens += message["usage"]["input_tokens"]
    assert len(keys) == 5 and tokens == left_out  # five billed calls, ids and usage of their own
    mine = json.loads(cli("usage", "--json", "--by", "session", env=history).stdout)
    assert (
        sum(r["input_tokens"] for r in mine["rows"] if "gpt" not in str(r["models"]))
        == daily["inputTokens"]
    )
