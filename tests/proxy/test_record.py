"""A proxy's ``--record`` file is read by ``ipse inspect``, ``ipse prefix`` and ``ipse report``,
is created 0600, and holds both the client's and the rewritten request with the response."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import anthropic

from tests.conftest import CliRun
from tests.proxy.conftest import ProxyFactory
from tests.support.anthropic_upstream import anthropic_upstream


def _session(proxy_url: str) -> None:
    client: Any = anthropic.Anthropic(base_url=proxy_url, api_key="sk-ant-record-secret")
    messages: list[dict[str, Any]] = [{"role": "user", "content": "start the work"}]
    system = [{"type": "text", "text": "You help. " * 200, "cache_control": {"type": "ephemeral"}}]
    for n in range(4):
        if n % 2:
            with client.messages.stream(
                model="claude-sonnet-5", max_tokens=50, system=system, messages=messages
            ) as stream:
                reply = stream.get_final_message()
        else:
            reply = client.messages.create(
                model="claude-sonnet-5", max_tokens=50, system=system, messages=messages
            )
        messages.append({"role": "assistant", "content": [b.model_dump() for b in reply.content]})
        if reply.stop_reason == "tool_use":
            call = reply.content[-1]
            result = {"type": "tool_result", "tool_use_id": call.id, "content": "done " * 50}
            messages.append({"role": "user", "content": [result]})
        else:
            messages.append({"role": "user", "content": f"next step {n}"})
    client.messages.count_tokens(model="claude-sonnet-5", system=system, messages=messages)


def test_record_is_read_by_inspect_prefix_and_report(
    proxy_factory: ProxyFactory, cli: CliRun, tmp_path: Path
) -> None:
    replies: list[Any] = [
        {"text": "checking", "tool_use": {"id": "toolu_1", "name": "Bash", "input": {"c": "ls"}}},
        {
            "text": "saving",
            "tool_use": {"id": "toolu_cp", "name": "micro_handoff", "input": {"notes": "n"}},
        },
        "continuing",
        "done",
    ]
    with anthropic_upstream(replies) as upstream, proxy_factory(upstream.url) as proxy:
        _session(proxy.url)
        proxy.settle()
        record = proxy.record
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert len(lines) == 5
    assert "sk-ant-record-secret" not in record.read_text()
    rewritten = [line for line in lines if "client_request" in line]
    assert rewritten and all(line["ipse"]["handoff"]["applied"] for line in rewritten)

    inspected = cli("inspect", str(record), "--json")
    assert inspected.returncode == 0, inspected.stderr
    document = json.loads(inspected.stdout)
    assert document  # one row per conversation request (count_tokens is not a turn)

    prefix = cli("prefix", str(record), "--json")
    assert prefix.returncode in (0, 1), prefix.stderr
    analysed = json.loads(prefix.stdout)
    assert len(analysed["requests"]) == 4
    assert analysed["requests"][0]["actual"] is not None  # usage read from JSON and from SSE
    assert analysed["requests"][1]["actual"] is not None

    page = tmp_path / "report.html"
    reported = cli("report", str(record), "-o", str(page))
    assert reported.returncode == 0, reported.stderr
    assert page.stat().st_size > 1000 and b"<svg" in page.read_bytes()
