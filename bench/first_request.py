"""Whether a harness's first request to the model carries ipse's tools, as ``ipse install``
registers the server: the real ``claude -p`` and ``codex exec``, N runs each, every run in a
fresh home against a scripted upstream on loopback (`tests.support`), so nothing leaves the
machine and no cache of an earlier run helps.

Each run installs ipse (``ipse install --agent ... --user``), starts the harness, answers its
first request with one tool call (Claude Code: ``mcp__ipse__micro_handoff``; Codex: a shell
command) and its second with text, and records:

- whether the FIRST request's ``tools`` carried all of ipse's tools (Claude Code: the
  ``mcp__ipse__*`` tools with their schemas; Codex: the ``mcp__ipse`` namespace),
- whether the ``tools`` array was the same in every request of the run (serialised in the
  order received: a server whose tools arrive late changes it mid-session, which breaks the
  prompt cache),
- the time from spawn to the first request.

The baseline, measured in the same run and interleaved with it, is the entry without the keys
that make each harness wait (Claude Code's ``alwaysLoad``, Codex's ``required``): what install
wrote before. ``--late S`` starts the server S seconds late (a loaded machine). Bounded: every
harness runs in its own process group, killed with everything it started (the MCP servers) at
``--timeout`` or when the run ends, and no run starts after ``--budget`` seconds.

    python bench/first_request.py [--runs 30] [--agents claude-code,codex] [--late 0]
                                  [--no-baseline] [--timeout 120] [--budget 1500]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.anthropic_upstream import anthropic_upstream  # noqa: E402
from tests.support.openai_upstream import openai_upstream  # noqa: E402

SOURCE = ROOT / "src"
OURS = {
    "micro_handoff",
    "recall",
    "state_resume",
    "state_next",
    "state_invariant",
    "state_checkpoint",
}
NOTES = {"done": ["measured the first request"], "open": ["nothing"]}
CACHE = Path.home() / ".cache" / "ipse-test"


def _binary(variable: str, relative: str) -> str:
    found = os.environ.get(variable) or str(CACHE / relative)
    if not Path(found).exists():
        sys.exit(f"first_request: {found} not found (set {variable})")
    return found


@dataclass
class Run:
    ok: bool = False  # the harness exited 0
    first_has_tools: bool = False
    same_tools: bool = False
    requests: int = 0
    first_s: float | None = None
    error: str = ""


@dataclass
class Tally:
    runs: list[Run] = field(default_factory=list)

    def line(self, label: str) -> str:
        n = len(self.runs)
        firsts = [r.first_s for r in self.runs if r.first_s is not None]
        median = f"{statistics.median(firsts):.2f} s" if firsts else "-"
        failed = sum(not r.ok for r in self.runs)
        carried = sum(r.first_has_tools for r in self.runs)
        same = sum(r.same_tools for r in self.runs)
        return (
            f"{label:<30} first request with ipse's tools {carried:>3}/{n}"
            f"   same tools all run {same:>3}/{n}"
            f"   median to first request {median}"
            + (f"   ({failed} exited non-zero)" if failed else "")
        )


# ------------------------------------------------------------------------------- processes


def _run(
    argv: list[str], env: dict[str, str], cwd: Path, timeout: float, seen: Any
) -> tuple[int | None, float | None, str]:
    """Run ``argv`` in its own process group; return its exit code (None when killed at
    ``timeout``), seconds from spawn to the first request ``seen()`` reports, and stderr's end.
    The group (the harness and the servers it started) is killed before this returns."""
    first: float | None = None
    code: int | None = None
    with tempfile.TemporaryFile() as errors:
        start = time.monotonic()
        process = subprocess.Popen(
            argv,
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            start_new_session=True,
        )
        try:
            while True:
                if first is None and seen():
                    first = time.monotonic() - start
                code = process.poll()
                if code is not None or time.monotonic() - start > timeout:
                    break
                time.sleep(0.01)
        finally:
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # the harness and its servers
            process.wait()
        errors.seek(0)
        return code, first, errors.read().decode("utf-8", "replace")[-600:]


def _install(agent: str, env: dict[str, str], cwd: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ipse", "install", "--agent", agent, "--user"],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode != 0:
        sys.exit(f"first_request: ipse install failed: {done.stderr.strip()}")


def _late(folder: Path, command: str, seconds: float) -> str:
    script = folder / "late-ipse"
    script.write_text(f'#!/bin/sh\nsleep {seconds}\nexec "{command}" "$@"\n')
    script.chmod(0o755)
    return str(script)


@contextmanager
def _home() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="ipse-first-request-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _same(requests: list[dict[str, Any]]) -> bool:
    arrays = {json.dumps(r.get("tools"), ensure_ascii=False) for r in requests}
    return len(requests) >= 2 and len(arrays) == 1


# ----------------------------------------------------------------------------- the agents


def claude_run(claude: str, wait: bool, late: float, timeout: float) -> Run:
    with _home() as home:
        env = {
            **os.environ,
            "HOME": str(home),
            "IPSE_HOME": str(home / "ipse"),
            "ANTHROPIC_API_KEY": "sk-ant-bench",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "PYTHONPATH": str(SOURCE),
        }
        for name in ("CLAUDE_CONFIG_DIR", "ENABLE_TOOL_SEARCH", "MCP_TIMEOUT"):
            env.pop(name, None)
        _install("claude-code", env, home)
        config = home / ".claude.json"
        document = json.loads(config.read_text())
        entry = document["mcpServers"]["ipse"]
        if not wait:
            entry.pop("alwaysLoad", None)
        if late:
            entry["command"] = _late(home, entry["command"], late)
        config.write_text(json.dumps(document))
        call = {"id": "toolu_bench_01", "name": "mcp__ipse__micro_handoff", "input": NOTES}
        with anthropic_upstream([{"text": "Checkpoint.", "tool_use": call}, "Noted."]) as up:
            env["ANTHROPIC_BASE_URL"] = up.url
            code, first, errors = _run(
                [
                    claude,
                    "-p",
                    "Record a checkpoint.",
                    "--allowedTools",
                    "mcp__ipse__micro_handoff",
                ],
                env,
                home,
                timeout,
                lambda: bool(up.messages_requests()),
            )
            requests = up.messages_requests()
    run = Run(ok=code == 0, requests=len(requests), first_s=first, error=errors)
    if requests:
        names = {t.get("name", "") for t in requests[0].get("tools") or []}
        run.first_has_tools = {f"mcp__ipse__{n}" for n in OURS} <= names
        run.same_tools = _same(requests)
    return run


def codex_run(codex: str, wait: bool, late: float, timeout: float) -> Run:
    with _home() as home:
        codex_home = home / ".codex"
        codex_home.mkdir()
        env = {
            **os.environ,
            "HOME": str(home),
            "CODEX_HOME": str(codex_home),
            "IPSE_HOME": str(home / "ipse"),
            "OPENAI_API_KEY": "sk-bench",
        }
        call = {
            "id": "call_bench_01",
            "name": "exec_command",
            "arguments": json.dumps({"cmd": "true"}),
        }
        with openai_upstream([{"text": "Checking.", "tool_call": call}, "Done."]) as up:
            config = codex_home / "config.toml"
            config.write_text(
                'model = "gpt-5"\nmodel_provider = "bench"\napproval_policy = "never"\n\n'
                f'[model_providers.bench]\nname = "bench"\nbase_url = "{up.url}/v1"\n'
                'wire_api = "responses"\nenv_key = "OPENAI_API_KEY"\n'
            )
            _install("codex", env, home)
            text = config.read_text()
            # Codex hands its servers a few variables only: this checkout's ipse
            text = text.replace("env = { ", f"env = {{ PYTHONPATH = {json.dumps(str(SOURCE))}, ", 1)
            if not wait:
                text = text.replace("required = true\n", "", 1)
            if late:
                import re

                found = re.search(r'(?m)^command = (".*")$', text)
                assert found is not None, text
                late_command = _late(home, json.loads(found.group(1)), late)
                text = text.replace(found.group(0), f"command = {json.dumps(late_command)}", 1)
            config.write_text(text)
            code, first, errors = _run(
                [codex, "exec", "--strict-config", "--skip-git-repo-check", "Check."],
                env,
                home,
                timeout,
                lambda: bool(up.bodies("/responses")),
            )
            requests = up.bodies("/responses")
    run = Run(ok=code == 0, requests=len(requests), first_s=first, error=errors)
    if requests:
        spaces = [t for t in requests[0].get("tools") or [] if t.get("name") == "mcp__ipse"]
        names = {t.get("name") for t in spaces[0].get("tools", [])} if spaces else set()
        run.first_has_tools = names >= OURS
        run.same_tools = _same(requests)
    return run


# ---------------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="runs per agent and entry")
    parser.add_argument("--agents", default="claude-code,codex")
    parser.add_argument("--late", type=float, default=0.0, help="start the server S s late")
    parser.add_argument("--no-baseline", action="store_true", help="skip the old entry")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds a run may take")
    parser.add_argument("--budget", type=float, default=1500.0, help="no run starts after")
    parser.add_argument("-v", "--verbose", action="store_true", help="a line per run")
    args = parser.parse_args()
    agents = [a.strip() for a in args.agents.split(",") if a.strip()]
    runners = {
        "claude-code": (claude_run, "IPSE_CLAUDE_BIN", "claude-code/node_modules/.bin/claude"),
        "codex": (codex_run, "IPSE_CODEX_BIN", "codex/node_modules/.bin/codex"),
    }
    unknown = [a for a in agents if a not in runners]
    if unknown:
        sys.exit(f"first_request: unknown agent(s) {', '.join(unknown)}")
    binaries = {a: _binary(runners[a][1], runners[a][2]) for a in agents}
    kinds = [True] if args.no_baseline else [True, False]
    tallies = {(a, w): Tally() for a in agents for w in kinds}
    started = time.monotonic()
    print(f"first_request: {args.runs} run(s) per agent and entry, server {args.late:g} s late")
    for index in range(args.runs):
        for agent in agents:
            for wait in kinds:  # interleaved: drift hits both entries alike
                if time.monotonic() - started > args.budget:
                    break
                run = runners[agent][0](binaries[agent], wait, args.late, args.timeout)
                tallies[(agent, wait)].runs.append(run)
                if args.verbose or not run.ok:
                    first = f"{run.first_s:.2f}s" if run.first_s is not None else "-"
                    print(
                        f"  {agent} {'install' if wait else 'baseline'} #{index + 1}: ok={run.ok} "
                        f"tools_first={run.first_has_tools} same={run.same_tools} "
                        f"requests={run.requests} first={first}"
                        + ("" if run.ok else f" stderr: {run.error.strip()[-200:]!r}"),
                        flush=True,
                    )
    elapsed = time.monotonic() - started
    for agent in agents:
        for wait in kinds:
            label = f"{agent} ({'install' if wait else 'without the key'})"
            print(tallies[(agent, wait)].line(label))
    short = [k for k, t in tallies.items() if len(t.runs) < args.runs]
    if short:
        print(f"budget of {args.budget:g} s reached: fewer runs than asked for {short}")
    print(f"{elapsed:.0f} s in all")


if __name__ == "__main__":
    main()
