"""One-shot commands end without tearing down what they built: the output, the exit code and
the exit handlers are exactly those of an ordinary exit."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from ipse.cli import _lifetime as lifetime
from ipse.cli.main import cli

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
_active_count = threading.active_count  # (the fixture below stands in for it)


class _Ended(Exception):
    """Raised instead of ending the test runner's process."""

    def __init__(self, code: int) -> None:
        self.code = code


@pytest.fixture
def no_exit(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    ended: list[int] = []

    def fake_exit(code: int) -> None:
        ended.append(code)
        raise _Ended(code)

    monkeypatch.setattr("ipse.cli._lifetime.os._exit", fake_exit)
    monkeypatch.setattr(lifetime, "_kept", None)
    # (threads other tests left running in this process are not this test's)
    monkeypatch.setattr("ipse.cli._lifetime.threading.active_count", lambda: 1)
    yield ended


def _script(tmp_path: Path, body: str) -> subprocess.CompletedProcess[bytes]:
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(body))
    return subprocess.run([sys.executable, str(path)], capture_output=True, cwd=tmp_path)


def test_finish_flushes_output_runs_exit_handlers_and_keeps_the_code(tmp_path: Path) -> None:
    done = _script(
        tmp_path,
        """
        import atexit, sys
        from pathlib import Path
        from ipse.cli import _lifetime as lifetime

        lifetime.arm()
        lifetime.keep([{"big": "x" * 1000} for _ in range(1000)])
        atexit.register(lambda: Path("handler-ran").write_text("yes"))
        atexit.register(lambda: sys.stderr.write("from a handler\\n"))
        for n in range(20000):  # far more than one buffer of a pipe
            sys.stdout.write(f"line {n}\\n")
        lifetime.finish(3)
        """,
    )
    assert done.returncode == 3, done.stderr
    lines = done.stdout.decode().splitlines()
    assert lines == [f"line {n}" for n in range(20000)]
    assert done.stderr == b"from a handler\n"
    assert (tmp_path / "handler-ran").read_text() == "yes"


def test_keep_does_nothing_unless_armed(no_exit: list[int]) -> None:
    lifetime.keep("a value")
    assert lifetime._kept is None
    lifetime.arm()
    lifetime.keep("a value", "another")
    assert lifetime._kept == ["a value", "another"]


def test_a_running_thread_gets_an_ordinary_exit(
    no_exit: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ipse.cli._lifetime.threading.active_count", _active_count)
    release = threading.Event()
    worker = threading.Thread(target=release.wait)
    worker.start()
    try:
        with pytest.raises(SystemExit) as raised:
            lifetime.finish(2)
    finally:
        release.set()
        worker.join()
    assert raised.value.code == 2
    assert no_exit == []


def test_an_output_that_cannot_be_flushed_gets_an_ordinary_exit(
    no_exit: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    class Broken:
        def flush(self) -> None:
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", Broken())
    with pytest.raises(SystemExit) as raised:
        lifetime.finish(0)
    assert raised.value.code == 0  # the interpreter's own exit then reports the pipe
    assert no_exit == []


def test_finish_ends_with_the_code(no_exit: list[int]) -> None:
    with pytest.raises(_Ended):
        lifetime.finish(1)
    assert no_exit == [1]


@pytest.mark.parametrize(
    "args",
    [
        ("prefix", str(EXAMPLES / "tool_heavy.jsonl"), "--json"),
        ("prefix", str(EXAMPLES / "tool_heavy.jsonl")),
        ("prefix", str(EXAMPLES / "no-such-file.jsonl")),
        ("inspect", str(EXAMPLES / "tool_heavy.jsonl"), "--json"),
        ("inspect", str(EXAMPLES / "tool_heavy.jsonl"), "--messages"),
        ("nonsense",),
    ],
)
def test_the_executable_answers_as_the_command_line_does(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    """The executable (which ends with `finish`) prints, word for word, and exits with what
    the command line run in this process does."""
    done = subprocess.run(
        [sys.executable, "-m", "ipse", *args],
        capture_output=True,
        cwd=tmp_path,
        env={**_env(), "COLUMNS": "200"},
    )
    here = CliRunner().invoke(cli, list(args), env={"COLUMNS": "200"}, prog_name="ipse")
    assert here.exit_code == (0 if "no-such" not in " ".join(args) and args[0] != "nonsense" else 2)
    assert done.returncode == here.exit_code
    assert done.stdout.decode() == here.stdout
    assert done.stderr.decode() == here.stderr


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR")}
