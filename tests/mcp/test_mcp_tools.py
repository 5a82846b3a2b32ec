"""``ipse mcp`` in memory: the SDK's own client lists the tools, calls each one, and the stored
effects (archive, state files, twin store) are checked; bad arguments come back as tool errors."""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from ipse.archive import open_archive
from ipse.handoff import HandoffOptions, run
from ipse.handoff._notes import SCHEMA
from ipse.handoff._strip import StripOptions
from ipse.mcp import build_server
from ipse.mcp._tools import Settings
from ipse.statedir import init
from ipse.transcript._codec import codec
from ipse.transcript._formats.claude_code_session import write_session
from ipse.twin._tools import TOOL_SPECS
from mcp import Client

NOTES = {
    "done": ["parser ported"],
    "open": ["write the tokenizer"],
    "went_wrong": ["regex lexer too slow"],
    "rejected": [{"approach": "regex lexer", "why": "12 s on 1 MB"}],
    "cwd": "/work/p",
    "recipes": [{"purpose": "tests", "command": "make test"}],
    "claims": [{"claim": "all tests pass", "status": "measured", "evidence": "make test: 0"}],
}


def with_client(settings: Settings, body: Callable[[Any], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        async with Client(build_server(settings)) as client:
            return await body(client)

    return anyio.run(main)


def call(settings: Settings, name: str, arguments: dict[str, Any]) -> Any:
    async def body(client: Any) -> Any:
        return await client.call_tool(name, arguments)

    return with_client(settings, body)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        session="s-" + uuid.uuid4().hex[:8],
        cwd=tmp_path,
        store_url=f"sqlite:///{tmp_path / 'twins.db'}",
        twin="ada",
    )


def test_the_tools_are_listed_with_their_schemas(settings: Settings) -> None:
    async def body(client: Any) -> Any:
        return await client.list_tools()

    listed = {t.name: t for t in with_client(settings, body).tools}
    transitions = {f"twin_{name}": schema for name, _, schema in TOOL_SPECS}
    assert set(listed) == {
        "micro_handoff",
        "recall",
        "archive_list",
        "state_resume",
        "state_next",
        "state_invariant",
        "state_checkpoint",
        "twin_show",
        "twin_rehydrate",
        *transitions,
    }
    assert listed["micro_handoff"].input_schema == SCHEMA
    for name, schema in transitions.items():
        assert listed[name].input_schema == schema
    for tool in listed.values():
        assert tool.input_schema["type"] == "object" and len(tool.description or "") > 30


def test_micro_handoff_stores_the_notes_by_session(settings: Settings) -> None:
    first = call(settings, "micro_handoff", NOTES)
    assert not first.is_error, first.content
    found = first.structured_content
    assert found["session"] == settings.session and found["stored"] is True
    assert found["next_request_drops"] is None  # no conversation at hand: unknown
    assert "notes" not in found  # the call holds them; the result does not repeat them
    archive = open_archive()
    try:
        [item] = archive.items(settings.session)
        recalled = archive.recall(found["checkpoint"], settings.session)
    finally:
        archive.close()
    assert item.kind == "checkpoint" and item.id == found["checkpoint"]
    assert json.loads(recalled.call)["input"] == NOTES
    assert "Rejected:\n- regex lexer: 12 s on 1 MB" in json.loads(recalled.result or b"{}")["text"]
    again = call(settings, "micro_handoff", NOTES)
    assert again.structured_content["checkpoint"] == found["checkpoint"]
    assert again.structured_content["stored"] is False  # the same notes are one checkpoint


def _tool_session() -> dict[str, Any]:
    return {
        "model": "claude-x",
        "messages": [
            {"role": "user", "content": "Port the parser."},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "read it first", "signature": "sig"},
                    {"type": "text", "text": "I will read the parser."},
                    {
                        "type": "tool_use",
                        "id": "toolu_read1",
                        "name": "Read",
                        "input": {"file_path": "/work/p/parser.py"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_read1",
                        "content": "def parse(text):\n    return text.split()\n" * 40,
                    }
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "The parser splits on whitespace; done."},
                    {
                        "type": "tool_use",
                        "id": "toolu_cp",
                        "name": "mcp__ipse__micro_handoff",
                        "input": NOTES,
                    },
                ],
            },
        ],
    }


def test_micro_handoff_says_what_the_next_request_drops(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    session = str(uuid.uuid4())
    write_session(_tool_session(), cwd=str(tmp_path.resolve()), session_id=session)
    settings = Settings(session=f"session:{session}", cwd=tmp_path)
    done = call(settings, "micro_handoff", NOTES)
    assert not done.is_error, done.content
    drop = done.structured_content["next_request_drops"]
    assert drop["tool_calls"] == 1 and drop["tool_results"] == 1
    assert drop["thinking_blocks"] == 1
    assert 0 < drop["tokens"] < drop["tokens_before"]
    assert "drops 1 tool calls, 1 results and 1 thinking blocks" in done.content[0].text


def _proxy_saving(body: dict[str, Any], dialect: str, answer: dict[str, Any]) -> int:
    """What the proxy's log line and record quote for the request after the checkpoint: its
    rewrite of that request, measured as the proxy measures it."""
    from ipse.handoff import tokens_saved
    from ipse.handoff.wire import rewrite_request

    key = codec(dialect).history_key
    sent = {**body, key: [*body[key], answer]}
    rewrite = rewrite_request(sent, dialect, use_cache=False)
    assert rewrite.body is not None, rewrite.reason
    read = codec(dialect).read_body
    return tokens_saved(read(sent), read(rewrite.body))


def test_the_drop_is_the_saving_the_proxy_quotes_for_claude_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    session = str(uuid.uuid4())
    write_session(_tool_session(), cwd=str(tmp_path.resolve()), session_id=session)
    done = call(Settings(session=f"session:{session}", cwd=tmp_path), "micro_handoff", NOTES)
    # the answer the agent gets carries the ledger after the notes' own words, so the handoff
    # at this checkpoint adds no marker: what it drops is what the proxy's rewrite saves
    said = done.structured_content["text"]
    assert "Ledger of the removed tool calls" in said and "[toolu_read1]" in said
    answer = {"type": "tool_result", "tool_use_id": "toolu_cp", "content": said}
    expected = _proxy_saving(_tool_session(), "anthropic", {"role": "user", "content": [answer]})
    assert done.structured_content["next_request_drops"]["tokens"] == expected > 0


def test_the_drop_of_a_codex_thread_is_read_from_its_rollout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Codex's thread id names its rollout; the drop is what the proxy will quote."""
    codex_home = tmp_path / "codex"
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    thread = str(uuid.uuid4())
    read = {
        "type": "function_call",
        "call_id": "call_read",
        "name": "exec_command",
        "arguments": json.dumps({"cmd": "cat parser.py"}),
    }
    output = {
        "type": "function_call_output",
        "call_id": "call_read",
        "output": "def parse(text):\n    return text.split()\n" * 40,
    }
    checkpoint = {
        "type": "function_call",
        "call_id": "call_cp",
        "name": "mcp__ipse__micro_handoff",
        "arguments": json.dumps(NOTES),
    }
    items = [
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "Port the parser."}],
        },
        read,
        output,
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "It splits on whitespace."}],
        },
        checkpoint,
    ]
    meta = {"id": thread, "timestamp": "2026-12-02T04:28:10Z", "cwd": str(tmp_path)}
    start = {"timestamp": "2026-12-02T04:28:10Z", "type": "session_meta", "payload": meta}
    records: list[dict[str, Any]] = [start]
    records += [
        {"timestamp": "2026-12-02T04:28:11Z", "type": "response_item", "payload": item}
        for item in items
    ]
    folder = codex_home / "sessions" / "2026" / "12" / "02"
    folder.mkdir(parents=True)
    rollout = folder / f"rollout-2026-12-02T04-28-10-{thread}.jsonl"
    rollout.write_text("".join(json.dumps(r) + "\n" for r in records))
    done = call(Settings(session=f"session:{thread}", cwd=tmp_path), "micro_handoff", NOTES)
    drop = done.structured_content["next_request_drops"]
    said = done.structured_content["text"]
    assert "- parser.py [call_read]" in said  # the ledger: the read the handoff removes
    answer = {"type": "function_call_output", "call_id": "call_cp", "output": said}
    body = {"model": "gpt-x", "input": items}
    assert drop is not None, done.content
    assert drop["tool_calls"] == 1 and drop["tool_results"] == 1
    assert drop["tokens"] == _proxy_saving(body, "openai-responses", answer) > 0


def test_recall_pages_an_archived_item_and_a_checkpoint(settings: Settings) -> None:
    body = _tool_session()
    answer = {"type": "tool_result", "tool_use_id": "toolu_cp", "content": "recorded"}
    body["messages"].append({"role": "user", "content": [answer]})
    conversation = codec("anthropic").read_body(body)
    options = HandoffOptions(strip=StripOptions(checkpoint_tool="mcp__ipse__micro_handoff"))
    archive = open_archive()
    try:
        run(conversation, options, session=settings.session, archive=archive)
    finally:
        archive.close()
    whole = call(settings, "recall", {"id": "toolu_read1"}).structured_content
    assert whole["next_offset"] is None and "def parse(text)" in whole["text"]
    pages, offset = [], 0
    while offset is not None:
        page = call(settings, "recall", {"id": "toolu_read1", "offset": offset, "max_chars": 500})
        assert not page.is_error
        content = page.structured_content
        pages.append(
            content["text"].split("\n[… ")[0] if content["next_offset"] else content["text"]
        )
        offset = content["next_offset"]
    assert "".join(pages) == whole["text"] and len(pages) > 2
    checkpoint = call(settings, "micro_handoff", NOTES).structured_content["checkpoint"]
    listed = call(settings, "recall", {"checkpoint": checkpoint})
    assert not listed.is_error, listed.content
    assert "toolu_read1" in listed.structured_content["text"]
    assert "Handoff notes" in listed.structured_content["text"]


def test_state_tools_read_and_write_the_state_folder(settings: Settings, tmp_path: Path) -> None:
    init(tmp_path / "state", "Port the parser to Rust")
    assert not call(settings, "state_next", {"text": "write the tokenizer"}).is_error
    added = call(settings, "state_invariant", {"text": "no regex lexer", "reason": "too slow"})
    assert not added.is_error
    logged = call(settings, "state_checkpoint", {"message": "parser ported"})
    assert logged.structured_content["wal_line"] == 4
    assert (tmp_path / "state" / "99_next.md").read_text().strip().endswith("write the tokenizer")
    assert "no regex lexer" in (tmp_path / "state" / "10_invariants.md").read_text()
    resumed = call(settings, "state_resume", {"budget": 2000})
    text = resumed.structured_content["text"]
    assert "Port the parser to Rust" in text and "parser ported" in text


@pytest.fixture(params=["sqlite", "postgres"])
def twin_store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'twins.db'}"
    return str(request.getfixturevalue("pg_url"))


def test_twin_tools_apply_show_and_rehydrate(twin_store: str, tmp_path: Path) -> None:
    from ipse.twin import open_store

    settings = Settings(session="s", cwd=tmp_path, store_url=twin_store, twin="ada")
    assert not call(settings, "twin_set_counterparty", {"account": "dana@example.com"}).is_error
    fact = call(settings, "twin_establish_fact", {"text": "Prefers email", "pinned": True})
    assert fact.structured_content["written"] is True
    assert not call(settings, "twin_open_loop", {"text": "send the invoice"}).is_error
    shown = call(settings, "twin_show", {}).structured_content
    assert shown["state"]["counterparty"]["account"] == "dana@example.com"
    assert shown["version"] == 3
    with open_store(twin_store) as store:
        latest = store.latest("ada")
        assert latest is not None and latest.version == 3
        assert [f.text for f in latest.state.live_facts()] == ["Prefers email"]
    rehydrated = call(settings, "twin_rehydrate", {"format": "text"}).structured_content
    assert "Prefers email" in rehydrated["text"] and "send the invoice" in rehydrated["text"]
    assert rehydrated["cold"] is False and rehydrated["text"].startswith("# Resuming")
    config = tmp_path / "twin.toml"
    config.write_text('id = "ada"\nrole = "You are Ada, Acme support."\n')
    with_role = Settings(
        session="s", cwd=tmp_path, store_url=twin_store, twin="ada", twin_config=config
    )
    prefix = call(with_role, "twin_rehydrate", {"format": "anthropic"}).structured_content
    system = prefix["prefix"]["system"]
    assert system[0]["text"] == "You are Ada, Acme support."
    assert "Prefers email" in system[1]["text"]


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("micro_handoff", {"done": ["a"]}, "missing argument 'open'"),
        ("micro_handoff", {"done": "a", "open": []}, "done: expected a list"),
        ("micro_handoff", {"done": [], "open": [], "mood": "x"}, "unknown argument 'mood'"),
        (
            "micro_handoff",
            {"done": [], "open": [], "claims": [{"claim": "c", "status": "guess", "evidence": ""}]},
            "claims[0].status: must be one of measured, inferred",
        ),
        ("recall", {}, "give one of id, checkpoint, or query/path/kind"),
        ("recall", {"id": "toolu_nowhere"}, "no archived item 'toolu_nowhere'"),
        ("recall", {"id": "x", "max_chars": 5}, "max_chars: must be at least 100"),
        ("state_next", {}, "missing argument 'text'"),
        ("state_resume", {}, "no state folder"),
        ("state_next", {"text": "x"}, "state"),
        ("twin_show", {}, "no snapshot of twin 'ada'"),
        ("twin_close_loop", {"loop": "nothing open"}, "nothing open"),
        ("twin_rehydrate", {"format": "yaml"}, "format: must be one of text, anthropic, openai"),
        ("twin_rehydrate", {"format": "openai"}, "start the server with --twin-config FILE"),
        ("no_such_tool", {}, "unknown tool 'no_such_tool'"),
    ],
)
def test_bad_arguments_are_tool_errors(
    settings: Settings, name: str, arguments: dict[str, Any], message: str
) -> None:
    result = call(settings, name, arguments)
    assert result.is_error
    [content] = result.content
    assert message in content.text and "\n" not in content.text


def test_a_twin_tool_without_a_twin_says_how_to_start_the_server(tmp_path: Path) -> None:
    result = call(Settings(session="s", cwd=tmp_path), "twin_show", {})
    assert result.is_error and "ipse mcp --twin ID" in result.content[0].text


def test_errors_never_show_a_password(tmp_path: Path) -> None:
    url = "postgresql://ipse:hunter2secret@127.0.0.1:1/nowhere?connect_timeout=1"
    settings = Settings(session="s", cwd=tmp_path, archive_url=url)
    result = call(settings, "micro_handoff", {"done": [], "open": []})
    assert result.is_error
    assert "hunter2secret" not in result.content[0].text
    after = call(settings, "recall", {"id": "x"})  # the server still answers
    assert after.is_error and "hunter2secret" not in after.content[0].text


def test_parallel_twin_calls_all_apply_once(twin_store: str, tmp_path: Path) -> None:
    # a model's parallel tool calls reach one server at once: each applies, once, in turn
    from ipse.twin import open_store

    settings = Settings(session="s", cwd=tmp_path, store_url=twin_store, twin="ada")
    results: dict[int, Any] = {}

    async def body(client: Any) -> None:
        async def one(n: int) -> None:
            results[n] = await client.call_tool("twin_make_commitment", {"text": f"promise {n}"})

        async with anyio.create_task_group() as group:
            for n in range(15):
                group.start_soon(one, n)

    with_client(settings, body)
    errors = [r.content[0].text for r in results.values() if r.is_error]
    assert errors == [] and len(results) == 15
    with open_store(twin_store) as store:
        latest = store.latest("ada")
        assert latest is not None and latest.version == 15
        assert sorted(latest.state.commitments) == sorted(f"promise {n}" for n in range(15))


def test_a_slow_error_message_never_holds_a_cheap_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the message of a failed call is built (redacted) off the event loop: while one is still
    # being built, another call is answered; the answers come in that order
    import threading

    from ipse._redact import redact as real

    cheap_answered = threading.Event()

    def slow_redact(text: str, **kwargs: Any) -> str:
        if "SLOW" in text:
            cheap_answered.wait(timeout=20)  # (a guard: on the event loop it never comes)
        return real(text, **kwargs)

    monkeypatch.setattr("ipse.mcp._server.redact", slow_redact)
    order: list[str] = []

    async def body(client: Any) -> None:
        async def slow() -> None:
            await client.call_tool("recall", {"id": "SLOW"})
            order.append("slow")

        async def cheap() -> None:
            await anyio.sleep(0.05)  # (let the slow call start first)
            await client.call_tool("recall", {"id": "cheap"})
            order.append("cheap")
            cheap_answered.set()

        async with anyio.create_task_group() as group:
            group.start_soon(slow)
            group.start_soon(cheap)

    with_client(Settings(session="s", cwd=tmp_path), body)
    assert order == ["cheap", "slow"]
