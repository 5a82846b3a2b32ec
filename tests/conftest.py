"""Shared test fixtures: where the real agent sessions live, an isolated IPSE_HOME, and a
PostgreSQL URL isolated in a fresh schema.

The real sessions live outside the repository, in ``../shared/data`` (``IPSE_SHARED_DATA`` names
another folder). A fresh clone has no such folder: every test that reads it carries the
``shared`` marker (`needs_shared` wraps a parameter) and is skipped, saying why. Under
``IPSE_REQUIRE_SHARED=1`` (set by CI) a missing folder stops the run with an error instead, so
these tests can never skip silently there. ``examples/tool_heavy.jsonl`` ships with the
repository (see examples/README.md), so the core tests still run on a real session without it.

The CLI runs in process through `run_cli` (fixture `cli`), the same entry as the ``ipse``
executable (the group's ``main``, which handles every error), so its exit codes and stderr
lines are the executable's. Tests where the process matters (SIGPIPE, kills, installed hooks,
crashes) still start a subprocess.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.support.sql import scratch_schema

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("IPSE_SHARED_DATA") or REPO / ".." / "shared" / "data").resolve()
CLAUDE_CODE = SHARED_DATA / "claude-code"
BIG_SESSION = CLAUDE_CODE / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
OPENAI_TRAJ = SHARED_DATA / "openai-chat" / "deepseek-chat__django__django-13265.traj.json"
HTTP_LOG = SHARED_DATA / "anthropic-http" / "captured-2"
EXAMPLE_SESSION = REPO / "examples" / "tool_heavy.jsonl"

SHARED = pytest.mark.shared
REQUIRE_SHARED = os.environ.get("IPSE_REQUIRE_SHARED", "") not in ("", "0")


def shared_present() -> bool:
    """Whether the folder of real sessions is there."""
    return SHARED_DATA.is_dir()


def needs_shared(*values: Any, id: str | None = None) -> Any:
    """A parameter that reads the shared sessions: skipped like a ``shared`` test without them."""
    return pytest.param(*values, id=id, marks=SHARED)


def shared_glob(folder: Path, pattern: str) -> list[Path]:
    """The files of a shared folder, sorted, for parametrizing at collection time: empty when the
    shared data is absent (the test is then skipped), an error when it is there but has none."""
    if not shared_present():
        return []
    found = sorted(folder.glob(pattern))
    if not found:
        raise pytest.UsageError(f"no {pattern} in {folder}: the shared data has changed")
    return found


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "shared: reads the real sessions in ../shared/data; skipped when that folder is absent, "
        "an error under IPSE_REQUIRE_SHARED=1",
    )
    if REQUIRE_SHARED and not shared_present():
        raise pytest.UsageError(
            f"IPSE_REQUIRE_SHARED is set but the shared data folder is missing: {SHARED_DATA}"
        )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if shared_present():
        return
    skip = pytest.mark.skip(reason=f"needs the real sessions in {SHARED_DATA}, which is absent")
    for item in items:
        if item.get_closest_marker("shared") is not None:
            item.add_marker(skip)


@pytest.fixture()
def shared_data() -> Path:
    """The folder of real sessions (read-only); the test is skipped without it."""
    if not shared_present():
        pytest.skip(f"needs the real sessions in {SHARED_DATA}, which is absent")
    return SHARED_DATA


@pytest.fixture(autouse=True)
def _isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Every test gets its own IPSE_HOME, so nothing touches the user's data."""
    home = tmp_path_factory.mktemp("ipse-home")
    monkeypatch.setenv("IPSE_HOME", str(home))
    return home


@dataclass(frozen=True)
class CliResult:
    """What a CLI run left: named like `subprocess.CompletedProcess`, so either reads the same."""

    returncode: int
    stdout: str
    stderr: str
    stdout_bytes: bytes = b""


def run_cli(
    *args: str,
    input: str | bytes | None = None,
    env: Mapping[str, str | None] | None = None,
    cwd: str | Path | None = None,
) -> CliResult:
    """Run ``ipse ARGS`` in this process: stdout and stderr apart, the executable's exit code."""
    from ipse.cli.main import cli

    runner = CliRunner()
    chdir = contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext()
    with chdir:
        result = runner.invoke(cli, list(args), input=input, env=env, prog_name="ipse")
    unexpected = result.exception if not isinstance(result.exception, SystemExit) else None
    if unexpected is not None:  # the group reports every error, so this is a bug in a test
        raise unexpected
    return CliResult(result.exit_code, result.stdout, result.stderr, result.stdout_bytes)


CliRun = Callable[..., CliResult]


@pytest.fixture
def cli() -> CliRun:
    """``cli(*args, input=..., env=..., cwd=...)``: the CLI run in process (see `run_cli`)."""
    return run_cli


def pg_base_url() -> str:
    """The test server (``IPSE_TEST_DATABASE_URL``); the test is skipped, saying why, without it."""
    url = os.environ.get("IPSE_TEST_DATABASE_URL")
    if not url:
        pytest.skip("IPSE_TEST_DATABASE_URL is not set: PostgreSQL tests need a real server")
    return url


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A PostgreSQL URL whose tables land in a fresh, randomly named schema, dropped afterwards."""
    with scratch_schema(pg_base_url()) as (url, _):
        yield url
