"""ipse inside the LiteLLM gateway: the real ``litellm`` proxy (a subprocess on loopback, run
with ``examples/litellm/config.yaml`` as it is, which names ``ipse.adapters.litellm.handoff`` as
a callback) in front of the scripted Anthropic and OpenAI upstreams, driven by the official SDKs
on the Anthropic messages route and the OpenAI chat route. Asserts what the upstream receives
(the cut at the checkpoint call, the authored words, the same bytes each turn), what ipse's
store and record hold (the conversation's counters, the archive, the cache analysis) and what
they do not (any credential).

Two gateway processes share one store, ipse's SQLite file (``IPSE_HOME``) and then PostgreSQL
(``IPSE_DATABASE_URL``, skipped without ``IPSE_TEST_DATABASE_URL``); they start once per store
for the module (a start takes seconds to minutes on a small machine);
without ``litellm`` the tests skip, saying why, unless ``IPSE_REQUIRE_CLIENTS`` is set (CI)."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ipse import jsonio
from ipse.archive import open_archive
from ipse.handoff import render_notes, validate
from ipse.store import open_conversations
from ipse.transcript._codec import codec
from tests.conftest import pg_base_url, run_cli
from tests.support.anthropic_upstream import Upstream as AnthropicUpstream
from tests.support.anthropic_upstream import anthropic_upstream
from tests.support.openai_upstream import Upstream as OpenAIUpstream
from tests.support.openai_upstream import openai_upstream
from tests.support.sql import scratch_schema, with_search_path

MASTER_KEY = "sk-litellm-master-5f0c1d2e3a4b6978"
ANTHROPIC_KEY = "sk-ant-upstream-8c1e2f3a4b5d6e7f"
OPENAI_KEY = "sk-openai-upstream-1a2b3c4d5e6f7081"
SECRETS = (MASTER_KEY, ANTHROPIC_KEY, OPENAI_KEY)
REPO = Path(__file__).parents[2]
SRC = REPO / "src"
START_LIMIT = 240.0  # seconds for the gateway to answer its health check
NOTES = {"done": ["found the off-by-one in a.py"], "open": ["add a test"]}
WORDS = [
    "please fix the bug in a.py",
    "I will read a.py first",
    "found it: an off-by-one",
    "fixed; next the test",
    "thanks, add the test now",
]


def _require_litellm() -> str:
    """The ``litellm`` executable of this interpreter's environment, or a skip (a failure under
    IPSE_REQUIRE_CLIENTS)."""
    found = shutil.which("litellm", path=str(Path(sys.executable).parent)) or shutil.which(
        "litellm"
    )
    if importlib.util.find_spec("litellm") is None:
        found = None
    if found:
        return found
    if os.environ.get("IPSE_REQUIRE_CLIENTS", "") not in ("", "0"):
        pytest.fail("the LiteLLM proxy is missing (IPSE_REQUIRE_CLIENTS is set)")
    pytest.skip("the LiteLLM proxy is not installed (pip install 'ipse[litellm]')")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Gateway:
    url: str
    replica: str  # a second gateway on the same store
    home: Path
    record: Path
    log: Path
    anthropic: AnthropicUpstream
    openai: OpenAIUpstream
    schema: str | None  # the PostgreSQL schema of the store, or None for SQLite in ``home``

    @property
    def store_url(self) -> str:
        if self.schema is None:
            return f"sqlite:///{self.home / 'ipse.db'}"
        return with_search_path(pg_base_url(), self.schema)

    def records(self) -> list[dict[str, Any]]:
        if not self.record.exists():
            return []
        return [jsonio.loads(line) for line in self.record.read_bytes().splitlines() if line]

    def settle(self, count: int, limit: float = 60.0) -> list[dict[str, Any]]:
        """The record once it holds ``count`` exchanges (the bookkeeping runs after the
        response, on the gateway's own thread)."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            records = self.records()
            if len(records) >= count:
                return records
            time.sleep(0.1)
        raise AssertionError(f"the gateway booked {len(self.records())} of {count} exchanges")


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health/liveliness", timeout=2) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


@contextlib.contextmanager
def _schema(backend: str) -> Iterator[str | None]:
    """A fresh PostgreSQL schema for the store (dropped afterwards), or None for SQLite."""
    if backend == "sqlite":
        yield None
        return
    with scratch_schema(pg_base_url()) as (_, schema):
        yield schema


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def gateway(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateway]:
    """Two gateways on one store (IPSE_HOME's SQLite file, or PostgreSQL through
    IPSE_DATABASE_URL), the first with a record file."""
    binary = _require_litellm()
    root = tmp_path_factory.mktemp("litellm")
    home, record, log = root / "home", root / "record.jsonl", root / "litellm.log"
    with contextlib.ExitStack() as stack:
        schema = stack.enter_context(_schema(request.param))
        anthropic = stack.enter_context(anthropic_upstream(["OK."]))
        openai = stack.enter_context(openai_upstream(["OK."]))
        config = REPO / "examples" / "litellm" / "config.yaml"
        env = dict(os.environ)
        env.pop("IPSE_DATABASE_URL", None)
        if schema is not None:
            env["IPSE_DATABASE_URL"] = with_search_path(pg_base_url(), schema)
        env.update(
            ANTHROPIC_API_BASE=anthropic.url,
            ANTHROPIC_API_KEY=ANTHROPIC_KEY,
            OPENAI_API_BASE=f"{openai.url}/v1",
            OPENAI_API_KEY=OPENAI_KEY,
            LITELLM_MASTER_KEY=MASTER_KEY,
            IPSE_HOME=str(home),
            IPSE_LITELLM_RECORD=str(record),
            LITELLM_LOCAL_MODEL_COST_MAP="True",
            PYTHONPATH=os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")]),
        )
        # a second gateway on the same store (a replica, no record of its own)
        env2 = {k: v for k, v in env.items() if k != "IPSE_LITELLM_RECORD"}
        processes: list[tuple[subprocess.Popen[bytes], str, Path]] = []
        try:
            for environment, logged in ((env, log), (env2, root / "litellm-2.log")):
                port = _free_port()
                args = [binary, "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
                with logged.open("wb") as out:
                    process = subprocess.Popen(
                        args, env=environment, stdout=out, stderr=subprocess.STDOUT
                    )
                processes.append((process, f"http://127.0.0.1:{port}", logged))
            deadline = time.monotonic() + START_LIMIT
            for process, url, logged in processes:
                while not _healthy(url):
                    if process.poll() is not None or time.monotonic() > deadline:
                        tail = logged.read_text(errors="replace")[-3000:]
                        pytest.fail(f"the LiteLLM proxy did not start:\n{tail}")
                    time.sleep(0.5)
            urls = [url for _, url, _ in processes]
            yield Gateway(urls[0], urls[1], home, record, log, anthropic, openai, schema)
        finally:
            for process, _, _ in processes:
                process.terminate()
            for process, _, _ in processes:
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=10)


def _history_bytes(raw: bytes, key: str, count: int) -> bytes:
    """The bytes on the wire of a body's first ``count`` history items (from the opening
    bracket to the end of item ``count``), read item by item from the raw body."""
    text = raw.decode()
    decoder = json.JSONDecoder()
    start = text.index(f'"{key}":') + len(key) + 3
    while text[start].isspace():
        start += 1
    assert text[start] == "["
    end = start + 1
    for _ in range(count):
        while text[end].isspace() or text[end] == ",":
            end += 1
        _, end = decoder.raw_decode(text, end)
    return text[start:end].encode()


def _authored(messages: list[dict[str, Any]]) -> str:
    out = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out += [b["text"] for b in content if b.get("type") == "text"]
    return "\n".join(out)


def _store_has_no_secret(gateway: Gateway) -> None:
    """No credential in the store's files, its rows, the archive's payloads or the record."""
    files = [p for p in gateway.home.rglob("*") if p.is_file()] + [gateway.record]
    stored = [(path.name, path.read_bytes()) for path in files]
    if gateway.schema is not None:
        import psycopg

        with psycopg.connect(pg_base_url(), autocommit=True) as conn:
            tables = conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                (gateway.schema,),
            ).fetchall()
            assert tables
            for (table,) in tables:
                rows = conn.execute(f'SELECT t::text FROM "{gateway.schema}"."{table}" t')
                stored.append((table, "\n".join(r[0] for r in rows).encode()))
    archive = open_archive(gateway.store_url)
    try:
        for session, _ in archive.sessions():
            for item in archive.items(session):
                found = archive.recall(item.id, session)
                stored.append((f"archived {item.id}", found.call + (found.result or b"")))
    finally:
        archive.close()
    for name, data in stored:
        for secret in SECRETS:
            assert secret.encode() not in data, f"{secret[:12]}... stored in {name}"


def _conversation(gateway: Gateway, anchor: str) -> Any:
    store = open_conversations(gateway.store_url)
    try:
        found = [c for c in store.conversations() if c.anchor == anchor]
    finally:
        store.close()
    assert len(found) == 1
    return found[0]


def test_anthropic_messages_route(gateway: Gateway, tmp_path: Path) -> None:
    anthropic = pytest.importorskip("anthropic")
    client: Any = anthropic.Anthropic(base_url=gateway.url, api_key=MASTER_KEY, max_retries=0)
    model = "claude-sonnet-4-6"
    booked = len(gateway.records())
    sent_before = len(gateway.anthropic.messages_requests())
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": WORDS[0]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": WORDS[1]},
                {"type": "tool_use", "id": "toolu_read", "name": "Read", "input": {"path": "a.py"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_read", "content": "x = 1\n" * 300}
            ],
        },
    ]
    client.messages.create(model=model, max_tokens=100, messages=messages)  # no checkpoint yet
    messages += [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": WORDS[2]},
                {
                    "type": "tool_use",
                    "id": "toolu_cp",
                    "name": "mcp__ipse__micro_handoff",
                    "input": NOTES,
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_cp", "content": render_notes(NOTES)}
            ],
        },
    ]
    client.messages.create(model=model, max_tokens=100, messages=messages)
    messages += [
        {"role": "assistant", "content": [{"type": "text", "text": WORDS[3]}]},
        {"role": "user", "content": WORDS[4]},
    ]
    with client.messages.stream(model=model, max_tokens=100, messages=messages) as stream:
        assert stream.get_final_message().content[0].text == "OK."
    records = gateway.settle(booked + 3)[booked:]

    received = [r for r in gateway.anthropic.received if r["path"].split("?")[0] == "/v1/messages"]
    untouched, after_cp, after_more = received[sent_before:]
    assert "toolu_read" in json.dumps(untouched["body"]["messages"])
    for request in (after_cp, after_more):
        body = request["body"]
        assert validate(codec("anthropic").read_body(body)) == []
        text = json.dumps(body["messages"])
        assert '"toolu_read"' not in text and "x = 1" not in text  # the traffic before the cut
        assert "toolu_cp" in text  # the checkpoint call and its notes stay
        authored = _authored(body["messages"])
        assert all(w in authored for w in WORDS[: 3 if request is after_cp else 5])
    # the same bytes each turn: the next request starts with the previous one's history
    kept = len(after_cp["body"]["messages"])
    old = _history_bytes(after_cp["raw"], "messages", kept)
    assert _history_bytes(after_more["raw"], "messages", kept) == old
    # the record holds what went upstream, the client's body beside it, and the analysis
    assert [r["request"]["url"] for r in records] == ["/v1/messages"] * 3
    assert "client_request" not in records[0]
    assert records[1]["request"]["body"]["messages"] == after_cp["body"]["messages"]
    assert records[1]["client_request"]["body"]["messages"] == messages[:5]
    for entry in records:
        cache = entry["ipse"]["cache"]
        assert cache["actual"] == {"cache_read": 0, "cache_write": 0, "uncached": 10}
        assert set(cache["predicted"]) >= {"cache_read", "cache_write", "uncached"}
    # ipse prefix reads the record back, with the usage in the route's own shape
    lines = [gateway.record.read_bytes().splitlines()[booked + i] for i in range(3)]
    mine = tmp_path / "anthropic.jsonl"
    mine.write_bytes(b"\n".join(lines) + b"\n")
    result = run_cli("prefix", str(mine), "--json")
    assert result.returncode == 0, result.stderr
    replayed = json.loads(result.stdout)["requests"]
    assert [r["actual"]["uncached"] for r in replayed] == [10, 10, 10]
    assert records[2]["ipse"]["handoff"]["anchor"] == "toolu_cp"
    assert records[2]["ipse"]["handoff"]["checkpoint_tool"] == "mcp__ipse__micro_handoff"
    # the conversation store and the archive are ipse's own
    state = _conversation(gateway, "toolu_cp")
    assert (state.requests, state.handoffs, state.removed_calls) == (3, 1, 1)  # one cut, once
    archive = open_archive(gateway.store_url)
    try:
        items = archive.items(state.key)
        assert [i.id for i in items] == ["toolu_read"]
        assert b"x = 1" in (archive.recall("toolu_read", state.key).result or b"")
    finally:
        archive.close()
    _store_has_no_secret(gateway)


def test_openai_chat_route(gateway: Gateway) -> None:
    openai = pytest.importorskip("openai")
    client: Any = openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=MASTER_KEY, max_retries=0)
    booked = len(gateway.records())
    sent_before = len(gateway.openai.bodies("/chat/completions"))

    def call(cid: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": cid,
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }

    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You fix bugs."},
        {"role": "user", "content": WORDS[0]},
        {
            "role": "assistant",
            "content": WORDS[1],
            "tool_calls": [call("call_read", "read_file", {"path": "a.py"})],
        },
        {"role": "tool", "tool_call_id": "call_read", "content": "y = 2\n" * 300},
        {
            "role": "assistant",
            "content": WORDS[2],
            "tool_calls": [call("call_cp", "micro_handoff", NOTES)],
        },
        {"role": "tool", "tool_call_id": "call_cp", "content": render_notes(NOTES)},
    ]
    client.chat.completions.create(model="gpt-5.1", messages=messages)
    messages += [
        {"role": "assistant", "content": WORDS[3]},
        {"role": "user", "content": WORDS[4]},
    ]
    stream = client.chat.completions.create(
        model="gpt-5.1", messages=messages, stream=True, stream_options={"include_usage": True}
    )
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "OK."
    records = gateway.settle(booked + 2)[booked:]

    received = [r for r in gateway.openai.received if r["path"].endswith("/chat/completions")]
    after_cp, after_more = received[sent_before:]
    for request in (after_cp, after_more):
        body = request["body"]
        assert validate(codec("openai-chat").read_body(body)) == []
        text = json.dumps(body["messages"])
        assert '"call_read"' not in text and "y = 2" not in text
        assert "call_cp" in text
        authored = _authored(body["messages"])
        assert all(w in authored for w in WORDS[: 3 if request is after_cp else 5])
    kept = len(after_cp["body"]["messages"])
    old = _history_bytes(after_cp["raw"], "messages", kept)
    assert _history_bytes(after_more["raw"], "messages", kept) == old
    assert [r["request"]["url"] for r in records] == ["/v1/chat/completions"] * 2
    for entry in records:
        assert entry["ipse"]["handoff"]["checkpoint_tool"] == "micro_handoff"
        assert entry["ipse"]["cache"]["actual"] == {
            "cache_read": 0,
            "cache_write": 0,
            "uncached": 10,
        }
    state = _conversation(gateway, "call_cp")
    assert (state.requests, state.handoffs, state.removed_calls) == (2, 1, 1)  # one cut, once
    _store_has_no_secret(gateway)


def test_a_request_without_a_checkpoint_passes_as_it_came(gateway: Gateway) -> None:
    """Nothing names the checkpoint tool: the body reaches the upstream as LiteLLM sends it
    without the hook, and the request is still booked."""
    openai = pytest.importorskip("openai")
    client: Any = openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=MASTER_KEY, max_retries=0)
    booked = len(gateway.records())
    messages = [{"role": "user", "content": "just a question, no tools"}]
    client.chat.completions.create(model="gpt-5.1", messages=messages)
    record = gateway.settle(booked + 1)[booked]
    assert gateway.openai.bodies("/chat/completions")[-1]["messages"] == messages
    assert record["ipse"]["handoff"] is None and "client_request" not in record
    _store_has_no_secret(gateway)


def test_the_hook_in_process_keeps_litellm_fields_and_skips_count_tokens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook called as LiteLLM calls it: only the history changes; LiteLLM's own fields and
    a count_tokens request are left alone; nothing is booked for a request never sent."""
    _require_litellm()
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # importing it reads no network
    from ipse.adapters.litellm import IpseHandoff

    hook = IpseHandoff(store=f"sqlite:///{tmp_path / 'ipse.db'}", record=tmp_path / "r.jsonl")
    messages = [
        {"role": "user", "content": WORDS[0]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "z"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t2", "name": "micro_handoff", "input": NOTES}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "saved"}],
        },
    ]
    marker = object()
    data: dict[str, Any] = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 50,
        "messages": messages,
        "litellm_call_id": "c1",
        "litellm_logging_obj": marker,
        "metadata": {"user_api_key": MASTER_KEY},
        "proxy_server_request": {
            "url": "http://127.0.0.1:1/v1/messages",
            "headers": {"x-api-key": MASTER_KEY},
        },
    }
    out = asyncio.run(hook.async_pre_call_hook(None, None, dict(data), "anthropic_messages"))
    assert out["litellm_logging_obj"] is marker and out["metadata"] == data["metadata"]
    calls = [
        b["id"]
        for m in out["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_use"
    ]
    assert calls == ["t2"]  # t1 removed (the marker's ledger names it for recall), t2 kept
    counted = dict(data, proxy_server_request={"url": "http://h/v1/messages/count_tokens"})
    again = asyncio.run(hook.async_pre_call_hook(None, None, counted, "anthropic_messages"))
    assert again["messages"] is messages
    other = asyncio.run(hook.async_pre_call_hook(None, None, dict(data), "aembedding"))
    assert other["messages"] is messages
    hook.close()
    assert not (tmp_path / "r.jsonl").exists()


PROVIDER_KEY = "sk-proj-Zq8r2Lm4Np6Qs8Tu0Vw2Xy4Za6Bc8De0Fg"  # the gateway's own upstream key
GOOGLE_KEY = "AIzaSyD3f8h2K9m4N6p8Q1r3S5t7V9w1X3y5Z7a"
BODY_SECRETS = {
    "password": "hunter2-gateway-pass",
    "auth_token": "tok-5d8e1f2a3b4c6d7e",
    "x-api-key": "sk-body-key-0a1b2c3d4e5f",
    "access_token": "ya29.a0AfH6SMBx7y8z9",
}


class _ProviderError(Exception):
    status_code = 401


def test_the_hook_keeps_no_credential_of_the_body_or_the_providers_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Body fields named like credentials, the client's key, and a provider's error that quotes
    the gateway's upstream key and a Google ``?key=``: none reaches the record or the
    ``ipse.litellm`` log line (the masking ``ipse proxy`` uses, `ipse._redact`)."""
    _require_litellm()
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from datetime import UTC, datetime

    from ipse.adapters.litellm import IpseHandoff

    record = tmp_path / "r.jsonl"
    hook = IpseHandoff(store=f"sqlite:///{tmp_path / 'ipse.db'}", record=record)
    messages = [
        {"role": "user", "content": WORDS[0]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "Read", "input": {"path": "a.py"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "z"}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t2", "name": "micro_handoff", "input": NOTES}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t2", "content": "saved"}]},
    ]  # fmt: skip
    data: dict[str, Any] = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 50,
        "messages": messages,
        **BODY_SECRETS,
        "litellm_call_id": "c-secret",
        "metadata": {"user_api_key": MASTER_KEY},
        "proxy_server_request": {
            "url": "http://127.0.0.1:1/v1/messages",
            "headers": {"x-api-key": MASTER_KEY},
        },
    }
    asyncio.run(hook.async_pre_call_hook(None, None, data, "anthropic_messages"))
    error = _ProviderError(
        "AnthropicException - 401 from https://proxy.example/v1/messages: Incorrect API key "
        f"(Authorization: Bearer {PROVIDER_KEY}); fallback "
        f"https://generativelanguage.googleapis.com/v1beta/models/g:generate?key={GOOGLE_KEY}"
        f"&alt=sse said: {BODY_SECRETS['password']}"
    )
    now = datetime.now(UTC)
    with caplog.at_level("INFO", logger="ipse.litellm"):
        kwargs = {"litellm_call_id": "c-secret", "exception": error}
        asyncio.run(hook.async_log_failure_event(kwargs, None, now, now))
        hook.close()
    written = record.read_text() + "\n".join(r.getMessage() for r in caplog.records)
    assert "AnthropicException" in written and "generativelanguage" in written  # logged
    for secret in (MASTER_KEY, PROVIDER_KEY, GOOGLE_KEY, *BODY_SECRETS.values()):
        assert secret not in written, secret
    [entry] = [json.loads(line) for line in record.read_text().splitlines()]
    assert all(entry["client_request"]["body"][name] == "***" for name in BODY_SECRETS)
    assert entry["request"]["body"]["model"] == "claude-sonnet-4-6"  # the rest as it came


@pytest.mark.parametrize(
    ("usage", "dialect", "expected"),
    [
        # LiteLLM's usage for an Anthropic model: prompt_tokens counts the reads and writes
        (
            {
                "prompt_tokens": 1210,
                "completion_tokens": 3,
                "cache_read_input_tokens": 1000,
                "cache_creation_input_tokens": 200,
                "prompt_tokens_details": {"cached_tokens": 1000},
            },
            "anthropic",
            {
                "input_tokens": 10,
                "cache_read_input_tokens": 1000,
                "cache_creation_input_tokens": 200,
            },
        ),
        (
            {"prompt_tokens": 1024, "prompt_tokens_details": {"cached_tokens": 512}},
            "openai-chat",
            {"prompt_tokens": 1024, "prompt_tokens_details": {"cached_tokens": 512}},
        ),
        # a provider's own Anthropic usage passes as it is
        (
            {"input_tokens": 10, "cache_read_input_tokens": 5, "cache_creation_input_tokens": 0},
            "anthropic",
            {"input_tokens": 10, "cache_read_input_tokens": 5, "cache_creation_input_tokens": 0},
        ),
        ({"completion_tokens": 3}, "anthropic", None),
    ],
)
def test_usage_in_the_routes_shape(
    monkeypatch: pytest.MonkeyPatch, usage: dict[str, Any], dialect: str, expected: Any
) -> None:
    _require_litellm()
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from ipse.adapters.litellm import usage_of
    from ipse.prefix._actual import actual_tokens

    assert usage_of({"usage": usage}, dialect) == expected
    assert usage_of(None, dialect) is None
    if expected is not None:
        assert actual_tokens(expected) == actual_tokens(usage_of({"usage": expected}, dialect))


def test_a_replica_on_the_same_store_sends_the_same_bytes(gateway: Gateway) -> None:
    """The checkpoint request goes through one gateway, the next turn through another process
    on the same store: the cut is a function of the body, so the upstream gets the same bytes,
    and the store counts the conversation's requests from both."""
    anthropic = pytest.importorskip("anthropic")
    first: Any = anthropic.Anthropic(base_url=gateway.url, api_key=MASTER_KEY, max_retries=0)
    second: Any = anthropic.Anthropic(base_url=gateway.replica, api_key=MASTER_KEY, max_retries=0)
    model = "claude-sonnet-4-6"
    sent_before = len(gateway.anthropic.messages_requests())
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "a replica question: what is in b.py?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading b.py."},
                {"type": "tool_use", "id": "toolu_b", "name": "Read", "input": {"path": "b.py"}},
                {"type": "tool_use", "id": "toolu_cp2", "name": "micro_handoff", "input": NOTES},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_b", "content": "b = 3\n" * 200},
                {"type": "tool_result", "tool_use_id": "toolu_cp2", "content": "saved"},
            ],
        },
    ]
    first.messages.create(model=model, max_tokens=100, messages=messages)
    messages += [
        {"role": "assistant", "content": [{"type": "text", "text": "b.py sets b."}]},
        {"role": "user", "content": "and after the replica?"},
    ]
    second.messages.create(model=model, max_tokens=100, messages=messages)
    received = [r for r in gateway.anthropic.received if r["path"].split("?")[0] == "/v1/messages"]
    one, two = received[sent_before:]
    for request in (one, two):
        text = json.dumps(request["body"]["messages"])
        assert '"toolu_b"' not in text and "b = 3" not in text and "toolu_cp2" in text
        assert "Reading b.py." in _authored(request["body"]["messages"])
    kept = len(one["body"]["messages"])
    old = _history_bytes(one["raw"], "messages", kept)
    assert _history_bytes(two["raw"], "messages", kept) == old
    deadline = time.monotonic() + 60
    while True:
        state = _conversation(gateway, "toolu_cp2")
        if state.requests == 2 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert (state.requests, state.handoffs) == (2, 1)
    _store_has_no_secret(gateway)
