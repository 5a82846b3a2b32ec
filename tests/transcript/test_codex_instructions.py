"""A Codex rollout's system prompt is read once, as it was sent: as the request's
``instructions`` (older Codex), or as the developer message at the head of ``input`` that Codex
0.169 sends instead, and records among the items, with the same text in ``base_instructions``.

The first tests read rollouts shaped as 0.169 writes them; the last runs the real Codex CLI
against a scripted Responses upstream and holds every request ipse rebuilds from the rollout to
the request Codex sent."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

from ipse.transcript import Text, load, write
from ipse.transcript._formats.codex import rollout_requests
from ipse.transcript._model import Origin
from tests.support.clients import codex_binary
from tests.support.openai_upstream import openai_upstream

PROMPT = "You are Codex, an agent based on GPT-6. " + "Work with the user until it is done. " * 40
SESSION = "01a243cd-dac6-79f2-8943-a5d38da8f594"


def _record(kind: str, payload: dict[str, Any], second: int) -> dict[str, Any]:
    return {"timestamp": f"2026-12-05T01:24:{second:02d}.000Z", "type": kind, "payload": payload}


def _message(role: str, text: str, part: str = "input_text") -> dict[str, Any]:
    return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}


def _rollout(path: Path, *, prompt_in_input: bool) -> Path:
    """Two turns as Codex 0.169 records them: ``session_meta`` with ``base_instructions``
    (text and provenance), the tools item, the developer message that holds the prompt (left
    out for the older shape), the environment context, then each turn's items and events."""
    head = [
        {"type": "additional_tools", "role": "developer", "tools": [{"type": "namespace"}]},
        *([_message("developer", PROMPT)] if prompt_in_input else []),
        _message("developer", "<permissions instructions>read-only</permissions instructions>"),
        _message("user", "<environment_context><cwd>/w</cwd></environment_context>"),
    ]
    meta = {
        "id": SESSION,
        "session_id": SESSION,
        "cli_version": "0.169.0",
        "base_instructions": {"text": PROMPT, "provenance": {"type": "model", "model": "gpt"}},
    }
    records = [_record("session_meta", meta, 0)]
    records += [_record("response_item", item, 1) for item in head]
    for n, (said, answer) in enumerate((("Say hello.", "Hello."), ("Again.", "Once more."))):
        records += [
            _record("turn_context", {"model": "gpt-6.1-sol", "cwd": "/w"}, 2 + 3 * n),
            _record("response_item", _message("user", said), 2 + 3 * n),
            _record("event_msg", {"type": "user_message", "message": said}, 2 + 3 * n),
            _record("response_item", _message("assistant", answer, "output_text"), 3 + 3 * n),
        ]
        usage = {"input_tokens": 10 + n, "cached_input_tokens": 0, "output_tokens": 3}
        info = {"total_token_usage": usage, "last_token_usage": usage}
        records.append(_record("event_msg", {"type": "token_count", "info": info}, 4 + 3 * n))
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _times(text: str, body: Any) -> int:
    return json.dumps(body).count(json.dumps(text)[1:-1])


def test_the_prompt_sent_in_input_is_read_once(tmp_path: Path) -> None:
    conversation = load(_rollout(tmp_path / "r.jsonl", prompt_in_input=True)).current()
    assert conversation.system == ()
    # what report and inspect count as the parts of a request: the prompt once, as the
    # developer message it was sent as
    blocks = [b for m in conversation.messages for b in m.blocks]
    assert [b.origin for b in blocks if isinstance(b, Text) and b.text == PROMPT] == [
        Origin.HARNESS
    ]
    body = write(conversation)
    assert "instructions" not in body
    assert _times(PROMPT, body) == 1
    assert body["input"][1] == _message("developer", PROMPT)
    requests = list(rollout_requests(tmp_path / "r.jsonl"))
    assert len(requests) == 2
    for request in requests:
        assert "instructions" not in request.body
        assert _times(PROMPT, request.body) == 1


def test_older_rollouts_still_send_their_instructions(tmp_path: Path) -> None:
    conversation = load(_rollout(tmp_path / "r.jsonl", prompt_in_input=False)).current()
    assert [b.text for b in conversation.system] == [PROMPT]  # type: ignore[union-attr]
    assert write(conversation)["instructions"] == PROMPT
    for request in rollout_requests(tmp_path / "r.jsonl"):
        assert request.body["instructions"] == PROMPT
        assert _times(PROMPT, request.body) == 1


def test_every_request_rebuilt_from_a_real_rollout_is_the_one_codex_sent(tmp_path: Path) -> None:
    codex = codex_binary()
    home, project = tmp_path / "codex", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "CODEX_HOME": str(home),
        "OPENAI_API_KEY": "sk-test-0000",
    }
    with openai_upstream(["Hello there.", "Second answer."]) as upstream:
        (home / "config.toml").write_text(
            'model_provider = "scripted"\n\n[model_providers.scripted]\nname = "scripted"\n'
            f'base_url = "{upstream.url}/v1"\nwire_api = "responses"\n'
            'env_key = "OPENAI_API_KEY"\nsupports_websockets = false\n'
        )
        session = ""
        for prompt in ("Say hello.", "Again."):
            argv = [codex, "exec", "--skip-git-repo-check"]
            argv += ["resume", session, prompt] if session else [prompt]
            done = subprocess.run(
                argv,
                cwd=project,
                env=env,
                capture_output=True,
                text=True,
                timeout=240,
                stdin=subprocess.DEVNULL,
            )
            assert done.returncode == 0, done.stderr[-3000:]
            found = re.search(r"session id: (\S+)", done.stderr + done.stdout)
            assert found, done.stderr[-3000:]
            session = session or found.group(1)
        sent = upstream.bodies("/responses")
    (rollout,) = sorted((home / "sessions").rglob("rollout-*.jsonl"))
    meta = json.loads(rollout.read_text().splitlines()[0])["payload"]
    prompt_text = meta["base_instructions"]["text"]
    rebuilt = [r.body for r in rollout_requests(rollout)]
    assert len(rebuilt) == len(sent) == 2
    for ours, theirs in zip(rebuilt, sent, strict=True):
        assert ("instructions" in ours) == ("instructions" in theirs)
        assert _times(prompt_text, ours) == _times(prompt_text, theirs) >= 1
        assert len(ours["input"]) == len(theirs["input"])
    written = write(load(rollout).current())
    assert _times(prompt_text, written) == _times(prompt_text, sent[-1]) == 1
