"""Claude Code driven through a long session, headless: ``claude -p`` for the first turn, then
``claude -p --continue`` for each next one, in a project of its own with a fresh ``HOME`` and
``CLAUDE_CONFIG_DIR``.

The base URL is given both in the environment and in the project's ``.claude/settings.json``
``env`` block: with it only in the settings, every start first asks api.anthropic.com for remote
settings (offline: about 18 s of retries per turn). Tools ``Read`` and ``Bash`` are allowed up
front (``--allowedTools``), so nothing waits for a permission answer.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.support.long_session import prompt, write_files

TURN_TIMEOUT = 120


@dataclass
class ClaudeCodeSession:
    """Where one session runs, and how Claude Code is started there."""

    claude: str
    root: Path
    base_url: str
    settings_env: Mapping[str, str]
    turns_run: int = 0

    @property
    def project(self) -> Path:
        return self.root / "project"

    @classmethod
    def create(
        cls, claude: str, root: Path, base_url: str, settings_env: Mapping[str, str]
    ) -> ClaudeCodeSession:
        """A fresh home and project under ``root``; ``settings_env`` goes in the project's
        settings (the compaction window, say) beside the base URL."""
        session = cls(claude, root, base_url, dict(settings_env))
        for folder in (root / "home" / ".claude", session.project / ".claude"):
            folder.mkdir(parents=True, exist_ok=True)
        write_files(session.project)
        settings = {"env": {"ANTHROPIC_BASE_URL": base_url, **settings_env}}
        (session.project / ".claude" / "settings.json").write_text(json.dumps(settings))
        return session

    def env(self) -> dict[str, str]:
        home = self.root / "home"
        scrubbed = ("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE")
        env = {k: v for k, v in os.environ.items() if k not in scrubbed}
        env.update(
            HOME=str(home),
            CLAUDE_CONFIG_DIR=str(home / ".claude"),
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_AUTOUPDATER="1",
            ANTHROPIC_API_KEY="sk-ant-autopilot-test",
            ANTHROPIC_BASE_URL=self.base_url,
            **self.settings_env,
        )
        env.pop("ANTHROPIC_AUTH_TOKEN", None)
        return env

    def turn(self) -> subprocess.CompletedProcess[str]:
        """Run the next turn; the result of ``claude -p`` (its exit status and output)."""
        self.turns_run += 1
        argv = [self.claude, "-p", prompt(self.turns_run), "--allowedTools", "Read,Bash"]
        if self.turns_run > 1:
            argv.append("--continue")
        return subprocess.run(
            argv,
            env=self.env(),
            cwd=self.project,
            capture_output=True,
            text=True,
            timeout=TURN_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
