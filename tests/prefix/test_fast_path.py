"""``ipse prefix``'s fast path (`ipse.cli._fast_prefix`): the same stdout, stderr and exit code
as the full command line (`ipse.cli.main`), on every real session and on made-up command lines,
errors included; and what it prints itself is what rich prints."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Callable
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ipse.cli._fast_prefix import PlainConsole, options
from ipse.cli._output import console, print_table

from ..conftest import (
    CLAUDE_CODE,
    HTTP_LOG,
    OPENAI_TRAJ,
    SHARED,
    SHARED_DATA,
    needs_shared,
    shared_glob,
)

_SESSIONS = [
    *shared_glob(CLAUDE_CODE, "*.jsonl"),
    *shared_glob(SHARED_DATA / "codex", "*.jsonl"),
    *([HTTP_LOG, OPENAI_TRAJ] if HTTP_LOG.is_dir() else []),
]


def _env() -> dict[str, str]:
    """The environment without a width or colour for rich (under pytest ``COLUMNS`` is 80)."""
    return {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR")}


def _run(module: str, args: list[str], cwd: Path | None = None) -> tuple[int, str, str]:
    env = _env()
    done = subprocess.run(
        [sys.executable, "-m", module, "prefix", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )
    return done.returncode, done.stdout, done.stderr


def _same(args: list[str], cwd: Path | None = None) -> tuple[int, str, str]:
    """The fast answer (``python -m ipse``: the executable's entry), checked against the full
    command line's; returned."""
    fast = _run("ipse", args, cwd)
    assert fast == _run("ipse.cli.main", args, cwd)
    return fast


@pytest.mark.parametrize(
    "session", [needs_shared(p, id=p.name[:30]) for p in _SESSIONS] or [needs_shared(None)]
)
@pytest.mark.parametrize("extra", [[], ["--json"], ["--show-values", "--min-tokens", "0"]])
def test_every_session_prints_what_the_full_command_line_prints(
    session: Path, extra: list[str]
) -> None:
    code, out, _ = _same([str(session), *extra])
    assert code == 0 and out


def _imported_on_the_fast_path(args: list[str]) -> list[str]:
    code = (
        f"import sys; sys.argv = ['ipse', 'prefix', *{args!r}]; "
        "import atexit; atexit.register(lambda: print(sorted({m.split('.')[0] for m in "
        "sys.modules} & {'click', 'rich'}), file=sys.stderr)); "
        "from ipse.cli._entry import entry; entry()"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env())
    assert done.returncode == 0, done.stderr
    return done.stderr.strip().splitlines()[-1:]


@SHARED
def test_piped_output_imports_neither_click_nor_rich() -> None:
    session = str(CLAUDE_CODE / "tool_heavy.jsonl")
    assert _imported_on_the_fast_path([session]) == ["[]"]
    assert _imported_on_the_fast_path([session, "--json", "--provider", "anthropic"]) == ["[]"]


@SHARED
def test_narrow_output_is_laid_out_by_rich() -> None:
    session = str(CLAUDE_CODE / "tool_heavy.jsonl")
    fast = subprocess.run(
        [sys.executable, "-m", "ipse", "prefix", session],
        capture_output=True,
        text=True,
        env={**_env(), "COLUMNS": "60"},
    )
    full = subprocess.run(
        [sys.executable, "-m", "ipse.cli.main", "prefix", session],
        capture_output=True,
        text=True,
        env={**_env(), "COLUMNS": "60"},
    )
    assert (fast.returncode, fast.stdout, fast.stderr) == (0, full.stdout, full.stderr)
    assert max(len(line) for line in fast.stdout.splitlines()) <= 60


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--watch"],
        ["x.jsonl", "--help"],
        ["x.jsonl", "--json", "--json"],
        ["x.jsonl", "y.jsonl"],
        ["x.jsonl", "--provider", "nobody"],
        ["x.jsonl", "--format", "nothing"],
        ["x.jsonl", "--tokenizer", "words"],
        ["x.jsonl", "--min-tokens", "-1"],
        ["x.jsonl", "--min-tokens", "1_000"],
        ["x.jsonl", "--fail-over", "lots"],
        ["x.jsonl", "--json=yes"],
        ["x.jsonl", "--provider"],
        ["-", "--json"],
        ["x.jsonl", "--once"],
    ],
)
def test_what_the_fast_path_leaves_to_the_full_command_line(argv: list[str]) -> None:
    assert options(argv) is None


def test_what_the_fast_path_takes() -> None:
    given = options(["--min-tokens=0", "x.jsonl", "--fail-over", "5%", "--provider", "openai"])
    assert given is not None
    assert (given["log"], given["min_tokens"], given["limit"]) == (Path("x.jsonl"), 0, (5.0, True))
    assert (given["provider"], given["tokenizer"], given["as_json"]) == ("openai", "auto", False)


_TOKENS = st.sampled_from(
    [
        "--json",
        "--show-values",
        "--provider",
        "--provider=anthropic",
        "openai",
        "vllm",
        "--format",
        "claude-code",
        "--format=openai-chat",
        "--tokenizer",
        "bytes",
        "--tokenizer=o200k",
        "--min-tokens",
        "--min-tokens=0",
        "2000",
        "--fail-over",
        "0",
        "5%",
        "$0.01",
        "--fail-over=nope",
        "--once",
        "-h",
        "missing.jsonl",
        "notes.txt",
        "session.jsonl",
    ]
)


@SHARED
@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(argv=st.lists(_TOKENS, max_size=5))
def test_made_up_command_lines_get_the_full_command_lines_answer(
    tmp_path: Path, argv: list[str]
) -> None:
    (tmp_path / "session.jsonl").write_bytes((CLAUDE_CODE / "tool_heavy.jsonl").read_bytes())
    (tmp_path / "notes.txt").write_text("not a log\n")
    _same(argv, cwd=tmp_path)


# Cells and lines as the report prints them (words of printable ASCII), anything printable, or
# anything at all: the first the plain console prints itself, the others mostly go to rich.
_WORDS = st.from_regex(
    r"[A-Za-z0-9$#@,.%*:()_-]{1,8}( [A-Za-z0-9$#@,.%*:()_-]{1,8}){0,3}", fullmatch=True
)
_TEXT = (
    _WORDS
    | st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=30)
    | st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30)
)


def _printed(width: int, plain: bool, draw: Callable[[Any], None]) -> str:
    """What ``draw`` prints on a plain console ``width`` wide, or on rich's console as
    `ipse.cli._output.console` makes it (``COLUMNS`` says the width)."""
    buffer = io.StringIO()
    with redirect_stdout(buffer), mock.patch.dict(os.environ, {"COLUMNS": str(width)}):
        draw(PlainConsole(width) if plain else console())
    return buffer.getvalue()


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(_TEXT, max_size=4), width=st.sampled_from([10_000, 12, 40]))
def test_a_plain_console_prints_what_rich_prints(lines: list[str], width: int) -> None:
    def draw(out: Any) -> None:
        for line in lines:
            out.print(line)
            out.print(line, markup=False)

    assert _printed(width, True, draw) == _printed(width, False, draw)


@settings(max_examples=200, deadline=None)
@given(
    title=_WORDS | _TEXT,
    columns=st.lists(st.tuples(_WORDS, st.sampled_from(["left", "right"])), min_size=1, max_size=4),
    cells=st.lists(st.lists(_WORDS | st.just(""), min_size=4, max_size=4), min_size=1, max_size=5)
    | st.lists(st.lists(_TEXT, min_size=4, max_size=4), max_size=5),
    width=st.sampled_from([10_000, 30]),
)
def test_a_plain_console_draws_the_table_rich_draws(
    title: str,
    columns: list[tuple[str, str]],
    cells: list[list[str]],
    width: int,
) -> None:
    rows = [row[: len(columns)] for row in cells]

    def plain(out: PlainConsole) -> None:
        out.table(title, columns, rows)

    def rich(out: Any) -> None:
        print_table(out, title, columns, rows)

    assert _printed(width, True, plain) == _printed(width, False, rich)
