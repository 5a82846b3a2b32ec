"""``ipse mcp`` over stdio, line by line as a harness speaks it: every request gets an answer
(an error where it cannot be read: lone surrogates, bytes that are not UTF-8, broken JSON, a
message over the limit), the tool list is the same bytes every time, a slow call never holds a
cheap one, and parallel twin calls of one server all apply, each once."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest

from ipse.mcp import _stdio
from ipse.mcp._listing import build, load, wire_tools
from ipse.mcp._tools import Settings, Tool
from ipse.twin import open_store

INITIALIZE = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
)
PING = b'{"jsonrpc":"2.0","id":"ping","method":"ping"}'


class Spawned:
    """``ipse mcp ARGS`` as a subprocess; lines in, answers out (read in a thread)."""

    def __init__(self, cwd: Path, *args: str) -> None:
        env = {**os.environ, "IPSE_SESSION": "stdio-s"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "ipse", "mcp", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def send(self, *lines: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(b"".join(line + b"\n" for line in lines))
        self.process.stdin.flush()

    def raw(self) -> bytes:
        # (a guard against a hang, not a measurement: an answer comes at once or never)
        return self.lines.get(timeout=60)

    def answer(self) -> dict[str, Any]:
        found: dict[str, Any] = json.loads(self.raw())
        return found

    def close(self) -> str:
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)
        return self.process.stderr.read().decode()


@contextmanager
def spawned(cwd: Path, *args: str) -> Iterator[Spawned]:
    server = Spawned(cwd, *args)
    try:
        server.send(INITIALIZE)
        assert server.answer()["result"]["serverInfo"]["name"] == "ipse"
        yield server
    finally:
        if server.process.poll() is None:
            server.close()


def test_tools_json_is_the_tool_table() -> None:
    # the definitions the server lists without importing the tools are the tools' own
    # (regenerate with `python -m ipse.mcp._listing` after changing a tool)
    assert load() == build()


def test_the_tool_list_is_the_same_bytes_every_time(tmp_path: Path) -> None:
    with spawned(tmp_path) as server:
        arrays = []
        for n in range(5):
            server.send(b'{"jsonrpc":"2.0","id":%d,"method":"tools/list"}' % n)
            line = server.raw()
            arrays.append(line[line.index(b'"tools":') : line.rindex(b"}}")])
            server.send(
                b'{"jsonrpc":"2.0","id":"c%d","method":"tools/call","params":'
                b'{"name":"recall","arguments":{"id":"x"}}}' % n
            )
            server.raw()
    assert len(set(arrays)) == 1
    assert arrays[0] == b'"tools":' + wire_tools(twin=False)


BAD = [
    # a lone surrogate in an argument, in the id, in the method, in a key
    (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"recall",'
        b'"arguments":{"id":"\\ud800"}}}',
        1,
        "result",
    ),
    (b'{"jsonrpc":"2.0","id":"\\udfff","method":"ping"}', "\udfff", "result"),
    (b'{"jsonrpc":"2.0","id":2,"method":"tools/\\ud800"}', 2, "error"),
    (
        b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"state_next",'
        b'"arguments":{"text":"a\\ud83d"}}}',
        3,
        "result",
    ),
    (
        b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"\\ud800",'
        b'"arguments":{"\\udc00":1}}}',
        4,
        "result",
    ),
    # bytes that are not UTF-8, JSON that is not JSON, shapes that are not requests
    (b'{"jsonrpc":"2.0","id":5,"method":"ping","x":"\xff\xfe"}', 5, "error"),
    (b'{"jsonrpc":"2.0","id":6,"method":"ping"', 6, "error"),
    (b"garbage", None, "error"),
    (b'[{"jsonrpc":"2.0","id":7,"method":"ping"}]', None, "error"),
    (b"42", None, "error"),
    (b'{"jsonrpc":"1.0","id":8,"method":"ping"}', 8, "error"),
    (b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', None, "error"),
    (b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":[1]}', 9, "error"),
    (b'{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":1}}', 10, "error"),
    (b'{"jsonrpc":"2.0","id":11,"method":"resources/list"}', 11, "error"),
    (b'{"jsonrpc":"2.0","id":12,"method":"ping","params":' + b"[" * 100_000, 12, "error"),
]


def test_every_request_gets_an_answer(tmp_path: Path) -> None:
    with spawned(tmp_path) as server:
        for line, rid, kind in BAD:
            server.send(line)
            answer = server.answer()
            assert answer["id"] == rid and kind in answer, (line[:80], answer)
            server.send(PING)  # and the server still serves
            assert server.answer() == {"jsonrpc": "2.0", "id": "ping", "result": {}}
        stderr = server.close()
    assert "Traceback" not in stderr


def test_a_message_over_the_limit_is_answered_and_skipped(tmp_path: Path) -> None:
    big = b"x" * (_stdio.MAX_MESSAGE_BYTES + 1000)
    request = b'{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"name":"recall",'
    with spawned(tmp_path) as server:
        server.send(request + b'"arguments":{"id":"' + big + b'"}}}')
        answer = server.answer()
        assert answer["id"] == 77 and "at most 8 MiB a message" in answer["error"]["message"]
        # the id at the end, as Claude Code writes it
        server.send(b'{"method":"ping","params":{"x":"' + big + b'"},"jsonrpc":"2.0","id":78}')
        assert server.answer()["id"] == 78
        server.send(PING)
        assert server.answer()["result"] == {}


def test_a_line_over_the_limit_is_never_held_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_stdio, "MAX_MESSAGE_BYTES", 1000)
    reads: list[int] = []

    class Source(BytesIO):
        def readline(self, size: int | None = -1) -> bytes:
            line = super().readline(size)
            reads.append(len(line))
            return line

    out = BytesIO()
    source = Source(b'{"jsonrpc":"2.0","id":1,"x":"' + b"y" * 100_000 + b'"}\n' + PING + b"\n")
    _stdio.serve(Settings(session="s"), source, out)
    first, second = (json.loads(x) for x in out.getvalue().splitlines())
    assert first["id"] == 1 and first["error"]["code"] == _stdio.INVALID_REQUEST
    assert second == {"jsonrpc": "2.0", "id": "ping", "result": {}}
    assert max(reads) <= 1001


def test_a_cheap_call_answers_while_a_slow_one_runs(tmp_path: Path) -> None:
    # a tool that runs until the cheap call's answer is out: answered in that order, or the
    # slow one gives up waiting and the order shows that the cheap call had to wait
    out = _Lines()
    front = _stdio.Front(Settings(session="s", cwd=tmp_path), out)
    cheap_answered = threading.Event()

    def on_line(line: bytes) -> None:
        if b'"id":"cheap"' in line:
            cheap_answered.set()

    out.on_line = on_line

    def slow(settings: Settings, args: dict[str, Any]) -> dict[str, Any]:
        cheap_answered.wait(timeout=30)
        return {"text": "slow done"}

    def cheap(settings: Settings, args: dict[str, Any]) -> dict[str, Any]:
        return {"text": "cheap done"}

    schema = {"type": "object", "properties": {}}
    front._table = {n: Tool(n, "", schema, f) for n, f in (("slow", slow), ("cheap", cheap))}
    call = b'{"jsonrpc":"2.0","id":"%s","method":"tools/call","params":{"name":"%s"}}'
    front.handle(call % (b"slow", b"slow"))
    front.handle(call % (b"cheap", b"cheap"))
    front.handle(PING)
    front.wait()
    order = [json.loads(line)["id"] for line in out.lines]
    # (the ping is answered on the reading thread: before or after either call, as it happens)
    assert sorted(order) == ["cheap", "ping", "slow"]
    assert order.index("cheap") < order.index("slow")


class _Lines:
    """A binary stream that keeps each line written to it."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.on_line: Any = None

    def write(self, data: bytes) -> int:
        self.lines.append(data)
        if self.on_line is not None:
            self.on_line(data)
        return len(data)

    def flush(self) -> None:
        pass


def test_a_long_argument_comes_back_cut_and_costs_one_pass(tmp_path: Path) -> None:
    with spawned(tmp_path) as server:
        long_id = "a" * 80_000
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "recall", "arguments": {"id": long_id}},
        }
        server.send(json.dumps(call).encode(), PING)
        first = server.answer()
        second = server.answer()
    answers = {first["id"]: first, second["id"]: second}
    text = answers[1]["result"]["content"][0]["text"]
    assert answers[1]["result"]["isError"] and len(text) < 2100
    assert text.startswith("no archived item 'aaaa") and text.endswith("more characters]")


def test_parallel_twin_calls_all_apply_once(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'twins.db'}"
    with spawned(tmp_path, "--twin", "ada", "--store", store) as server:
        calls = [
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": n,
                    "method": "tools/call",
                    "params": {
                        "name": "twin_make_commitment",
                        "arguments": {"text": f"promise {n}"},
                    },
                }
            ).encode()
            for n in range(15)
        ]
        server.send(*calls)  # all at once: the server runs them in parallel threads
        answers = [server.answer() for _ in calls]
    errors = [a["result"]["content"][0]["text"] for a in answers if a["result"]["isError"]]
    assert errors == []
    assert sorted(a["id"] for a in answers) == list(range(15))
    with open_store(store) as opened:
        latest = opened.latest("ada")
        history = opened.history("ada")
    assert latest is not None and latest.version == 15 and len(history) == 15
    texts = sorted(latest.state.commitments)
    assert texts == sorted(f"promise {n}" for n in range(15))


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--session", "s1", "--state-dir", "st"],
        ["--session=s1", "--twin=ada", "--store", "sqlite:///t.db", "--twin-config", "t.toml"],
        ["--archive", "sqlite:///a.db"],
    ],
)
def test_the_quick_start_reads_options_as_the_command_line_does(
    argv: list[str], cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("IPSE_SESSION", "env-session")
    seen: list[Settings] = []
    monkeypatch.setattr("ipse.mcp._server.serve_stdio", seen.append)
    monkeypatch.setattr("ipse.mcp._shared.serve_stdio", seen.append, raising=False)
    done = cli("mcp", *argv)
    assert done.returncode == 0, done.stderr
    quick = _stdio.settings_from_argv(argv)
    assert quick is not None and len(seen) == 1
    assert {**vars_of(quick), "cwd": None} == {**vars_of(seen[0]), "cwd": None}


@pytest.mark.parametrize(
    "argv", [["--http", "8000"], ["--help"], ["--twin"], ["--twin", "a", "--twin", "b"], ["-x"]]
)
def test_the_quick_start_leaves_the_rest_to_the_command_line(argv: list[str]) -> None:
    assert _stdio.settings_from_argv(argv) is None


def vars_of(settings: Settings) -> dict[str, Any]:
    return {name: getattr(settings, name) for name in settings.__slots__}
