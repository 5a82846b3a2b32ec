"""A Codex rollout forked from an earlier task: its calls are counted, what it holds of the
parent is said. The real Codex CLI's ``codex exec fork`` writes a rollout that names its parent
(``session_meta.forked_from_id``) and holds none of the parent's items, its token totals going
on from the parent's; a rollout that holds copies of the parent's calls (written before the
fork began) counts them as the parent's, billed there."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

from ipse.prefix import analyze, read_requests
from tests.support.clients import codex_binary
from tests.support.openai_upstream import openai_upstream

READ = 'const r = await tools.exec_command({cmd: "cat notes.txt"});\ntext(r.output);\n'


def _model(body: dict[str, Any]) -> Any:
    said = json.dumps(body.get("input", []))
    if "Fork prompt" in said:
        return "Forked answer."
    if "call_read_1" in said:
        return "First answer."
    return {
        "text": "reading",
        "custom_tool_call": {"id": "call_read_1", "name": "exec", "input": READ},
    }


def test_a_real_fork_names_its_parent_and_counts_its_own_calls(tmp_path: Path) -> None:
    codex = codex_binary()
    home, project = tmp_path / "home", tmp_path / "project"
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True)
    project.mkdir()
    (project / "notes.txt").write_text("the parser reads 12.5 MB/s\n")
    env = {k: v for k, v in os.environ.items() if k not in ("CODEX_HOME", "OPENAI_BASE_URL")}
    env.update(HOME=str(home), CODEX_HOME=str(codex_home), OPENAI_API_KEY="sk-test-0000")
    with openai_upstream(_model) as upstream:
        (codex_home / "config.toml").write_text(
            'model_provider = "scripted"\n[model_providers.scripted]\nname = "scripted"\n'
            f'base_url = "{upstream.url}/v1"\nenv_key = "OPENAI_API_KEY"\nwire_api = "responses"\n'
        )

        def run(*argv: str) -> str:
            done = subprocess.run(
                [codex, "exec", "--skip-git-repo-check", *argv],
                cwd=project,
                env=env,
                capture_output=True,
                text=True,
                timeout=180,
            )
            assert done.returncode == 0, done.stderr[-1500:]
            return done.stdout + done.stderr

        first = run("First prompt: read notes.txt")
        parent = re.search(r"session id: (\S+)", first)
        assert parent is not None
        forked = re.search(r"session id: (\S+)", run("fork", parent.group(1), "Fork prompt: go on"))
        assert forked is not None
    (path,) = codex_home.rglob(f"rollout-*{forked.group(1)}.jsonl")
    log = read_requests(path)
    assert len(log.requests) == 1  # the fork's one call; the parent's two are in its own file
    said = [w for w in log.warnings if "forked from task" in w]
    assert said and parent.group(1) in said[0]


def _line(when: str, kind: str, payload: dict[str, Any]) -> str:
    return json.dumps({"timestamp": when, "type": kind, "payload": payload}) + "\n"


def _call(when: str, n: int, total: int) -> list[str]:
    """A user turn, the model's answer and its token count, at ``when`` (seconds)."""
    at = f"2026-03-01T10:00:{when}Z"
    usage = {"input_tokens": 2_000 + 100 * n, "cached_input_tokens": 1_920 if n else 0}
    usage.update(output_tokens=10, reasoning_output_tokens=0, total_tokens=2_010 + 100 * n)
    return [
        _line(
            at,
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": f"step {n}"}],
            },
        ),
        _line(
            at,
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": f"done {n}"}],
            },
        ),
        _line(
            at,
            "event_msg",
            {
                "type": "token_count",
                "info": {"last_token_usage": usage, "total_token_usage": {"total_tokens": total}},
            },
        ),
    ]


def test_calls_copied_from_the_parent_are_the_parents(tmp_path: Path) -> None:
    """14 token counts in the file: 5 copied from the parent before the fork began, 9 the
    fork's own. The 9 are this rollout's calls; the 5 are said to be the parent's."""
    meta = {"id": "child", "forked_from_id": "parent-task", "timestamp": "2026-03-01T10:00:20.000Z"}
    lines = [_line("2026-03-01T10:00:20.000Z", "session_meta", meta)]
    lines.append(_line("2026-03-01T10:00:20.000Z", "session_meta", {"id": "parent-task"}))
    total = 0
    for n in range(14):
        total += 2_010 + 100 * n
        lines += _call(f"{(10 + n) if n < 5 else (21 + n):02d}.000", n, total)
    path = tmp_path / "rollout-2026-03-01T10-00-20-child.jsonl"
    path.write_text("".join(lines))
    log = read_requests(path)
    assert len(log.requests) == 9
    said = [w for w in log.warnings if "forked from task parent-task" in w]
    assert said and "5 call(s) copied" in said[0]
    assert analyze(log.requests, warnings=log.warnings).summary()["requests"] == 9
