"""Gemini CLI driven through a long session, headless: ``gemini -p`` for the first turn, then
``gemini -p --resume latest`` for each next one, with a fresh ``HOME``, the project trusted and
``--yolo`` (a headless run cannot ask before ``run_shell_command``).

Gemini CLI reaches a local upstream through ``GOOGLE_GEMINI_BASE_URL`` (the Gemini API,
`tests.support.gemini_upstream`, which reports ``promptTokenCount`` = the body's JSON length / 4)
and compresses its history once the last reply's ``promptTokenCount`` reaches
``model.compressionThreshold`` (a fraction of the model's window; settings.json) of the window.

The model (`gemini_model`) works `tests.support.long_session`'s session with Gemini CLI's own
tools, ``read_file`` then ``run_shell_command``; the turn a function response belongs to is read
back from the call's arguments (a file name, a description), since Gemini's calls carry no id
here. The compression (`is_compression_request`: a ``generateContent`` whose system instruction
asks for a ``<state_snapshot>``, sent twice: the snapshot, then its self-check) is answered with
one. Side requests (no tools: routing, next speaker) get the JSON they ask for.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.long_session import (
    BASH_COMMAND,
    PROMPT_PATTERN,
    file_name,
    prompt,
    said,
    write_files,
)

MODEL = "gemini-2.5-flash"  # named: no routing by the default model's rules
TURN_TIMEOUT = 180
SNAPSHOT = (
    "<state_snapshot>\n<overall_goal>Read the data files one by one and run the build check "
    "after each.</overall_goal>\n<key_knowledge>Every file read so far held 30 KB; every check "
    "passed.</key_knowledge>\n</state_snapshot>"
)
_TURN = re.compile(r"data-(\d+)\.txt|turn (\d+)")


def is_compression_request(body: dict[str, Any]) -> bool:
    """Whether a Gemini API request is Gemini CLI's own history compression."""
    return "<state_snapshot>" in json.dumps(body.get("systemInstruction") or {})


def _side_request(body: dict[str, Any]) -> str:
    asked = json.dumps(body.get("generationConfig") or {})
    if "complexity_score" in asked:
        return json.dumps({"complexity_reasoning": "a short task", "complexity_score": 10})
    if "next_speaker" in asked:
        return json.dumps({"reasoning": "the answer is complete", "next_speaker": "user"})
    return "{}"


def _turn_of(call: dict[str, Any]) -> int:
    found = _TURN.search(json.dumps(call.get("args") or {}))
    return int(next(g for g in found.groups() if g)) if found else 1


def gemini_model(folder: Path) -> Any:
    """The model for Gemini CLI in a project whose data files are in ``folder``."""

    def reply(body: dict[str, Any]) -> Any:
        if is_compression_request(body):
            return SNAPSHOT
        if not body.get("tools"):
            return _side_request(body)
        contents = body.get("contents") or []
        parts = [p for p in (contents[-1].get("parts") or [])] if contents else []
        answered = [p["functionResponse"] for p in parts if "functionResponse" in p]
        calls = [
            p["functionCall"] for c in contents for p in c.get("parts") or [] if "functionCall" in p
        ]
        if answered and calls:
            n = _turn_of(calls[-1])
            if calls[-1].get("name") == "read_file":
                args = {"command": BASH_COMMAND, "description": f"Run the build check for turn {n}"}
                call = {"name": "run_shell_command", "args": args}
                return {"text": said(n)[1], "function_call": call}
            return said(n)[2]
        typed = [
            p.get("text", "")
            for c in contents
            if c.get("role") == "user"
            for p in c.get("parts") or []
        ]
        numbers = [int(m.group(1)) for t in typed for m in PROMPT_PATTERN.finditer(t)]
        n = numbers[-1] if numbers else 1
        call = {"name": "read_file", "args": {"file_path": str(folder / file_name(n))}}
        return {"text": said(n)[0], "function_call": call}

    return reply


@dataclass
class GeminiSession:
    """Where one session runs, and how Gemini CLI is started there."""

    gemini: str
    root: Path
    base_url: str
    turns_run: int = 0

    @property
    def project(self) -> Path:
        return self.root / "project"

    @classmethod
    def create(cls, gemini: str, root: Path, base_url: str, threshold: float) -> GeminiSession:
        """A fresh home and project under ``root``; compression at ``threshold`` of the
        window."""
        session = cls(gemini, root, base_url)
        settings = root / "home" / ".gemini"
        settings.mkdir(parents=True, exist_ok=True)
        session.project.mkdir(parents=True, exist_ok=True)
        write_files(session.project)
        (settings / "settings.json").write_text(
            json.dumps(
                {
                    "security": {"auth": {"selectedType": "gemini-api-key"}},
                    "model": {"compressionThreshold": threshold},
                }
            )
        )
        trusted = {str(session.project.resolve()): "TRUST_FOLDER"}
        (settings / "trustedFolders.json").write_text(json.dumps(trusted))
        return session

    def env(self) -> dict[str, str]:
        node = os.path.dirname(shutil.which("node") or "/usr/bin/node")
        return {
            "HOME": str(self.root / "home"),
            "PATH": f"/usr/bin:/bin:{node}",
            "GOOGLE_GEMINI_BASE_URL": self.base_url,
            "GEMINI_API_KEY": "k-autopilot-test",
        }

    def turn(self) -> subprocess.CompletedProcess[str]:
        """Run the next turn; the result of ``gemini -p`` (its exit status and output)."""
        self.turns_run += 1
        argv = [self.gemini, "-p", prompt(self.turns_run), "-m", MODEL, "--yolo"]
        if self.turns_run > 1:
            argv += ["--resume", "latest"]
        return subprocess.run(
            argv,
            env=self.env(),
            cwd=self.project,
            capture_output=True,
            text=True,
            timeout=TURN_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
