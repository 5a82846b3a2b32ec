"""Whether an agent CLI's first request to the model carries ipse's tools, as ``ipse install``
registers the server: the real ``claude -p``, ``codex exec`` and ``gemini -p``, N runs each, per
model, every run in a fresh home against a scripted upstream on loopback (`tests.support`), so
nothing leaves the machine and no cache of an earlier run helps.

Each run installs ipse (``ipse install --agent ... --user``; Gemini CLI: the project, trusted),
starts the agent CLI, answers its first request with one tool call (Claude Code:
``mcp__ipse__micro_handoff``; Codex: a shell command; Gemini CLI: ``mcp_ipse_micro_handoff``)
and its second with text, and records how the FIRST request offered ipse's tools:

- with their schemas: Claude Code's ``mcp__ipse__*`` tools in ``tools``; Codex's ``mcp__ipse``
  namespace with its tools; Gemini CLI's ``mcp_ipse_*`` function declarations;
- by name only, deferred: Claude Code lists them in a message as deferred behind its ToolSearch
  tool; Codex names the ``mcp__ipse`` namespace under "Deferred tool namespaces" in a developer
  message (the model finds a tool's schema with a search, or calls it from its ``exec`` code);
- not at all;

whether the ``tools`` array was the same in every request of the run (serialised in the order
received: a server whose tools arrive late changes it mid-session, which breaks the prompt
cache), and the time from spawn to the first request.

``--models`` picks the models per agent CLI (``default``: none named, the agent CLI's own
choice). The baseline, measured in the same run and interleaved with it, is the entry without
the key install adds for it (Claude Code's ``alwaysLoad``, Codex's ``required``, Gemini CLI's
``trust``). ``--late S`` starts the server S seconds late (a loaded machine). Bounded: every
agent CLI runs in its own process group, killed with everything it started (the MCP servers) at
``--timeout`` or when the run ends, and no run starts after ``--budget`` seconds.

    python bench/first_request.py [--runs 30] [--agents claude-code,codex,gemini]
        [--models claude-code=default;codex=default,gpt-5;gemini=gemini-2.5-flash]
        [--late 0] [--no-baseline] [--timeout 120] [--budget 1500] [-v]
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
from tests.support.gemini_upstream import gemini_upstream  # noqa: E402
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


DEFAULT_MODELS = "claude-code=default;codex=default,gpt-5;gemini=gemini-2.5-flash"


@dataclass
class Run:
    ok: bool = False  # the agent CLI exited 0
    first_has_tools: bool = False  # ipse's tools with their schemas
    first_named: bool = False  # ipse's tools by name only (deferred)
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
        named = sum(r.first_named for r in self.runs)
        same = sum(r.same_tools for r in self.runs)
        return (
            f"{label:<44} first request: with schemas {carried:>3}/{n}"
            f"   named only (deferred) {named:>3}/{n}"
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
    The group (the agent CLI and the servers it started) is killed before this returns."""
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
                os.killpg(process.pid, signal.SIGKILL)  # the agent CLI and its servers
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


def claude_run(claude: str, model: str, wait: bool, late: float, timeout: float) -> Run:
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
        chosen = [] if model == "default" else ["--model", model]
        with anthropic_upstream([{"text": "Checkpoint.", "tool_use": call}, "Noted."]) as up:
            env["ANTHROPIC_BASE_URL"] = up.url
            code, first, errors = _run(
                [claude, "-p", "Record a checkpoint.", *chosen,
                 "--allowedTools", "mcp__ipse__micro_handoff"],
                env,
                home,
                timeout,
                lambda: bool(up.messages_requests()),
            )  # fmt: skip
            requests = up.messages_requests()
    run = Run(ok=code == 0, requests=len(requests), first_s=first, error=errors)
    if requests:
        names = {t.get("name", "") for t in requests[0].get("tools") or []}
        run.first_has_tools = {f"mcp__ipse__{n}" for n in OURS} <= names
        listed = json.dumps([requests[0].get("system"), requests[0].get("messages")])
        run.first_named = not run.first_has_tools and "mcp__ipse__micro_handoff" in listed
        run.same_tools = _same(requests)
    return run


def codex_run(codex: str, model: str, wait: bool, late: float, timeout: float) -> Run:
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
            chosen = "" if model == "default" else f"model = {json.dumps(model)}\n"
            config.write_text(
                f'{chosen}model_provider = "bench"\napproval_policy = "never"\n\n'
                f'[model_providers.bench]\nname = "bench"\nbase_url = "{up.url}/v1"\n'
                'wire_api = "responses"\nenv_key = "OPENAI_API_KEY"\n'
            )
            _install("codex", env, home)
            text = config.read_text()
            # Codex hands its servers a few variables only: this checkout's ipse
            if "PYTHONPATH = " not in text:  # (install carries the one it ran with)
                source = json.dumps(str(SOURCE))
                text = text.replace("env = { ", f"env = {{ PYTHONPATH = {source}, ", 1)
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
        listed = json.dumps(requests[0].get("input"))
        deferred = listed.find("Deferred tool namespaces")
        run.first_named = (
            not run.first_has_tools
            and deferred >= 0
            and "- mcp__ipse:" in listed[deferred : deferred + 4000]
        )
        run.same_tools = _same(requests)
    return run


def _gemini_reply(body: dict[str, Any]) -> Any:
    """Gemini CLI's side requests (its router's classifier) get the JSON they ask for; its main
    requests a checkpoint call, then text."""
    if not body.get("tools"):
        return json.dumps({"complexity_reasoning": "short", "complexity_score": 10})
    answered = "functionResponse" in json.dumps(body.get("contents"))
    call = {"name": "mcp_ipse_micro_handoff", "args": NOTES}
    return "Noted." if answered else {"text": "Checkpoint.", "function_call": call}


def gemini_run(gemini: str, model: str, wait: bool, late: float, timeout: float) -> Run:
    with _home() as home:
        project = home / "project"
        (home / ".gemini").mkdir()
        project.mkdir()
        (home / ".gemini" / "settings.json").write_text(
            json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}})
        )
        trusted = {str(project.resolve()): "TRUST_FOLDER"}
        (home / ".gemini" / "trustedFolders.json").write_text(json.dumps(trusted))
        env = {**os.environ, "HOME": str(home), "IPSE_HOME": str(home / "ipse")}
        done = subprocess.run(
            [sys.executable, "-m", "ipse", "install", "--agent", "gemini"],
            env=env, cwd=project, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        if done.returncode != 0:
            sys.exit(f"first_request: ipse install failed: {done.stderr.strip()}")
        config = project / ".gemini" / "settings.json"
        document = json.loads(config.read_text())
        entry = document["mcpServers"]["ipse"]
        if not wait:
            entry.pop("trust", None)
        if late:
            entry["command"] = _late(home, entry["command"], late)
        config.write_text(json.dumps(document))
        chosen = [] if model == "default" else ["-m", model]
        with gemini_upstream(_gemini_reply) as up:
            env.update(GOOGLE_GEMINI_BASE_URL=up.url, GEMINI_API_KEY="k-bench")
            env.pop("PYTHONPATH", None)  # the entry names ipse by path
            main = lambda: [b for b in up.generate_requests() if b.get("tools")]  # noqa: E731
            code, first, errors = _run(
                [gemini, "-p", "Record a checkpoint.", *chosen],
                env, project, timeout, lambda: bool(main()),
            )  # fmt: skip
            requests = main()
    run = Run(ok=code == 0, requests=len(requests), first_s=first, error=errors)
    if requests:
        declared = {
            d.get("name") for t in requests[0]["tools"] for d in t.get("functionDeclarations", [])
        }
        run.first_has_tools = {f"mcp_ipse_{n}" for n in OURS} <= declared
        run.same_tools = _same(requests)
    return run


# ---------------------------------------------------------------------------------- main


def _models(text: str, agents: list[str]) -> dict[str, list[str]]:
    """``agent=model,model;agent=...`` as a list of models per agent (``default``: none named)."""
    chosen = {}
    for part in text.split(";"):
        agent, _, models = part.partition("=")
        chosen[agent.strip()] = [m.strip() for m in models.split(",") if m.strip()]
    return {a: chosen.get(a) or ["default"] for a in agents}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="runs per agent, model and entry")
    parser.add_argument("--agents", default="claude-code,codex")
    parser.add_argument("--models", default=DEFAULT_MODELS, help="agent=model,...;agent=...")
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
        "gemini": (gemini_run, "IPSE_GEMINI_BIN", "gemini/node_modules/.bin/gemini"),
    }
    unknown = [a for a in agents if a not in runners]
    if unknown:
        sys.exit(f"first_request: unknown agent(s) {', '.join(unknown)}")
    binaries = {a: _binary(runners[a][1], runners[a][2]) for a in agents}
    models = _models(args.models, agents)
    kinds = [True] if args.no_baseline else [True, False]
    cases = [(a, m, w) for a in agents for m in models[a] for w in kinds]
    tallies = {case: Tally() for case in cases}
    started = time.monotonic()
    print(
        f"first_request: {args.runs} run(s) per agent, model and entry, server {args.late:g} s late"
    )
    for index in range(args.runs):
        for agent, model, wait in cases:  # interleaved: drift hits every case alike
            if time.monotonic() - started > args.budget:
                break
            run = runners[agent][0](binaries[agent], model, wait, args.late, args.timeout)
            tallies[(agent, model, wait)].runs.append(run)
            if args.verbose or not run.ok:
                first = f"{run.first_s:.2f}s" if run.first_s is not None else "-"
                print(
                    f"  {agent} {model} {'install' if wait else 'baseline'} #{index + 1}: "
                    f"ok={run.ok} schemas={run.first_has_tools} named={run.first_named} "
                    f"same={run.same_tools} requests={run.requests} first={first}"
                    + ("" if run.ok else f" stderr: {run.error.strip()[-200:]!r}"),
                    flush=True,
                )
    elapsed = time.monotonic() - started
    for agent, model, wait in cases:
        label = f"{agent} {model} ({'install' if wait else 'without the key'})"
        print(tallies[(agent, model, wait)].line(label))
    short = [k for k, t in tallies.items() if len(t.runs) < args.runs]
    if short:
        print(f"budget of {args.budget:g} s reached: fewer runs than asked for {short}")
    print(f"{elapsed:.0f} s in all")


if __name__ == "__main__":
    main()
