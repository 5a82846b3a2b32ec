"""Every record the proxy writes is read by every command that reads logs: a client's ``HEAD /``
and ``GET`` (no body), a body that is not JSON, an exchange the upstream never answered, a
refusal, and requests the proxy rewrote at a checkpoint are all exchanges; those that are not
conversation turns are counted and skipped, never an error."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from ipse.transcript._formats.http_log import exchange_record
from tests.conftest import CliRun
from tests.proxy.conftest import ProxyFactory, proxy_factory  # noqa: F401 (the fixture)
from tests.support.anthropic_upstream import anthropic_upstream

BODY: dict[str, Any] = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 20,
    "messages": [{"role": "user", "content": "read the file"}],
}


def _commands(cli: CliRun, record: Path, tmp_path: Path) -> dict[str, Any]:
    """inspect, prefix, lint and report on the record; each must read it."""
    out: dict[str, Any] = {}
    for name, extra in (
        ("inspect", ["--json"]),
        ("prefix", ["--json"]),
        ("lint", ["--json"]),
        ("report", ["--json", "-o", str(tmp_path / "page.html")]),
    ):
        done = cli(name, str(record), *extra)
        assert done.returncode in (0, 1), f"{name}: {done.stderr}"
        assert "not valid JSON" not in done.stderr
        out[name] = json.loads(done.stdout)
    return out


def test_a_record_of_the_real_proxy_is_read_by_every_command(
    proxy_factory: ProxyFactory,  # noqa: F811 (the fixture)
    cli: CliRun,
    tmp_path: Path,
) -> None:
    replies: list[Any] = [
        {"text": "reading", "tool_use": {"id": "toolu_1", "name": "Read", "input": {"p": "a"}}},
        {
            "text": "saving",
            "tool_use": {
                "id": "toolu_cp",
                "name": "mcp__ipse__micro_handoff",
                "input": {"notes": "the file says a"},
            },
        },
        "done",
    ]
    with anthropic_upstream(replies) as upstream, proxy_factory(upstream.url) as proxy:
        with httpx.Client(base_url=proxy.url, timeout=30) as client:
            client.head("/")  # Claude Code sends this at every start, without a body
            client.get("/v1/models")
            client.post(
                "/v1/messages", content=b"not json at all", headers={"content-type": "text/plain"}
            )
            messages: list[dict[str, Any]] = list(BODY["messages"])
            for reply in replies:
                answer = client.post("/v1/messages", json={**BODY, "messages": messages}).json()
                messages.append({"role": "assistant", "content": answer["content"]})
                calls = [b for b in answer["content"] if b["type"] == "tool_use"]
                if calls:
                    result = {"type": "tool_result", "tool_use_id": calls[0]["id"], "content": "x"}
                    messages.append({"role": "user", "content": [result]})
                elif isinstance(reply, str):
                    messages.append({"role": "user", "content": "thanks"})
            client.post("/v1/messages", json={**BODY, "messages": messages})
            client.post("/v1/chat/completions", json={"model": "gpt-5", "messages": []})
        proxy.settle()
        record = proxy.record
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    # HEAD / is answered by the proxy itself: it reaches no upstream and is no exchange
    assert all(line["request"]["method"] != "HEAD" for line in lines)
    assert lines[0]["request"]["method"] == "GET" and lines[0]["request"]["body"] == ""
    assert any(
        (line.get("ipse") or {}).get("handoff", {}) and line["ipse"]["handoff"]["applied"]
        for line in lines
    )
    assert any(line["ipse"]["error"] for line in lines)  # the OpenAI upstream is unreachable

    out = _commands(cli, record, tmp_path)
    inspected = out["inspect"]
    assert inspected["exchanges"] == len(lines)
    assert inspected["other_exchanges"]["GET /v1/models"] == 1
    assert inspected["other_exchanges"]["POST /v1/messages"] == 1  # the body that is not JSON
    assert len(inspected["requests"]) == 4
    assert len(out["prefix"]["requests"]) == 4
    assert len(out["report"]["requests"]) == 4


@pytest.mark.parametrize(
    ("method", "body", "status"),
    [
        ("HEAD", "", 200),
        ("GET", "", 404),
        ("POST", "", 413),  # refused: too large to keep
        ("POST", "\ufffdbinary\x00", 502),
        ("POST", [1, 2], 400),
        ("POST", None, None),  # never answered
    ],
)
def test_exchanges_without_a_json_body_are_counted_never_refused(
    cli: CliRun, tmp_path: Path, method: str, body: Any, status: int | None
) -> None:
    now = time.time()
    odd = exchange_record(
        method=method,
        url="/v1/messages",
        headers={},
        body=body,
        status=status,
        response_headers={},
        response_body=b"",
        started=now,
        first_byte=None,
        finished=now,
        extra={"error": None if status else "upstream unreachable"},
    )
    turn = exchange_record(
        method="POST",
        url="/v1/messages",
        headers={},
        body=BODY,
        status=200,
        response_headers={},
        response_body=b'{"usage": {"input_tokens": 9, "output_tokens": 1}}',
        started=now,
        first_byte=now,
        finished=now,
    )
    record = tmp_path / "record.jsonl"
    record.write_text(json.dumps(odd) + "\n" + json.dumps(turn) + "\n")
    out = _commands(cli, record, tmp_path)
    assert out["inspect"]["exchanges"] == 2
    assert out["inspect"]["other_exchanges"] == {f"{method} /v1/messages": 1}
    assert [r["index"] for r in out["inspect"]["requests"]] == [1]
    assert len(out["report"]["requests"]) == 1
