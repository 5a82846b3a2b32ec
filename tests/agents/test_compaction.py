"""Where each agent CLI compacts its own conversation, from the settings its files hold.

Claude Code's rule and numbers are the ones measured with Claude Code 2.1.332 against a scripted
upstream (the compaction request arrived where the rule puts it: window 1M and max output 128k
-> 967,000; CLAUDE_CODE_AUTO_COMPACT_WINDOW=100000 -> 67,000; 40k is raised to the 100k
minimum; CLAUDE_AUTOCOMPACT_PCT_OVERRIDE 5 / 10 / 2 -> 49,000 / 98,000 / 19,600 on 1M, 100 and
50 -> 67,000 and 40,000 on 100k). Codex's limit is its ``model_auto_compact_token_limit``; Gemini
CLI's its ``model.compressionThreshold`` fraction (0.5 unless set) of the model's window.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ipse.agents._install import compaction_point

MILLION = 1_000_000


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in (
        "CODEX_HOME",
        "CLAUDE_CONFIG_DIR",
        "GEMINI_CLI_HOME",
        "CLAUDE_CODE_AUTO_COMPACT_WINDOW",
        "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE",
    ):
        monkeypatch.delenv(name, raising=False)
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def _settings(project: Path, value: dict[str, object]) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(value))


@pytest.mark.parametrize(
    ("settings", "window", "expected"),
    [
        ({}, MILLION, 967_000),
        ({"env": {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "100000"}}, MILLION, 67_000),
        ({"autoCompactWindow": 100_000}, MILLION, 67_000),
        ({"env": {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "40k"}}, MILLION, 67_000),
        ({"env": {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "banana"}}, MILLION, 967_000),
        ({"env": {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "5"}}, MILLION, 49_000),
        ({"env": {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "10"}}, MILLION, 98_000),
        ({"env": {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "2"}}, MILLION, 19_600),
        (
            {"env": {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "100"}, "autoCompactWindow": 100_000},
            MILLION,
            67_000,
        ),
        (
            {"env": {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"}, "autoCompactWindow": 100_000},
            MILLION,
            40_000,
        ),
        ({"autoCompactWindow": 2 * MILLION}, 200_000, 167_000),  # capped at the model's
    ],
)
def test_claude_code_compacts_where_it_was_measured_to(
    project: Path, settings: dict[str, object], window: int, expected: int
) -> None:
    _settings(project, settings)
    assert compaction_point("claude-code", project, window) == expected


def test_claude_code_reads_its_variables_from_the_environment_first(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _settings(project, {"env": {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "400000"}})
    monkeypatch.setenv("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "100000")
    assert compaction_point("claude-code", project, MILLION) == 67_000


def test_a_small_max_output_reserves_less(project: Path) -> None:
    assert compaction_point("claude-code", project, 200_000, max_output=8_000) == 179_000


def test_codex_compacts_at_its_configured_limit(project: Path) -> None:
    assert compaction_point("codex", project, 272_000) is None  # its model catalog decides
    config = project.parent / "home" / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('model = "gpt-5"\nmodel_auto_compact_token_limit = 150000\n')
    assert compaction_point("codex", project, 272_000) == 150_000


def test_gemini_compresses_at_a_fraction_of_the_window(project: Path) -> None:
    assert compaction_point("gemini", project, MILLION) == 500_000
    settings = project / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{\n  // mine\n  "model": {"compressionThreshold": 0.7}\n}\n')
    assert compaction_point("gemini", project, MILLION) == 700_000


def test_the_compaction_rule_of_a_session_format_takes_the_default_settings(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ipse.agents._install import compaction_rule

    # what a replay of a past session holds it to: the agent CLI's rule at its defaults,
    # whatever this machine's settings say now
    monkeypatch.setenv("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", "5")
    claude = compaction_rule("claude-code")
    assert claude is not None
    assert claude(MILLION, 128_000) == 967_000
    assert claude(200_000, 64_000) == 167_000
    codex = compaction_rule("codex")
    assert codex is not None and codex(400_000, 128_000) is None  # (its catalog decides)
    assert compaction_rule("http-log") is None
