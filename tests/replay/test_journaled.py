"""A session the real Claude Code CLI wrote, its API requests journaled: the replay reads the
requests as sent (system prompt, tools, settings) and, off, bills what ``ipse prefix`` bills."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from ipse.handoff._autopilot import AutopilotPolicy
from ipse.prefix import analyze, read_requests
from ipse.replay import ReplayOptions, document, replay_log
from tests.support.anthropic_upstream import anthropic_upstream
from tests.support.clients import claude_binary


def _session(tmp_path: Path) -> Path:
    claude = claude_binary()
    project = tmp_path / "proj"
    project.mkdir()
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "CLAUDE_CONFIG_DIR": str(tmp_path / ".claude"),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "ANTHROPIC_API_KEY": "sk-ant-test",
    }
    with anthropic_upstream(["First answer.", "Second answer."]) as upstream:
        env["ANTHROPIC_BASE_URL"] = upstream.url
        for prompt, more in (("hello there", []), ("and again", ["--continue"])):
            done = subprocess.run(
                [claude, "-p", prompt, "--tools", "", *more],
                env=env,
                cwd=project,
                capture_output=True,
                text=True,
                timeout=180,
            )
            assert done.returncode == 0, done.stderr
    (session,) = (tmp_path / ".claude" / "projects").glob("*/*.jsonl")
    return session


def test_a_journaled_session_replays_off_as_the_prefix_replay_bills_it(tmp_path: Path) -> None:
    session = _session(tmp_path)
    log = read_requests(session)
    journaled = "api-request" in {
        json.loads(line).get("type") for line in session.read_text().splitlines()
    }
    expected = analyze(log.requests, warnings=log.warnings).summary()["cost_usd"]
    off = ReplayOptions(policy=AutopilotPolicy(mode="off"), continuity=False)
    found = document(replay_log(log, off, session=session))
    assert found["recorded"]["input_usd"] == expected
    assert found["with_policy_at_recorded"]["input_usd"] == expected
    cutting = ReplayOptions(policy=AutopilotPolicy(soft=1, hard=1), continuity=False)
    done = replay_log(log, cutting, session=session)
    assert len(done.sent) == len(log.requests) == 2
    if journaled:  # the system prompt and tools as sent, on both sides
        for sent, recorded in zip(done.sent, log.requests, strict=True):
            assert sent.body["system"] == recorded.body["system"]
            assert sent.body.get("tools", []) == recorded.body.get("tools", [])
