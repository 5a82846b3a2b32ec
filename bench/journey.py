"""A user's first hour (tests/journey) run N times in a row: a flaky loop is a broken loop, so
this prints how many runs passed, which seams broke in the others and how often each did, and the
time of each run against a baseline measured in the same run: one turn of the same client
straight to the same kind of scripted upstream, without ipse (``claude -p --bare``; ``codex
exec`` with a model provider at the upstream), the client's own start-up, which a journey pays
three times.

``--agent claude-code`` (the default) runs the Claude Code journey, ``--agent codex`` the Codex
one, ``--agent gemini`` the headless Gemini CLI one (``gemini -p``, no proxy; its baseline a
``gemini -p`` turn without ipse); for the share of runs whose first request offered ipse's
tools, say ``--runs 30``.
``--tool-search off`` runs Claude Code with ``ENABLE_TOOL_SEARCH=false`` (MCP schemas in
``tools``) instead of as it comes (MCP tools deferred behind its ToolSearch tool); ``--slow-mcp
SECONDS`` makes ``ipse mcp`` start that much later (a ``sitecustomize`` on PYTHONPATH), to see
whether the first request still offers ipse's tools.

Loopback only: the scripted upstream, the proxy (on a free port of 127.0.0.1, which ``ipse
install --proxy --port`` points the agent at) and the MCP server; every process a run starts is
stopped by it. Each run has its own fresh folder under a temporary directory, removed afterwards
(``--keep`` keeps them). Exit status 1 when any run failed.

    python bench/journey.py [--agent claude-code|codex|gemini] [--runs 10] [--tool-search on|off]
                            [--slow-mcp SECONDS] [--keep]
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.journey import claude_code, codex, gemini  # noqa: E402
from tests.journey._world import Broken, run  # noqa: E402
from tests.support.anthropic_upstream import anthropic_upstream  # noqa: E402
from tests.support.gemini_upstream import gemini_upstream  # noqa: E402
from tests.support.openai_upstream import openai_upstream  # noqa: E402

CLIENTS = {
    "claude-code": ("claude", "IPSE_CLAUDE_BIN", "claude-code", "@anthropic-ai/claude-code"),
    "codex": ("codex", "IPSE_CODEX_BIN", "codex", "@openai/codex"),
    "gemini": ("gemini", "IPSE_GEMINI_BIN", "gemini", "@google/gemini-cli"),
}


def client_binary(agent: str) -> str:
    name, variable, folder, package = CLIENTS[agent]
    cached = Path.home() / ".cache" / "ipse-test" / folder / "node_modules" / ".bin" / name
    for candidate in (os.environ.get(variable), str(cached), shutil.which(name)):
        if candidate and Path(candidate).exists():
            return candidate
    raise SystemExit(f"the {agent} CLI is not installed (npm i {package})")


def bare_claude_turn(claude: str, folder: Path) -> float:
    """Seconds of one ``claude -p --bare`` turn to a scripted upstream, without ipse."""
    env = {
        **os.environ,
        "HOME": str(folder),
        "ANTHROPIC_API_KEY": "sk-ant-bench",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    env.pop("CLAUDE_CONFIG_DIR", None)
    with anthropic_upstream(["Hello."]) as upstream:
        env["ANTHROPIC_BASE_URL"] = upstream.url
        return _timed([claude, "-p", "Say hello.", "--bare"], folder, env)


def bare_codex_turn(codex_cli: str, folder: Path) -> float:
    """Seconds of one ``codex exec`` turn to a scripted upstream, without ipse."""
    codex_home = folder / ".codex"
    codex_home.mkdir()
    env = {**os.environ, "HOME": str(folder), "CODEX_HOME": str(codex_home)}
    env["OPENAI_API_KEY"] = "sk-bench"
    with openai_upstream(["Hello."]) as upstream:
        (codex_home / "config.toml").write_text(
            'model_provider = "bench"\n\n[model_providers.bench]\nname = "bench"\n'
            f'base_url = "{upstream.url}/v1"\nenv_key = "OPENAI_API_KEY"\n'
            'wire_api = "responses"\nsupports_websockets = false\n'
        )
        return _timed([codex_cli, "exec", "--skip-git-repo-check", "Say hello."], folder, env)


def bare_gemini_turn(gemini_cli: str, folder: Path) -> float:
    """Seconds of one ``gemini -p`` turn to a scripted upstream, without ipse."""
    (folder / ".gemini").mkdir()
    (folder / ".gemini" / "settings.json").write_text(
        '{"security": {"auth": {"selectedType": "gemini-api-key"}}}'
    )
    env = {**os.environ, "HOME": str(folder), "GEMINI_API_KEY": "k-bench"}
    with gemini_upstream(["Hello."]) as upstream:
        env["GOOGLE_GEMINI_BASE_URL"] = upstream.url
        argv = [gemini_cli, "-p", "Say hello.", "-m", gemini.MODEL, "--skip-trust"]
        return _timed(argv, folder, env)


def _timed(argv: list[str], folder: Path, env: dict[str, str]) -> float:
    started = time.monotonic()
    done = run(argv, cwd=folder, env=env, timeout=120)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"the baseline turn failed: {done.stderr[-400:]}")
    return seconds


def _slow_mcp(folder: Path, seconds: float) -> dict[str, str]:
    """A PYTHONPATH whose ``sitecustomize`` sleeps ``seconds`` in a process run as ``... mcp``
    (the server install registers), ahead of the one the tests run with."""
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(
        f"import sys, time\nif sys.argv[-1:] == ['mcp']:\n    time.sleep({seconds})\n"
    )
    rest = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": os.pathsep.join([str(folder), *([rest] if rest else [])])}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--agent", choices=sorted(CLIENTS), default="claude-code")
    parser.add_argument("--runs", type=int, default=10, help="journeys in a row (default 10)")
    parser.add_argument("--keep", action="store_true", help="keep each run's folder")
    parser.add_argument("--tool-search", choices=["on", "off"], default="on")
    parser.add_argument("--slow-mcp", type=float, default=0.0, metavar="SECONDS")
    options = parser.parse_args()
    client = client_binary(options.agent)
    search = options.tool_search == "on"
    top = Path(tempfile.mkdtemp(prefix="ipse-journey-bench-"))
    env = _slow_mcp(top / "slow", options.slow_mcp) if options.slow_mcp else {}
    journeys: dict[str, tuple[Callable[[Path, str], Any], Callable[[str, Path], float]]] = {
        "claude-code": (
            lambda root, cli: claude_code.journey(root, cli, search, env),
            bare_claude_turn,
        ),
        "codex": (codex.journey, bare_codex_turn),
        "gemini": (gemini.journey, bare_gemini_turn),
    }
    journey, bare = journeys[options.agent]
    try:
        (top / "baseline").mkdir()
        baseline = bare(client, top / "baseline")
        print(f"baseline: one {options.agent} turn without ipse: {baseline:.1f} s")
        times: list[float] = []
        broke: collections.Counter[str] = collections.Counter()
        failed = 0
        for n in range(1, options.runs + 1):
            started = time.monotonic()
            try:
                seams = journey(top / f"run-{n:02d}", client).world.seams
                broken, seen = seams.broken, seams.failures
            except Broken as exc:  # the port stayed taken
                broken, seen = ["the proxy's port"], [str(exc)]
            seconds = time.monotonic() - started
            times.append(seconds)
            failed += bool(broken)
            broke.update(set(broken))
            verdict = "pass" if not broken else f"FAIL ({len(broken)} seam(s))"
            print(f"run {n:2d}: {verdict:<18} {seconds:6.1f} s  ({seconds / baseline:.1f}x)")
            for line in seen:
                print(f"         - {line[:200]}")
        median = statistics.median(times)
        print(
            f"{options.runs - failed}/{options.runs} passed; median {median:.1f} s per journey, "
            f"{median / baseline:.1f}x the bare turn (min {min(times):.1f}, max {max(times):.1f})"
        )
        for seam, count in broke.most_common():
            print(f"  broke in {count}/{options.runs} runs: {seam}")
        return 1 if failed else 0
    finally:
        if options.keep:
            print(f"folders kept in {top}")
        else:
            shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
