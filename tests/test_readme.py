"""Every command the README and the documentation pages show works as written.

The README and docs/*.md are read when the test runs (they change often): each ``ipse ...``
command of a page's fenced ``sh`` blocks runs, in order, in a scratch folder of that page's own
holding what the pages tell a user to have there: the files their ``toml`` blocks name in their
first line (``# twin.toml``), the files the page's ``echo ... > FILE`` lines write, the examples
folder of the checkout, and the placeholders the pages use for the user's own data
(``SESSION.jsonl``, ``captured-requests/``, ...) made from the example session. Each command
must exit 0. A line that is not an ``ipse`` command is run when it only writes a file
(``echo``), and is otherwise matched by `NOT_RUN`, with the reason; so is an ``ipse`` command
that runs until stopped, or that may leave a proxy running. A line of another kind fails the
test until it is run or listed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

from tests.conftest import EXAMPLE_SESSION, REPO, run_cli

README = REPO / "README.md"
# The README and the documentation site's pages, each run in a scratch folder of its own.
PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]


def _all_text() -> str:
    return "\n".join(page.read_text(encoding="utf-8") for page in PAGES)


# A line (or a part of one joined by &&) that matches -> why the test does not run it.
NOT_RUN = {
    r"pip ": "installs into the environment: the extras it names are checked against "
    "pyproject.toml by test_every_extra_the_readme_installs_exists_and_comes_from_the_checkout",
    r"python ": "the test suite itself, or the user's own agent script",
    r"[A-Z_]+=\S* ": "starts the user's agent (Claude Code, a script) against a running proxy",
    r"ipse (proxy|mcp)\b": "a server that runs until stopped (tests/proxy and tests/mcp run it)",
    r"ipse .*--proxy\b": "may start a proxy on the shared port 8765, which no test may leave "
    "behind or stop (tests/harness run it with a scripted upstream)",
}

# Words the README uses for the user's own values -> the value in the scratch folder.
PLACEHOLDERS = {"SESSION_ID": "the example session's id"}


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def _parts(text: str) -> list[str]:
    """The commands of the README's sh blocks: one per line, lines joined by && split apart,
    comments left to the shell."""
    parts: list[str] = []
    for block in _blocks(text, "sh"):
        for line in block.splitlines():
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts.extend(part.strip() for part in line.split(" && "))
    return parts


def _not_run(part: str) -> str | None:
    for pattern, reason in NOT_RUN.items():
        if re.match(pattern, part):
            return reason
    return None


def _example_session_id() -> str:
    for line in EXAMPLE_SESSION.read_text().splitlines():
        record = json.loads(line)
        if isinstance(record, dict) and record.get("sessionId"):
            return str(record["sessionId"])
    raise AssertionError("the example session names no sessionId")


def _scratch(folder: Path, text: str) -> dict[str, str]:
    """Fill ``folder`` with what the README's commands expect; the environment to run them in."""
    shutil.copytree(REPO / "examples", folder / "examples")
    for block in _blocks(text, "toml"):
        heading = block.splitlines()[0]
        assert heading.startswith("# "), f"a toml block that names no file: {heading!r}"
        name = heading[2:].strip()
        tomllib.loads(block)  # the README shows valid TOML
        (folder / name).write_text(block)
    # the user's own data, as the README names it
    shutil.copy(EXAMPLE_SESSION, folder / "SESSION.jsonl")
    shutil.copy(EXAMPLE_SESSION, folder / "before.json")
    first: dict[str, Any] = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": [{"type": "text", "text": "You are a careful coding agent."}],
        "messages": [{"role": "user", "content": "List the files."}],
    }
    second = {
        **first,
        "messages": [
            *first["messages"],
            {"role": "assistant", "content": "README.md and src/."},
            {"role": "user", "content": "Thanks."},
        ],
    }
    (folder / "captured-requests").mkdir()
    (folder / "captured-requests" / "001.json").write_text(json.dumps(first))
    (folder / "captured-requests" / "002.json").write_text(json.dumps(second))
    (folder / "request.json").write_text(json.dumps(second))
    user = folder / "user-home"
    user.mkdir()
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("IPSE_", "CLAUDE_", "CODEX_", "GEMINI_"))
    }
    env.update(
        HOME=str(user),
        XDG_CONFIG_HOME=str(user / ".config"),
        XDG_DATA_HOME=str(user / ".local" / "share"),
        CODEX_HOME=str(user / ".codex"),
        IPSE_HOME=str(folder / "ipse-home"),
        PYTHONPATH=os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")]),
        COLUMNS="120",
    )
    return env


def test_every_ipse_command_in_the_readme_and_the_docs_runs_as_written(tmp_path: Path) -> None:
    values = {"SESSION_ID": _example_session_id()}
    assert set(values) == set(PLACEHOLDERS)
    # `ipse` is this checkout's, whatever is installed: a shell function over the interpreter
    prelude = f'ipse() {{ "{sys.executable}" -m ipse "$@"; }}\n'
    ran: list[str] = []
    failed: list[tuple[str, str, str]] = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        if not _parts(text):
            continue
        folder = tmp_path / page.stem
        folder.mkdir()
        env = _scratch(folder, _all_text())  # a page may use the config another shows
        done = _run_all(text, folder, env, values, prelude, ran)
        failed.extend((page.name, part, why) for part, why in done)
    assert failed == []
    assert len(ran) >= 10, ran  # the pages' commands were found
    readme = [
        part for part in _parts(README.read_text(encoding="utf-8")) if part.startswith("ipse ")
    ]
    assert len(readme) >= 3, readme  # the README shows commands of its own


def _run_all(
    text: str,
    folder: Path,
    env: dict[str, str],
    values: dict[str, str],
    prelude: str,
    ran: list[str],
) -> list[tuple[str, str]]:
    failed: list[tuple[str, str]] = []
    for part in _parts(text):
        if _not_run(part) is not None:
            continue
        if part.startswith("echo ") and ">" in part:
            command = part  # writes a file the next commands read
        elif part.startswith("ipse "):
            command = part
            for word, value in values.items():
                command = re.sub(rf"\b{word}\b", value, command)
            ran.append(part)
        else:
            failed.append((part, "not an ipse command: run it here or list it in NOT_RUN"))
            continue
        done = subprocess.run(
            ["bash", "-c", prelude + command],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if done.returncode != 0:
            failed.append((part, f"exit {done.returncode}: {done.stderr.strip()[-400:]}"))
    return failed


def test_every_extra_the_readme_installs_exists_and_comes_from_the_checkout() -> None:
    text = _all_text()
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    named = re.findall(r"pip install '\.\[([a-z-]+)\]'", text)
    assert named and set(named) <= set(extras)
    # ipse is installed from its source folder, not from a package index
    assert re.findall(r"pip install '?ipse\b", text) == []


def test_the_print_commands_the_readme_names_in_its_text_run_as_written() -> None:
    """``ipse micro-handoff tool`` and ``prompt`` are quoted inline, with no argument."""
    quoted = re.findall(r"`(ipse micro-handoff [a-z]+)`", _all_text())
    assert "ipse micro-handoff tool" in quoted and "ipse micro-handoff prompt" in quoted
    for command in quoted:
        done = run_cli(*command.split()[1:])
        assert done.returncode == 0 and done.stdout and not done.stderr, (command, done.stderr)
