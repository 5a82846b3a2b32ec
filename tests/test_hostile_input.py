"""Bad input is one line on stderr, exit 2, and nothing written: JSON nested 100,000 deep,
FIFOs and devices where files belong, files over the size limit, invalid UTF-8, binary
input, lone surrogates, empty transitions, non-UTF-8 arguments, and requests of the wrong shape.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ipse import jsonio
from ipse.errors import InputError
from ipse.fileio import read_bytes
from tests.conftest import run_cli

DEEP = b"[" * 100_000


def ipse(
    *args: str | bytes, cwd: Path | None = None, stdin: bytes | None = None, **env: str
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "ipse.cli.main", *args],
        capture_output=True,
        cwd=cwd,
        input=stdin,
        env={**os.environ, **env},
        timeout=60,  # a FIFO that blocked would fail here instead of hanging the suite
        check=False,
    )


def refused(done: subprocess.CompletedProcess[bytes], *words: str) -> str:
    err = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 2, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("ipse: error: "), err
    assert "Traceback" not in err
    for word in words:
        assert word in err, err
    return err


def test_deep_json_is_a_decode_error_on_both_paths() -> None:
    for text in (DEEP, b"[" * 1000 + b'"\\ud800"' + b"]" * 1000):
        with pytest.raises(jsonio.JSONDecodeError, match="depth limit exceeded"):
            jsonio.loads(text)
    assert jsonio.loads(b'[["\\ud800"]]') == [["\ud800"]]  # shallow: the fallback still reads it


@pytest.mark.parametrize("depth", [254, 255, 1000, 1024])
def test_whatever_is_read_can_be_written_back(depth: int) -> None:
    for text in (
        b"[" * depth + b"]" * depth,
        b'{"a":' * (depth - 1) + b'"\xc3\xa9"' + b"}" * (depth - 1),
    ):
        assert jsonio.dumps(jsonio.loads(text)) == text
    value: object = "\ud800"  # deep, and holding a lone surrogate: written as an escape
    for _ in range(depth - 1):
        value = [value]
    assert jsonio.dumps(value) == b"[" * (depth - 1) + b'"\\ud800"' + b"]" * (depth - 1)


@pytest.mark.parametrize(
    "command",
    [["inspect"], ["prefix"], ["lint"], ["handoff", "--at", "now"], ["twin", "apply", "t"]],
)
def test_deep_json_files(tmp_path: Path, command: list[str]) -> None:
    path = tmp_path / "deep.json"
    path.write_bytes(DEEP)
    store = ["--store", f"sqlite:///{tmp_path / 'ipse.db'}"] if command[0] == "twin" else []
    refused(ipse(*command, str(path), *store), "depth limit exceeded")


def test_a_hook_with_deep_json_on_stdin_still_checkpoints(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    assert ipse("state", "init", "--goal", "g", "--dir", str(folder)).returncode == 0
    for stdin in (DEEP, b"[" * 1000 + b'"\\ud800"' + b"]" * 1000, b"\xff\xfe"):
        done = ipse(
            "state", "checkpoint", "--hook", "claude-code", "m", "--dir", str(folder), stdin=stdin
        )
        assert done.returncode == 0, done.stderr


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def _commands(tmp_path: Path, target: str) -> list[list[str]]:
    store = f"sqlite:///{tmp_path / 'ipse.db'}"
    ok = tmp_path / "ok.jsonl"
    ok.write_text('{"op": "establish_fact", "text": "x"}\n')
    return [
        ["inspect", target],
        ["inspect", target, "--format", "http-log"],
        ["prefix", target],
        ["lint", target],
        ["handoff", target, "--at", "now"],
        ["twin", "apply", "t", target, "--store", store],
        ["twin", "apply", "t", str(ok), "--config", target, "--store", store],
        ["state", "stamp", "claim", "--artifact", target, "--dir", str(tmp_path / "state")],
    ]


def test_a_fifo_is_refused_without_blocking(tmp_path: Path, fifo: Path) -> None:
    ipse("state", "init", "--goal", "g", "--dir", str(tmp_path / "state"))
    for command in _commands(tmp_path, str(fifo)):
        refused(ipse(*command), "FIFO")
    assert (
        not (tmp_path / "ipse.db").exists()
        or b"no snapshots"
        in ipse("twin", "history", "t", "--store", f"sqlite:///{tmp_path / 'ipse.db'}").stdout
    )


def test_a_device_is_refused_without_reading_it(tmp_path: Path) -> None:
    ipse("state", "init", "--goal", "g", "--dir", str(tmp_path / "state"))
    for command in _commands(tmp_path, "/dev/zero"):
        refused(ipse(*command), "device")


def test_a_file_over_the_limit_names_the_way_to_raise_it(tmp_path: Path) -> None:
    path = tmp_path / "req.json"
    path.write_text(
        json.dumps({"model": "m", "messages": [{"role": "user", "content": "x" * 500}]})
    )
    refused(ipse("inspect", str(path), IPSE_MAX_INPUT_BYTES="100"), "IPSE_MAX_INPUT_BYTES")
    assert ipse("inspect", str(path), IPSE_MAX_INPUT_BYTES="100000").returncode == 0
    with pytest.raises(InputError, match="file too large"):
        read_bytes(path, limit=10)
    refused(ipse("inspect", str(path), IPSE_MAX_INPUT_BYTES="lots"), "IPSE_MAX_INPUT_BYTES")


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b'{"op": "establish_fact", "text": "a\xff"}\n', ("line 1", "not valid UTF-8")),
        (b"\x7fELF\x02\x01\x01\x00\x00\x00\x00", ("binary",)),
        (b'{"op": "establish_fact", "text": "a\\ud800"}\n', ("line 1", "surrogate")),
        (b"", ("no transitions", "nothing applied")),
        (b"\n  \n", ("no transitions",)),
    ],
)
def test_twin_apply_refuses_and_stores_nothing(
    tmp_path: Path, content: bytes, words: tuple[str, ...]
) -> None:
    path = tmp_path / "turn.jsonl"
    path.write_bytes(content)
    store = f"sqlite:///{tmp_path / 'ipse.db'}"
    refused(ipse("twin", "apply", "t", str(path), "--store", store), *words)
    refused(ipse("twin", "apply", "t", "-", "--store", store, stdin=content), *words)
    assert not (tmp_path / "ipse.db").exists()  # refused before the store was opened


def test_state_commands_refuse_non_utf8_arguments(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    refused(ipse("state", "init", "--goal", b"a\xff", "--dir", str(folder)), "not valid UTF-8")
    assert not folder.exists()
    assert ipse("state", "init", "--goal", "g", "--dir", str(folder)).returncode == 0
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    refused(ipse("state", "next", b"\xff\xfe", "--dir", str(folder)), "TEXT", "not valid UTF-8")
    refused(ipse("state", "invariant", b"x\xff", "--reason", "r", "--dir", str(folder)))
    refused(ipse("state", "invariant", "x", "--reason", b"\xff", "--dir", str(folder)))
    refused(ipse("state", "checkpoint", b"\xff", "--dir", str(folder)))
    after = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file() and p.name != ".lock"}
    assert after == {k: v for k, v in before.items() if k != ".lock"}


def test_state_and_twin_text_with_a_lone_surrogate_is_refused_by_the_library(
    tmp_path: Path,
) -> None:
    """What the MCP tools (and any caller) hand the library directly: a lone surrogate (a
    tool call's JSON escape ``\\ud800``) is one `InputError`, and nothing is written."""
    from ipse.statedir import add_invariant, init, log_transition, set_next
    from ipse.twin._state import TwinState
    from ipse.twin._transitions import apply_op

    folder = tmp_path / "state"
    with pytest.raises(InputError, match="not valid UTF-8"):
        init(folder, "goal \ud800")
    with pytest.raises(InputError, match="not valid UTF-8"):
        init(folder, "goal", done="\udcff")
    assert not (folder / ".wal").exists()
    init(folder, "goal")
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    for call in (
        lambda: set_next(folder, "\ud800"),
        lambda: add_invariant(folder, "x\ud800", "r"),
        lambda: add_invariant(folder, "x", "\udc80"),
        lambda: log_transition(folder, "\ud800 done"),
    ):
        with pytest.raises(InputError, match="not valid UTF-8"):
            call()
    after = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    assert {k: v for k, v in after.items() if k != ".lock"} == {
        k: v for k, v in before.items() if k != ".lock"
    }
    state = TwinState.new("t")
    for op, args in (
        ("open_loop", {"text": "\ud800"}),
        ("establish_fact", {"text": "a\udfff"}),
        ("set_counterparty", {"account": "\ud800"}),
        ("close_loop", {"loop": "\ud800"}),
    ):
        with pytest.raises(InputError, match="not valid UTF-8"):
            apply_op(state, op, args)


@pytest.mark.parametrize(
    ("messages", "position"),
    [
        ([1, 2], "request 0 message 0"),
        ([{"role": "user", "content": 7}], "request 0 message 0"),
        ([{"role": "user", "content": "x"}, {"role": "user", "content": [3]}], "message 1 block 0"),
    ],
)
@pytest.mark.parametrize("command", ["prefix", "lint"])
def test_requests_of_the_wrong_shape(
    tmp_path: Path, messages: list[object], position: str, command: str
) -> None:
    path = tmp_path / "req.json"
    path.write_text(json.dumps({"model": "claude-sonnet-4-5", "messages": messages}))
    refused(ipse(command, str(path)), position)


@pytest.mark.parametrize(
    ("front", "said"),
    [
        ({"tools": 1}, "'tools' must be a list of objects"),
        ({"tools": [{"name": "a"}, "b"]}, "'tools' must be a list of objects"),
        ({"system": 5}, "'system' must be a string or a list of block objects"),
        ({"system": [{"type": "text", "text": "a"}, 3]}, "'system' must be a string"),
    ],
)
@pytest.mark.parametrize("command", ["prefix", "lint"])
def test_a_front_of_the_wrong_shape(
    tmp_path: Path, front: dict[str, object], said: str, command: str
) -> None:
    """Found by fuzzing: ``lint`` crashed on a tool list that was a number."""
    path = tmp_path / "req.json"
    body = {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "x"}], **front}
    path.write_text(json.dumps(body))
    refused(ipse(command, str(path)), said, "request 0")


def test_a_deep_line_in_the_wal_is_a_corrupted_line_for_every_state_command(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "state"
    assert ipse("state", "init", "--goal", "g", "--dir", str(folder)).returncode == 0
    with (folder / ".wal").open("ab") as wal:
        wal.write(DEEP + b"\n")
    for command in (
        ["verify"],
        ["resume"],
        ["resume", "--hook", "claude-code"],
        ["next", "step two"],
        ["invariant", "keep it", "--reason", "r"],
        ["checkpoint", "m"],
    ):
        done = ipse("state", *command, "--dir", str(folder))
        err = done.stderr.decode()
        assert done.returncode in (0, 1), err
        assert "internal error" not in err and "Traceback" not in err, err


def _forged_receipt(folder: Path, artifacts: object) -> None:
    """A receipt line whose id matches its content (anyone can compute it): what a hostile
    repository can put beside a state folder."""
    from ipse.statedir._receipts import receipt_id

    body = {"artifacts": artifacts, "claim": "forged", "git": None, "t": "2026-01-01T00:00:00Z"}
    line = json.dumps({"id": receipt_id(body), **body}, sort_keys=True) + "\n"
    with (folder / ".receipts.jsonl").open("a") as receipts:
        receipts.write(line)


@pytest.mark.parametrize(
    ("artifacts", "said"),
    [
        ([{"path": "/dev/zero", "sha256": "0"}], "cannot be checked (not a regular file (a dev"),
        ([{"path": "pipe", "sha256": "0"}], "cannot be checked (not a regular file (a FIFO)"),
        (5, "its artifacts are not a list of objects"),
        ([1], "its artifacts are not a list of objects"),
    ],
)
def test_verify_reads_no_artifact_that_is_not_a_regular_file(
    tmp_path: Path, fifo: Path, artifacts: object, said: str
) -> None:
    """A device is never read (``/dev/zero`` ran verify out of memory) and a FIFO never
    blocks it; a receipt of the wrong shape is a violation, not a crash."""
    folder = tmp_path / "state"
    assert ipse("state", "init", "--goal", "g", "--dir", str(folder)).returncode == 0
    _forged_receipt(folder, artifacts)
    done = ipse("state", "verify", "--dir", str(folder))
    out = done.stdout.decode() + done.stderr.decode()
    assert done.returncode == 1, out
    assert said in out and "not recorded in the WAL" in out, out


def test_a_deep_receipt_line_is_a_violation(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    assert ipse("state", "init", "--goal", "g", "--dir", str(folder)).returncode == 0
    (folder / ".receipts.jsonl").write_bytes(DEEP + b"\n")
    done = ipse("state", "verify", "--dir", str(folder))
    out = done.stdout.decode() + done.stderr.decode()
    assert done.returncode == 1 and "not a receipt (unreadable JSON)" in out, out


def _deep_documents(tmp_path: Path, depth: int) -> list[Path]:
    """A request body and a Claude Code session whose tool call input and tool result are
    nested ``depth`` levels: valid JSON that orjson reads (up to 1024) but writes only to 254."""
    array = "[" * depth + "]" * depth
    obj = '{"a":' * (depth - 3) + "null" + "}" * (depth - 3)
    messages = [
        '{"role":"user","content":"hi"}',
        '{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash",'
        f'"input":{{"x":{array}}}}}],"id":"m1","model":"claude-sonnet-4-5"}}',
        '{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1",'
        f'"content":[{{"type":"text","text":"ok","extra":{obj}}}]}}]}}',
        '{"role":"assistant","content":[{"type":"text","text":"done"}],"id":"m3",'
        '"model":"claude-sonnet-4-5"}',
        '{"role":"user","content":"next"}',
    ]
    body = tmp_path / f"body{depth}.json"
    body.write_text(
        '{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[' + ",".join(messages) + "]}"
    )
    session = tmp_path / f"session{depth}.jsonl"
    records, parent = [], "null"
    for i, message in enumerate(messages):
        role = "assistant" if message.startswith('{"role":"assistant"') else "user"
        records.append(
            f'{{"type":"{role}","uuid":"u{i}","parentUuid":{parent},"sessionId":"s",'
            f'"timestamp":"2026-01-01T00:00:0{i}Z","message":{message}}}'
        )
        parent = f'"u{i}"'
    session.write_text("\n".join(records) + "\n")
    return [body, session]


@pytest.mark.parametrize("depth", [300, 1000])
def test_documents_deeper_than_orjson_writes_are_read_and_written(
    tmp_path: Path, depth: int
) -> None:
    """Found by hand: 255 to 1024 levels read but crashed every command that wrote or hashed
    them (orjson's writer stops at 254); the standard library now writes those."""
    home = {"IPSE_HOME": str(tmp_path / "home")}
    for path in _deep_documents(tmp_path, depth):
        out = tmp_path / "out.json"
        for command in (
            ["inspect", str(path), "--json"],
            ["prefix", str(path), "--json"],
            ["lint", str(path)],
            ["handoff", str(path), "--at", "now", "-o", str(out)],
            ["report", str(path), "-o", str(tmp_path / "r.html")],
        ):
            done = run_cli(*command, env=home)
            assert done.returncode in (0, 1), (command, done.stderr)
        assert b'"name":"Bash"' not in out.read_bytes()  # the handoff removed the deep call
        marker, last = jsonio.loads(out.read_bytes())["messages"][-1]["content"]
        assert marker["text"].startswith("[ipse handoff]")
        assert last == {"type": "text", "text": "next"}
