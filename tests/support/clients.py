"""Where the tests find the real client programs (Claude Code, Codex, Gemini CLI): the variable
`.ci/run` exports, the test cache it fills, or PATH. Without one a test skips, saying how to
install it, unless ``IPSE_REQUIRE_CLIENTS`` is set (CI), where it fails."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

CACHE = Path.home() / ".cache" / "ipse-test"


def client_binary(name: str, variable: str, cache_folder: str, package: str, label: str) -> str:
    """The path of a client program, or a skip (a failure under IPSE_REQUIRE_CLIENTS)."""
    cached = CACHE / cache_folder / "node_modules" / ".bin" / name
    for candidate in (os.environ.get(variable), str(cached), shutil.which(name)):
        if candidate and Path(candidate).exists():
            return candidate
    if os.environ.get("IPSE_REQUIRE_CLIENTS", "") not in ("", "0"):
        pytest.fail(f"the {label} is missing (IPSE_REQUIRE_CLIENTS is set)")
    pytest.skip(f"the {label} is not installed (npm i {package})")


def claude_binary() -> str:
    return client_binary(
        "claude", "IPSE_CLAUDE_BIN", "claude-code", "@anthropic-ai/claude-code", "Claude Code CLI"
    )


def codex_binary() -> str:
    return client_binary("codex", "IPSE_CODEX_BIN", "codex", "@openai/codex", "Codex CLI")


def gemini_binary() -> str:
    return client_binary("gemini", "IPSE_GEMINI_BIN", "gemini", "@google/gemini-cli", "Gemini CLI")
