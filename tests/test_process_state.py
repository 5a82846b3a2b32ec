"""The library leaves the interpreter's state to its caller: reading, replaying and handing off in
a long-running process (the proxy's bookkeeping thread, a notebook, a test runner) never switches
the cyclic collector off, never keeps objects past their use and never touches the exit
handlers. Those are the command line's choices, made in its entry (`ipse.cli.main.entry`)."""

from __future__ import annotations

import atexit
import gc
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from ipse import jsonio
from ipse.cli import _lifetime
from ipse.handoff import HandoffOptions, run
from ipse.prefix import analyze, read_requests
from ipse.transcript import load, write
from tests.handoff.build import anthropic_conv, assistant, call, result, text, user


def _body(path: Path) -> Path:
    conversation = anthropic_conv(
        user(text("Fix the parser.")),
        assistant(text("I will read it."), call("t1", command="cat p.py")),
        user(result("t1", "def parse(): ...")),
        assistant(text("Checkpoint."), call("h1", "micro_handoff", done=["parser fixed"])),
        user(result("h1", "Handoff notes\nDone:\n- parser fixed")),
        assistant(text("Next I run the tests."), call("t2", command="pytest")),
        user(result("t2", "3 passed")),
    )
    path.write_bytes(orjson.dumps(write(conversation)))
    return path


@pytest.fixture
def touched(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The process-wide switches the library calls, by name (each call recorded, none done)."""
    calls: list[str] = []

    def recorder(name: str) -> Callable[..., None]:
        return lambda *args, **kwargs: calls.append(name)

    for owner, name in [
        (gc, "disable"),
        (gc, "enable"),
        (gc, "freeze"),
        (atexit, "register"),
        (atexit, "unregister"),
        (atexit, "_run_exitfuncs"),
        (os, "_exit"),
        (sys, "exit"),
    ]:
        monkeypatch.setattr(owner, name, recorder(f"{owner.__name__}.{name}"))
    # as the command line arms it: the library must still keep nothing
    monkeypatch.setattr(_lifetime, "_kept", None)
    _lifetime.arm()
    return calls


def test_load_replay_and_handoff_leave_the_interpreter_alone(
    tmp_path: Path, touched: list[str]
) -> None:
    assert gc.isenabled()
    exits = atexit._ncallbacks()
    collecting: list[bool] = []

    def progress(items: Any) -> Any:
        for item in items:
            collecting.append(gc.isenabled())
            yield item

    path = _body(tmp_path / "body.json")
    source = load(path)
    done = run(source.current(), HandoffOptions(), session="s1")
    log = read_requests(path)
    report = analyze(log.requests, progress=progress, warnings=log.warnings)
    assert done.body and report.rows
    assert collecting and all(collecting)  # (while the replay ran, too)
    assert touched == []
    assert gc.isenabled()
    assert atexit._ncallbacks() == exits
    assert _lifetime._kept == []


def _nested(depth: int) -> Any:
    value: Any = "\ud800"  # (a lone surrogate: orjson refuses it, the standard library writes it)
    for _ in range(depth):
        value = [value]
    return value


def test_writing_what_orjson_refuses_leaves_the_recursion_limit_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The interpreter's recursion limit is every thread's: a proxy writing such documents from
    several threads would leave it wherever the last one put it back."""
    set_to: list[int] = []
    monkeypatch.setattr(sys, "setrecursionlimit", set_to.append)
    assert jsonio.dumps(_nested(300)) == b"[" * 300 + b'"\\ud800"' + b"]" * 300
    assert set_to == []


def test_a_document_deeper_than_the_limit_is_written_and_the_limit_put_back() -> None:
    limit = sys.getrecursionlimit()
    depth = limit + 500
    assert jsonio.dumps(_nested(depth)) == b"[" * depth + b'"\\ud800"' + b"]" * depth
    assert sys.getrecursionlimit() == limit
