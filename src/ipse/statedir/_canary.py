"""``canary``: does an agent really read the state folder, or does it answer from nowhere?

A fake invariant carrying a random token is appended to ``10_invariants.md``; the agent command
runs with a prompt asking (a) the current next action according to ``99_next.md`` and (b) the
approaches that are off-limits according to ``10_invariants.md``. The check passes only when
the answer carries both the planted token and the recorded next action. The prompt goes to the
agent on stdin, in ``$IPSE_CANARY_PROMPT``, and in place of ``{prompt}`` in the command.

The folder lock is held throughout, and ``10_invariants.md`` is restored byte for byte
afterwards (atomically), so the folder is left as it was found, apart from one WAL line with
the result. ``resume`` takes no lock, so an agent may call it during the check.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipse.errors import UsageError
from ipse.fileio import StrPath
from ipse.statedir import _files as files
from ipse.statedir import _wal as wal
from ipse.statedir._gitinfo import short_revision
from ipse.statedir._ops import invariant_entry, writing

PROMPT = """\
Your working state is kept in the folder {folder}: its files are read in lexicographic order
(00_goal.md first, 99_next.md last). Read them now and answer from them, quoting exactly:
(a) What is the current next action, according to {folder}/99_next.md?
(b) Which approaches are off-limits, according to {folder}/10_invariants.md? List every one,
    with any identifier it carries.
"""


@dataclass(frozen=True)
class CanaryResult:
    """The outcome of one canary run."""

    passed: bool
    token: str
    expected_next: str
    has_token: bool
    has_next: bool
    exit_code: int | None
    answer: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "reason": self.reason,
            "token": self.token,
            "expected_next": self.expected_next,
            "has_token": self.has_token,
            "has_next": self.has_next,
            "agent_exit_code": self.exit_code,
            "answer": self.answer,
        }


def _normal(text: str) -> str:
    return " ".join(text.split()).casefold()


def _run_agent(command: str, prompt: str, cwd: Path, timeout: float) -> tuple[int | None, str]:
    import shlex
    import subprocess  # here, not at the top: a SessionStart hook imports this package

    line = command.replace("{prompt}", shlex.quote(prompt))
    env = {**os.environ, "IPSE_CANARY_PROMPT": prompt}
    try:
        done = subprocess.run(
            line,
            shell=True,
            input=prompt,
            capture_output=True,
            text=True,
            errors="replace",
            cwd=cwd,
            env=env,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout if isinstance(exc.stdout, str) else ""
        return None, out
    return done.returncode, done.stdout


def _judge(token: str, expected: str, code: int | None, answer: str) -> tuple[bool, bool, str]:
    has_token = token.casefold() in answer.casefold()
    has_next = _normal(expected) in _normal(answer)
    if code is None:
        return has_token, has_next, "the agent timed out"
    if code != 0:
        return has_token, has_next, f"the agent exited with status {code}"
    missing = [
        what
        for what, ok in (
            ("the planted invariant's token", has_token),
            ("the next action", has_next),
        )
        if not ok
    ]
    if missing:
        return has_token, has_next, "the answer lacks " + " and ".join(missing)
    return has_token, has_next, "the answer carries the planted token and the next action"


def canary(folder: StrPath, command: str, timeout: float = 600.0) -> CanaryResult:
    """Plant, ask, judge, restore, and log the result (see the module docstring)."""
    folder = Path(folder)
    if not command.strip():
        raise UsageError("--agent is empty")
    files.require_folder(folder)
    path = folder / files.INVARIANTS
    import secrets

    token = f"canary-{secrets.token_hex(6)}"
    with writing(folder):
        found = wal.last_next(folder / files.WAL)
        step = found.match.next_step() if found.match is not None else None
        if step is None:
            raise UsageError(f"{folder / files.WAL}: no recorded next step to ask about")
        expected = step[0]
        original = files.read_bytes(path)
        planted = invariant_entry(
            f"Do not use the {token} approach",
            "it was tried and it corrupted the build cache",
        ).encode("utf-8")
        base = original or b""
        lead = b"\n" if base and not base.endswith(b"\n") else b""
        try:
            files.write_file(path, base + lead + planted)
            prompt = PROMPT.format(folder=folder.resolve())
            code, answer = _run_agent(command, prompt, files.project_root(folder), timeout)
        finally:
            if original is None:
                path.unlink(missing_ok=True)
            else:
                files.write_file(path, original)
        has_token, has_next, reason = _judge(token, expected, code, answer)
        passed = has_token and has_next and code == 0
        wal.append(
            folder / files.WAL,
            wal.new_body(
                "canary",
                ("passed: " if passed else "failed: ") + reason,
                short_revision(files.project_root(folder)),
                passed=passed,
                token=token,
            ),
        )
    return CanaryResult(passed, token, expected, has_token, has_next, code, answer, reason)
