"""Codex driven through a long session, headless: ``codex exec`` for the first turn, then
``codex exec resume <session id>`` for each next one, with a fresh ``HOME`` and ``CODEX_HOME``.

Codex reaches a local upstream only through a model provider in its ``config.toml`` (the
Responses API, no WebSocket transport; ``OPENAI_BASE_URL`` alone is not used), and compacts its
own conversation once the usage reaches ``model_auto_compact_token_limit`` (written there too).

The model (`codex_model`) works `tests.support.long_session`'s session through Codex's ``exec``
code tool (``await tools.exec_command({cmd: ...})``), the one tool Codex's default model calls
every tool through. Codex's compaction request (`is_codex_compaction_request`) is answered with
the session's summary.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.long_session import (
    BASH_COMMAND,
    PROMPT_PATTERN,
    SUMMARY,
    file_name,
    prompt,
    said,
    write_files,
)

TURN_TIMEOUT = 120


def _codex_answered(body: dict[str, Any]) -> str:
    """The call id of the newest tool output, unless a prompt came after it ('' then): a user
    message that is neither (a proxy's nudge to checkpoint, which this model does not follow)
    is passed over, as a model that goes on with its task does."""
    for item in reversed([i for i in body.get("input") or [] if isinstance(i, dict)]):
        if item.get("type") in ("custom_tool_call_output", "function_call_output"):
            return str(item.get("call_id", ""))
        if item.get("role") == "user" and PROMPT_PATTERN.search(json.dumps(item.get("content"))):
            return ""
    return ""


def _codex_user_texts(body: dict[str, Any]) -> list[str]:
    return [
        "\n".join(b.get("text", "") for b in item.get("content") or [] if isinstance(b, dict))
        for item in body.get("input") or []
        if isinstance(item, dict) and item.get("role") == "user"
    ]


CODEX_COMPACTION_MARK = "CONTEXT CHECKPOINT COMPACTION"


def is_codex_compaction_request(body: dict[str, Any]) -> bool:
    """Whether a Responses request is Codex's own compaction (its last user message is Codex's
    summarisation prompt)."""
    users = _codex_user_texts(body)
    return bool(users) and CODEX_COMPACTION_MARK in users[-1]


def codex_model(body: dict[str, Any]) -> Any:
    """The model for Codex (Responses API): every tool through its ``exec`` code tool."""
    if is_codex_compaction_request(body):
        return SUMMARY
    answered = _codex_answered(body)
    if answered:
        n = int(answered.rsplit("_", 1)[1])
    else:
        prompts = [
            int(m.group(1)) for t in _codex_user_texts(body) for m in PROMPT_PATTERN.finditer(t)
        ]
        n = prompts[-1] if prompts else 1
    before_read, before_bash, done = said(n)
    if answered.startswith("call_read_"):
        code = f'const r = await tools.exec_command({{cmd: "{BASH_COMMAND}"}});\ntext(r.output);\n'
        call = {"id": f"call_bash_{n:03d}", "name": "exec", "input": code}
        return {"text": before_bash, "custom_tool_call": call}
    if answered.startswith("call_bash_"):
        return done
    code = f'const r = await tools.exec_command({{cmd: "cat {file_name(n)}"}});\ntext(r.output);\n'
    call = {"id": f"call_read_{n:03d}", "name": "exec", "input": code}
    return {"text": before_read, "custom_tool_call": call}


@dataclass
class CodexSession:
    """Where one session runs, and how Codex is started there."""

    codex: str
    root: Path
    session_id: str = ""
    turns_run: int = 0

    @property
    def project(self) -> Path:
        return self.root / "project"

    @property
    def codex_home(self) -> Path:
        return self.root / "home" / ".codex"

    @classmethod
    def create(cls, codex: str, root: Path, base_url: str, compact_limit: int) -> CodexSession:
        """A fresh home and project under ``root``; Codex's provider at ``base_url`` (an origin:
        Codex calls ``{base_url}/v1/responses``)."""
        session = cls(codex, root)
        session.codex_home.mkdir(parents=True, exist_ok=True)
        session.project.mkdir(parents=True, exist_ok=True)
        write_files(session.project)
        (session.codex_home / "config.toml").write_text(
            f'model_provider = "local"\nmodel_auto_compact_token_limit = {compact_limit}\n\n'
            f'[model_providers.local]\nname = "local"\nbase_url = "{base_url}/v1"\n'
            'env_key = "OPENAI_API_KEY"\nwire_api = "responses"\nsupports_websockets = false\n'
        )
        return session

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "OPENAI_BASE_URL"}
        env.update(
            HOME=str(self.root / "home"),
            CODEX_HOME=str(self.codex_home),
            OPENAI_API_KEY="sk-autopilot-test",
        )
        return env

    def turn(self) -> subprocess.CompletedProcess[str]:
        """Run the next turn; the result of ``codex exec`` (its exit status and output)."""
        self.turns_run += 1
        argv = [self.codex, "exec", "--skip-git-repo-check"]
        text = prompt(self.turns_run)
        argv += ["resume", self.session_id, text] if self.session_id else [text]
        done = subprocess.run(
            argv,
            env=self.env(),
            cwd=self.project,
            capture_output=True,
            text=True,
            timeout=TURN_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
        found = re.search(r"session id: (\S+)", done.stderr + done.stdout)
        self.session_id = self.session_id or (found.group(1) if found else "")
        return done
