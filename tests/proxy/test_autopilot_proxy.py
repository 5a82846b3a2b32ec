"""The autopilot through a real ``ipse proxy`` process and the scripted Anthropic upstream.

A client drives one conversation as an agent CLI does (every request repeats the history from
the start: the client never sees the proxy's cuts), a turn being a prompt, a Read call with a
large result, and an answer. The upstream reports usage that grows with the body, as the API
does. What the upstream received is compared with what the client sent.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from ipse.handoff._shared import NUDGE
from tests.support.anthropic_upstream import Upstream, anthropic_upstream
from tests.support.openai_upstream import Upstream as OpenAIUpstream
from tests.support.openai_upstream import openai_upstream
from tests.support.replicas import ROOT, Replica, replicas

MODEL = "claude-test"
SESSION = "5b0e8d54-0c51-4a37-9d1e-autopilot000"
SOFT, HARD = 5_000, 9_000  # tokens (the plan counts JSON bytes / 3.5)
TURNS = 8


def _result(turn: int) -> str:
    return "".join(f"line {turn}.{n}: value = {turn * n}\n" for n in range(260))


def _turn(turn: int) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]:
    call = f"toolu_{turn:03d}"
    asked = f"Prompt {turn}: read f{turn}."
    prompt = {"role": "user", "content": [{"type": "text", "text": asked}]}
    reading = {"role": "assistant", "content": [
        {"type": "text", "text": f"Reading f{turn} to answer prompt {turn}."},
        {"type": "tool_use", "id": call, "name": "Read", "input": {"file_path": f"/f{turn}.py"}},
    ]}  # fmt: skip
    result = {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": call, "content": _result(turn)},
    ]}  # fmt: skip
    answer = {"role": "assistant", "content": [
        {"type": "text", "text": f"Answer {turn}: f{turn} holds {turn} values that matter."},
    ]}  # fmt: skip
    return prompt, reading, result, answer


def _conversation(url: str, turns: int = TURNS) -> list[dict[str, Any]]:
    """Drive the conversation through ``url``; the bodies the client sent, in order."""
    history: list[dict[str, Any]] = []
    sent: list[dict[str, Any]] = []
    headers = {"x-api-key": "test-key", "anthropic-version": "2023-06-01",
               "x-claude-code-session-id": SESSION}  # fmt: skip
    with httpx.Client(timeout=60) as client:
        for turn in range(1, turns + 1):
            prompt, reading, result, answer = _turn(turn)
            for step in ([prompt], [reading, result]):
                history += step
                body = {"model": MODEL, "max_tokens": 1024, "system": "You are a test agent.",
                        "messages": list(history)}  # fmt: skip
                answered = client.post(f"{url}/v1/messages", json=body, headers=headers)
                assert answered.status_code == 200, answered.text
                sent.append(body)
            history.append(answer)
    return sent


@contextmanager
def _proxy(upstream: Upstream | OpenAIUpstream, folder: Path, *options: str) -> Iterator[Replica]:
    store = f"sqlite:///{folder / 'ipse.db'}"
    record = folder / "record.jsonl"
    with replicas(1, upstream.url, store, folder,
                  options=["--record", str(record), *options]) as started:  # fmt: skip
        yield started[0]


def _records(folder: Path) -> list[dict[str, Any]]:
    lines = (folder / "record.jsonl").read_bytes().splitlines()
    return [json.loads(line) for line in lines if line]


def _autopilot(entry: dict[str, Any]) -> dict[str, Any] | None:
    found = entry.get("ipse", {}).get("autopilot")
    return found if isinstance(found, dict) else None


def _texts(messages: list[dict[str, Any]]) -> list[str]:
    return [b["text"] for m in messages for b in m["content"] if b.get("type") == "text"]


def _nudges(messages: list[dict[str, Any]]) -> int:
    return sum(1 for text in _texts(messages) if text == NUDGE)


def _wait_for_records(folder: Path, count: int) -> list[dict[str, Any]]:
    import time

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if (folder / "record.jsonl").exists() and len(_records(folder)) >= count:
            return _records(folder)
        time.sleep(0.05)
    raise AssertionError("the proxy did not record every exchange")


def test_a_conversation_is_nudged_once_then_cut_and_the_cut_is_kept(tmp_path: Path) -> None:
    with anthropic_upstream(("OK.",), sized=True) as upstream, _proxy(
        upstream, tmp_path, "--autopilot", "cut", "--autopilot-soft", str(SOFT),
        "--autopilot-hard", str(HARD),
    ) as proxy:  # fmt: skip
        sent = _conversation(proxy.url)
        with urllib.request.urlopen(f"{proxy.url}/ipse/health", timeout=5) as answer:
            health = json.loads(answer.read())
        records = _wait_for_records(tmp_path, len(sent))
    forwarded = upstream.messages_requests()
    assert len(forwarded) == len(sent)
    assert health["autopilot"] == {"mode": "cut", "soft": SOFT, "hard": HARD}
    actions = [(_autopilot(e) or {}).get("action", "nothing") for e in records]
    cuts = [i for i, a in enumerate(actions) if a == "cut"]
    nudged = [i for i, a in enumerate(actions) if a == "nudge"]
    assert cuts, actions
    assert all(b - a >= 3 for a, b in itertools.pairwise(cuts))  # never every turn
    assert nudged and nudged[0] < cuts[0], actions
    first, cut = nudged[0], cuts[0]

    # before the nudge: the client's bytes; from it to the cut: one nudge, the same bytes
    for i in range(first):
        assert forwarded[i] == sent[i]
    assert _nudges(forwarded[first]["messages"]) == 1
    assert forwarded[first]["messages"][-1]["content"][0]["text"] == NUDGE
    for i in range(first + 1, cut):
        assert _nudges(forwarded[i]["messages"]) == 1
        head = forwarded[i - 1]["messages"]
        assert forwarded[i]["messages"][: len(head)] == head

    # the cut: every authored word still there, byte for byte; the tool traffic gone
    client, out = sent[cut], forwarded[cut]
    assert len(json.dumps(out)) < len(json.dumps(client)) / 2
    words = json.dumps(out)
    for text in _texts(client["messages"]):
        assert json.dumps(text)[1:-1] in words
    assert _result(1) not in json.dumps(out)
    entry = _autopilot(records[cut])
    assert entry is not None and entry["tokens_after"] < entry["tokens"]
    assert entry["cache_cost"] > 0 and entry["removed_calls"] >= 1
    assert records[cut]["ipse"]["autopilot"]["anchor"].startswith("autopilot:")

    # after it: each request repeats the one before it, the rewritten prefix included, up to
    # the next cut
    for i in range(cut + 1, len(forwarded)):
        if i in cuts:
            continue
        head = forwarded[i - 1]["messages"]
        assert forwarded[i]["messages"][: len(head)] == head
        assert _nudges(forwarded[i]["messages"]) <= 1

    # what the cut removed is in the archive, exactly as it was
    recalled = _ipse("recall", "toolu_001", "--session", f"session:{SESSION}",
                     "--store", f"sqlite:///{tmp_path / 'ipse.db'}", "--json")  # fmt: skip
    assert recalled.returncode == 0, recalled.stderr
    assert _result(1)[:200] in recalled.stdout.replace("\\n", "\n")

    log = proxy.log.read_text()
    assert "autopilot nudge at" in log and "autopilot cut at autopilot:" in log

    # ipse report marks them apart from the agent's own checkpoints, by the same name
    shown = _ipse("report", str(tmp_path / "record.jsonl"), "--json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    made = report["autopilot"]
    assert [a["index"] for a in made if a["action"] == "cut"] == cuts
    assert next(a["index"] for a in made if a["action"] == "nudge") == first
    assert all(a["tokens_after"] < a["tokens"] for a in made if a["action"] == "cut")
    assert report["handoffs"] == []
    markers = [p["marker"] for p in report["requests"]]
    assert [i for i, m in enumerate(markers) if m == "autopilot"] == cuts


def test_nudge_never_cuts(tmp_path: Path) -> None:
    with anthropic_upstream(("OK.",), sized=True) as upstream, _proxy(
        upstream, tmp_path, "--autopilot", "nudge", "--autopilot-soft", str(SOFT),
        "--autopilot-hard", str(HARD),
    ) as proxy:  # fmt: skip
        sent = _conversation(proxy.url)
    forwarded = upstream.messages_requests()
    assert any(_nudges(f["messages"]) for f in forwarded)
    for client, out in zip(sent, forwarded, strict=True):
        without = [m for m in out["messages"] if _texts([m]) != [NUDGE]]
        assert without == client["messages"]  # nothing removed, only the nudge added
        assert _nudges(out["messages"]) <= 1


def test_off_forwards_every_body_unchanged(tmp_path: Path) -> None:
    with anthropic_upstream(("OK.",), sized=True) as upstream, _proxy(
        upstream, tmp_path, "--autopilot", "off", "--autopilot-soft", "100",
        "--autopilot-hard", "200",
    ) as proxy:  # fmt: skip
        sent = _conversation(proxy.url, turns=4)
    raw = [r["raw"] for r in upstream.received if r["path"].split("?")[0] == "/v1/messages"]
    assert [json.loads(r) for r in raw] == sent
    assert [r["body"] for r in upstream.received] == sent


def _responses_turn(turn: int) -> list[dict[str, Any]]:
    call = f"call_{turn:03d}"
    arguments = json.dumps({"command": ["cat", f"f{turn}.py"]})
    return [
        {"type": "message", "role": "user",
         "content": [{"type": "input_text", "text": f"Prompt {turn}: read f{turn}."}]},
        {"type": "function_call", "call_id": call, "name": "shell", "arguments": arguments},
        {"type": "function_call_output", "call_id": call, "output": _result(turn)},
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": f"Answer {turn}: f{turn} is read."}]},
    ]  # fmt: skip


def test_a_codex_conversation_on_the_responses_api_is_nudged_and_cut(tmp_path: Path) -> None:
    """Codex's shape: the Responses API, its items, its ``session_id`` header."""
    sent: list[dict[str, Any]] = []
    with openai_upstream(("OK.",)) as upstream, _proxy(
        upstream, tmp_path, "--openai-upstream", upstream.url, "--autopilot-soft", str(SOFT),
        "--autopilot-hard", str(HARD),
    ) as proxy, httpx.Client(timeout=60) as client:  # fmt: skip
        history: list[dict[str, Any]] = []
        headers = {"authorization": "Bearer test", "session_id": SESSION,
                   "originator": "codex_exec"}  # fmt: skip
        for turn in range(1, TURNS + 1):
            items = _responses_turn(turn)
            for step in (items[:1], items[1:3]):
                history += step
                body = {"model": "gpt-5.1-codex", "instructions": "You are a test agent.",
                        "input": list(history), "stream": False}  # fmt: skip
                answered = client.post(f"{proxy.url}/v1/responses", json=body, headers=headers)
                assert answered.status_code == 200, answered.text
                sent.append(body)
            history += items[3:]
    forwarded = upstream.bodies("/responses")
    assert len(forwarded) == len(sent)
    nudged = [i for i, f in enumerate(forwarded) if NUDGE in json.dumps(f)]
    cut = next(i for i, f in enumerate(forwarded) if len(f["input"]) < len(sent[i]["input"]))
    assert nudged and nudged[0] < cut
    words = json.dumps(forwarded[cut])
    for item in sent[cut]["input"]:
        for part in item.get("content", []):
            assert json.dumps(part["text"])[1:-1] in words
    assert _result(1) not in words
    for i in range(cut + 1, len(forwarded)):
        head = forwarded[i - 1]["input"]
        if forwarded[i]["input"][: len(head)] != head:  # (the next cut)
            assert len(forwarded[i]["input"]) < len(sent[i]["input"]) - 4
    log = proxy.log.read_text()
    assert "autopilot cut at autopilot:" in log


def _ipse(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``ipse ARGS`` in ``cwd`` (a report writes its page there)."""
    import os

    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-m", "ipse", *args], capture_output=True, text=True,
                          timeout=60, env=env, check=False, cwd=cwd)  # fmt: skip


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--autopilot", "sometimes"], "--autopilot"),
        (["--autopilot-soft", "0"], "--autopilot-soft"),
        (["--autopilot-hard", "many"], "--autopilot-hard"),
        (["--autopilot-soft", "9000", "--autopilot-hard", "100"], "must not be above"),
    ],
)
def test_invalid_options_exit_2_with_the_reason(args: list[str], said: str) -> None:
    done = _ipse("proxy", "--port", "1", *args)
    assert done.returncode == 2
    assert said in done.stderr
