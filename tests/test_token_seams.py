"""``ipse inspect`` and ``ipse report`` count the same thing the same way: tokens by kind
through one function (`TokenTally.add_conversation`: the system prompt and tool definitions,
then the messages), on every shared session and on a record of the real proxy; and the cache
reads a provider recorded are read one way (`ipse.prefix.actual_tokens`), OpenAI's too.

Before, ``inspect`` left the system prompt and the tool definitions of a session or a rollout
at 0 while ``report`` counted them, and showed OpenAI's cache reads as ``-``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from ipse.transcript._formats.http_log import exchange_record
from tests.conftest import CLAUDE_CODE, HTTP_LOG, OPENAI_TRAJ, SHARED_DATA, CliRun, shared_glob
from tests.proxy.conftest import ProxyFactory, proxy_factory  # noqa: F401 (the fixture)
from tests.support.anthropic_upstream import anthropic_upstream

FRONT = ("system", "tools")
SESSIONS = [
    *shared_glob(CLAUDE_CODE, "*.jsonl"),
    *shared_glob(SHARED_DATA / "codex", "*.jsonl"),
    *([OPENAI_TRAJ, HTTP_LOG] if SHARED_DATA.is_dir() else []),
]


def _both(cli: CliRun, path: Path, tmp_path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    inspected = cli("inspect", str(path), "--json")
    reported = cli("report", str(path), "--json", "-o", str(tmp_path / "page.html"))
    assert inspected.returncode == 0, inspected.stderr
    assert reported.returncode == 0, reported.stderr
    return json.loads(inspected.stdout), json.loads(reported.stdout)


def _agree(inspected: dict[str, Any], reported: dict[str, Any]) -> None:
    """The seams: the front of what the model saw last; each request of a log; the one
    conversation of an input that records no requests."""
    last = (inspected.get("after_last_compaction") or inspected)["tokens"]["by_kind"]
    points = reported["requests"]
    drawn = points[-1]["composition"]
    assert {k: last[k] for k in FRONT} == {k: drawn[k] for k in FRONT}
    if "requests" in inspected:  # a log: request by request
        counted = [row["input_tokens"] for row in inspected["requests"]]
        assert counted == [
            sum(v for k, v in p["composition"].items() if k != "not_recorded") for p in points
        ]
        assert {k: v for k, v in drawn.items() if k != "not_recorded"} == last
    if reported["no_requests"]:  # one conversation, no requests
        assert {k: v for k, v in drawn.items() if k != "not_recorded"} == last


@pytest.mark.shared
@pytest.mark.parametrize("path", SESSIONS, ids=[p.name[:24] for p in SESSIONS])
def test_inspect_and_report_count_every_shared_session_alike(
    path: Path, cli: CliRun, tmp_path: Path
) -> None:
    _agree(*_both(cli, path, tmp_path))


@pytest.mark.shared
@pytest.mark.parametrize("path", shared_glob(CLAUDE_CODE, "*.jsonl"), ids=lambda p: p.name[:24])
def test_text_claude_code_wrote_is_the_agent_clis_in_both(
    path: Path, cli: CliRun, tmp_path: Path
) -> None:
    """A Claude Code session marks the text Claude Code wrote into a user message (``isMeta``:
    a command's expansion; the compaction summary); the request bodies ``report`` reads do not,
    so the session's marks go with them: the human's words are the same in both."""
    inspected, reported = _both(cli, path, tmp_path)
    last = (inspected.get("after_last_compaction") or inspected)["tokens"]["by_kind"]
    drawn = reported["requests"][-1]["composition"]
    assert drawn["human_text"] == last["human_text"]
    if last["human_text"] == 0:
        assert drawn["harness_text"] == last["harness_text"]


BODY: dict[str, Any] = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 20,
    "system": [{"type": "text", "text": "You are a careful agent. Keep answers short. " * 40}],
    "tools": [
        {
            "name": f"tool_{n}",
            "description": "Reads what it is asked to read, and says what it found. " * 10,
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
        }
        for n in range(6)
    ],
    "messages": [{"role": "user", "content": "read the file"}],
}


def test_inspect_and_report_count_a_record_of_the_real_proxy_alike(
    proxy_factory: ProxyFactory,  # noqa: F811 (the fixture)
    cli: CliRun,
    tmp_path: Path,
) -> None:
    replies = ["first", "second", "third"]
    with anthropic_upstream(replies) as upstream, proxy_factory(upstream.url) as proxy:
        with httpx.Client(base_url=proxy.url, timeout=30) as client:
            messages: list[dict[str, Any]] = list(BODY["messages"])
            for _ in replies:
                answer = client.post("/v1/messages", json={**BODY, "messages": messages}).json()
                messages.append({"role": "assistant", "content": answer["content"]})
                messages.append({"role": "user", "content": "go on"})
        proxy.settle()
        record = proxy.record
    inspected, reported = _both(cli, record, tmp_path)
    front = inspected["tokens"]["by_kind"]
    assert front["system"] > 300 and front["tools"] > 300
    _agree(inspected, reported)


def _openai_log(path: Path) -> Path:
    """A log of two OpenAI requests whose usage says what the cache read."""
    now = time.time()
    lines = []
    chat = {"prompt_tokens": 2000, "prompt_tokens_details": {"cached_tokens": 1536}}
    responses = {"input_tokens": 3000, "input_tokens_details": {"cached_tokens": 2048}}
    for n, (url, usage) in enumerate(
        [("/v1/chat/completions", chat), ("/v1/responses", responses)]
    ):
        body: dict[str, Any] = {"model": "gpt-5", "messages": [{"role": "user", "content": "hi"}]}
        if url == "/v1/responses":
            body = {"model": "gpt-5", "input": [{"role": "user", "content": "hi"}]}
        entry = exchange_record(
            method="POST",
            url=url,
            headers={},
            body=body,
            status=200,
            response_headers={},
            response_body=json.dumps({"usage": usage}).encode(),
            started=now + n,
            first_byte=now + n,
            finished=now + n,
        )
        lines.append(json.dumps(entry))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_inspect_shows_what_openai_read_from_its_cache(cli: CliRun, tmp_path: Path) -> None:
    log = _openai_log(tmp_path / "openai.jsonl")
    shown = cli("inspect", str(log), env={"COLUMNS": "200"})
    assert shown.returncode == 0, shown.stderr
    assert "2,000 / 1,536 / 0" in shown.stdout
    assert "3,000 / 2,048 / 0" in shown.stdout
    rows = json.loads(cli("inspect", str(log), "--json").stdout)["requests"]
    assert [row["recorded"]["cache_read"] for row in rows] == [1536, 2048]
