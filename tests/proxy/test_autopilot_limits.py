"""Where the proxy's autopilot holds a request: the client it came from, the model in its bytes,
and the agent CLI's compaction point with the settings its environment holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from ipse.handoff._shared import AutopilotPolicy, Limits, could_act, limits_for
from ipse.proxy._autopilot import client_agent, limits, model_in


@pytest.mark.parametrize(
    ("headers", "agent"),
    [
        ({"user-agent": "claude-cli/2.1.332 (external, cli)"}, "claude-code"),
        ({"user-agent": "codex_cli_rs/0.169.0 (Ubuntu 24.4.0; x86_64)"}, "codex"),
        ({"user-agent": "python-httpx/0.28", "originator": "codex_exec"}, "codex"),
        ({"user-agent": "python-httpx/0.28"}, None),
        ({}, None),
    ],
)
def test_the_client_is_told_by_its_user_agent_or_originator(
    headers: dict[str, str], agent: str | None
) -> None:
    assert client_agent(headers) == agent


def test_the_model_is_found_in_the_bytes_not_in_a_string() -> None:
    body = (
        b'{"messages":[{"role":"user","content":"{\\"model\\": \\"evil\\"}"}],"model":"claude-x"}'
    )
    assert model_in(body) == "claude-x"
    assert model_in(b'{"messages":[]}') is None


def test_claude_codes_compaction_point_bounds_its_requests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / ".claude"))
    monkeypatch.setenv("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "100000")
    limits.cache_clear()
    try:
        found = limits("claude-opus-5-5", "anthropic", "claude-code")
        window = limits_for("claude-opus-5-5", "anthropic")
        assert found.compaction == 100_000 - min(window.max_output, 20_000) - 13_000
        assert limits("claude-opus-5-5", "anthropic", None).compaction is None
    finally:
        limits.cache_clear()


def test_a_body_too_small_for_the_soft_threshold_is_never_read() -> None:
    bounds = Limits(window=200_000, max_output=32_000)  # limit 168,000: soft at least 42,000
    assert not could_act(100_000, AutopilotPolicy(), bounds)
    assert could_act(200_000, AutopilotPolicy(), bounds)
    assert not could_act(10**9, AutopilotPolicy(mode="off"), bounds)
    assert could_act(4_000, AutopilotPolicy(soft=1_000, hard=2_000), bounds)


def test_a_started_proxy_gets_the_autopilot_settings_it_was_asked_for() -> None:
    from ipse.cli.proxy import _argv, _config

    given = {
        "host": "127.0.0.1", "port": 1, "read_timeout": 5.0, "workers": 1,
        "anthropic_upstream": None, "openai_upstream": None, "record": None, "store": None,
        "json_log": False, "no_handoff": False, "no_analysis": False, "tool_names": (),
        "handoff_budget": None, "autopilot": "nudge", "autopilot_soft": 5000,
        "autopilot_hard": None,
    }  # fmt: skip
    config = _config(**given)
    assert config.autopilot == AutopilotPolicy(mode="nudge", soft=5000)
    assert config.autopilot_settings() == {"mode": "nudge", "soft": 5000, "hard": None}
    argv = " ".join(_argv(given))
    assert "--autopilot nudge --autopilot-soft 5000" in argv and "--autopilot-hard" not in argv
    assert config.digest() != _config(**{**given, "autopilot": "cut"}).digest()


def test_no_handoff_turns_the_autopilot_off() -> None:
    from ipse.cli.proxy import _config

    given = {
        "host": "127.0.0.1", "port": 1, "read_timeout": 5.0, "workers": 1,
        "anthropic_upstream": None, "openai_upstream": None, "record": None, "store": None,
        "json_log": False, "no_handoff": True, "no_analysis": False, "tool_names": (),
        "handoff_budget": None, "autopilot": "cut", "autopilot_soft": None,
        "autopilot_hard": None,
    }  # fmt: skip
    assert _config(**given).autopilot_settings()["mode"] == "off"
