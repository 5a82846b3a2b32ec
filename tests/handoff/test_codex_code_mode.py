"""The real Codex CLI on its default model, offline: MCP tools reach the model as deferred
namespaces, and every tool call, ipse's checkpoint included, goes through the JavaScript ``exec``
tool (a ``custom_tool_call``). ipse's MCP server files the checkpoint under Codex's session (the
``_meta`` of the tool call names it), the requests Codex sends carry the same session (the
``session-id`` header), and the handoff at that ``exec`` call (the proxy's library call on the
request Codex sent next) removes the earlier ``exec`` call and archives it where ``recall`` with
the checkpoint finds it.

The upstream is scripted and answers as the Responses API does (``response.created``,
``response.output_item.added`` / ``.done``, ``response.completed`` as server-sent events)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ipse.archive import open_archive
from ipse.cli.main import cli
from ipse.handoff._checkpoint import checkpoint_items
from ipse.handoff._marker import TAG
from ipse.handoff._rewrite import clear_cache, conversation_key
from ipse.handoff.wire import rewrite_request
from tests.support.clients import codex_binary
from tests.support.serving import serve

READ = 'const r = await tools.exec_command({cmd: "cat notes.txt"});\ntext(r.output ?? r);'
CHECKPOINT = (
    'const r = await tools.mcp__ipse__micro_handoff({done: ["read notes.txt"], '
    'open: ["answer the user"]});\ntext(JSON.stringify(r));'
)
# Codex does not wait for its MCP servers before the first turn (starting ipse's server faster
# is another matter): the model first waits, inside exec, until ipse's tool is there.
POLL = (
    'for (let i = 0; i < 50 && typeof tools.mcp__ipse__micro_handoff !== "function"; i++) '
    "await new Promise((done) => setTimeout(done, 100));\n"
    'text(typeof tools.mcp__ipse__micro_handoff === "function" ? "ready" : "not yet");'
)


def _next(body: dict[str, Any]) -> tuple[str, str | None]:
    """The model's next move as (call id, exec source), or a final answer (source None)."""
    items = body.get("input", [])
    calls = [i["call_id"] for i in items if i.get("type") == "custom_tool_call"]
    polls = [c for c in calls if c.startswith("call_poll")]
    said = json.dumps(items[-1].get("output", "")) if items else ""
    if not calls or (calls[-1] in polls and "not yet" in said and len(polls) < 20):
        return f"call_poll{len(polls)}", POLL
    if "call_0" not in calls:
        return "call_0", READ
    if "call_1" not in calls:
        return "call_1", CHECKPOINT
    return "msg_done", None


def _events(body: dict[str, Any], step: int, model: str) -> list[dict[str, Any]]:
    """The events of the model's answer to ``body`` (the ``step``-th request)."""
    call_id, source = _next(body)
    if source is not None:
        item: dict[str, Any] = {
            "type": "custom_tool_call",
            "id": f"ctc_{step}",
            "status": "completed",
            "call_id": call_id,
            "name": "exec",
            "input": source,
        }
    else:
        item = {
            "type": "message",
            "id": f"msg_{step}",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
        }
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 3,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 13,
    }
    response = {
        "id": f"resp_{step}",
        "object": "response",
        "created_at": 0,
        "model": model,
        "status": "completed",
        "output": [item],
        "usage": usage,
    }
    started = {**response, "status": "in_progress", "output": [], "usage": None}
    return [
        {"type": "response.created", "sequence_number": 0, "response": started},
        {
            "type": "response.output_item.added",
            "sequence_number": 1,
            "output_index": 0,
            "item": {**item, "status": "in_progress"},
        },
        {
            "type": "response.output_item.done",
            "sequence_number": 2,
            "output_index": 0,
            "item": item,
        },
        {"type": "response.completed", "sequence_number": 3, "response": response},
    ]


@contextmanager
def _upstream() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    received: list[dict[str, Any]] = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length", "0")))
            body = json.loads(raw) if raw else {}
            with lock:
                received.append({"headers": dict(self.headers), "body": body})
                step = len(received) - 1
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            self.end_headers()
            for event in _events(body, step, str(body.get("model", "gpt"))):
                self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()
            self.close_connection = True

    with serve(Handler) as url:
        yield url, received


def test_the_checkpoint_through_exec_is_found_and_keyed_by_codex_session(tmp_path: Path) -> None:
    codex = codex_binary()
    home, work, ipse_home = tmp_path / "home", tmp_path / "work", tmp_path / "ipse-home"
    for folder in (home / ".codex", work):
        folder.mkdir(parents=True)
    (work / "notes.txt").write_text("the answer is 42\n")
    source = str(Path(__file__).resolve().parents[2] / "src")
    with _upstream() as (url, received):
        server_env = {"IPSE_HOME": str(ipse_home), "PYTHONPATH": source}
        (home / ".codex" / "config.toml").write_text(
            'model_provider = "local"\n\n[model_providers.local]\nname = "local"\n'
            f'base_url = "{url}/v1"\nenv_key = "OPENAI_API_KEY"\nwire_api = "responses"\n'
            "supports_websockets = false\n\n[mcp_servers.ipse]\n"
            f'command = {json.dumps(sys.executable)}\nargs = ["-m", "ipse", "mcp"]\n'
            f"env = {{ {', '.join(f'{k} = {json.dumps(v)}' for k, v in server_env.items())} }}\n"
            'default_tools_approval_mode = "approve"\nstartup_timeout_sec = 60\n'
        )
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "CODEX_HOME": str(home / ".codex"),
            "OPENAI_API_KEY": "sk-test",
        }
        done = subprocess.run(
            [codex, "exec", "--skip-git-repo-check", "-C", str(work), "Read notes.txt."],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    assert _next(received[-1]["body"]) == ("msg_done", None), done.stderr[-3000:]
    assert all(r["headers"]["session-id"] == received[0]["headers"]["session-id"] for r in received)
    headers, body = received[-1]["headers"], received[-1]["body"]
    # the exact wire shape: Responses Lite, tools in an ``additional_tools`` item, and the
    # checkpoint an ``exec`` custom_tool_call answered by a list of input_text parts
    assert "tools" not in body
    calls = [i for i in body["input"] if i.get("type") == "custom_tool_call"]
    assert {c["name"] for c in calls} == {"exec"} and calls[-1]["call_id"] == "call_1"
    answer = next(i for i in body["input"] if i.get("call_id") == "call_1" and "output" in i)
    assert "recorded for session" in json.dumps(answer["output"])

    key = conversation_key(headers, body, "openai-responses")
    assert key == f"session:{headers['session-id']}"
    archive = open_archive(f"sqlite:///{ipse_home / 'ipse.db'}")
    try:
        stored = [s for s, _ in archive.sessions()]
        assert stored == [key]  # the MCP server filed the checkpoint under Codex's session
        checkpoint = archive.items(key)[0].id
        clear_cache()
        out = rewrite_request(body, "openai-responses", archive=archive, session=key)
        assert out.applied, out.reason
        assert out.anchor == "call_1" and out.removed_calls == len(calls) - 1
        assert out.session == key
        assert out.body is not None
        # only the earlier exec calls and their outputs went; every other item (Codex's
        # developer and user messages, with their ids and parts) is as Codex sent it, and one
        # marker at the cut names what went unless the checkpoint's answer holds the ledger
        dropped = {c["call_id"] for c in calls[:-1]}
        sent = [i for i in out.body["input"] if not _is_marker(i)]
        assert sent == [i for i in body["input"] if i.get("call_id") not in dropped]
        assert len(out.body["input"]) - len(sent) == out.marker
        if out.marker:
            said = json.dumps([i for i in out.body["input"] if _is_marker(i)])
            assert all(f"[{c}]" in said for c in dropped) or "Other calls: exec" in said
        _row, removed = checkpoint_items(archive, checkpoint)
        assert [i.id for i in removed] == [c["call_id"] for c in calls[:-1]]
        assert "call_0" in [i.id for i in removed]
    finally:
        archive.close()

    # ipse handoff on the rollout Codex wrote: the same cut, the same session key, and the
    # removed items found already archived there
    rollout = next((home / ".codex" / "sessions").rglob("rollout-*.jsonl"))
    args = [
        "handoff",
        str(rollout),
        "-o",
        str(tmp_path / "out.json"),
        "--json",
        "--store",
        f"sqlite:///{ipse_home / 'ipse.db'}",
    ]
    ran = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert ran.exit_code == 0, ran.output
    document = json.loads(ran.stdout)
    assert document["cut"]["kind"] == "checkpoint" and document["session"] == key
    assert document["removed"]["tool_calls"] == len(calls) - 1 and document["archived"] == 0


def _is_marker(item: Any) -> bool:
    content = item.get("content") if isinstance(item, dict) else None
    return isinstance(content, list) and str(content[0].get("text", "")).startswith(TAG)


@pytest.fixture(autouse=True)
def _no_inherited_session(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("IPSE_SESSION", "CLAUDE_CODE_SESSION_ID", "CODEX_THREAD_ID", "CODEX_SESSION_ID"):
        monkeypatch.delenv(name, raising=False)
