"""The world a journey runs in: a fresh HOME, project folder and ipse home; the environment a
user's shell gives the agent; the ipse executable; real processes with bounded waits; and the
seams a journey checks, collected so that one run names every seam that broke.

Nothing here sleeps to synchronise: every wait polls a condition until a deadline. Every process
a journey starts is stopped by it (the proxy that a hook started too: ``ipse proxy stop``, then
a kill of the pid that the journey's own ipse home names).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROXY_PORT = 8765  # where `ipse install --proxy` points the agent
PROXY_URL = f"http://127.0.0.1:{PROXY_PORT}"
EXTRAS = ("proxy", "mcp")  # the extras the README names for the proxy and the MCP server
_LOCK = Path("/tmp") / f"ipse-journey-{PROXY_PORT}.lock"
_SCRUBBED = (
    "VIRTUAL_ENV",
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "IPSE_DATABASE_URL",
    "IPSE_SESSION",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
)


class Broken(AssertionError):
    """A seam broke so that the journey cannot go on."""


@dataclass(repr=False)
class Seams:
    """The seams a journey checked: each failure names its seam; a run reports them all."""

    failures: list[str] = field(default_factory=list)
    passed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def skip(self, seam: str, why: str) -> None:
        """A seam that could not be checked because an earlier one broke."""
        self.skipped.append(f"{seam} (not reached: {why})")

    def check(self, ok: object, seam: str, detail: object = "") -> bool:
        if ok:
            self.passed.append(seam)
            return True
        shown = str(detail)
        self.failures.append(f"{seam}: {shown[:1500]}" if shown else seam)
        return False

    def require(self, ok: object, seam: str, detail: object = "") -> None:
        """A seam the rest of the journey stands on: stop here when it broke."""
        if not self.check(ok, seam, detail):
            raise Broken(self.summary())

    def summary(self) -> str:
        lines = [f"{len(self.failures)} seam(s) broke:"]
        lines += [f"  - {failure}" for failure in self.failures]
        lines += [f"  . {skipped}" for skipped in self.skipped]
        return "\n".join(lines)

    def verdict(self) -> None:
        """Fail the test with the summary (no traceback: the seams say what broke)."""
        if self.failures:
            import pytest

            pytest.fail(self.summary(), pytrace=False)


def ipse_executable() -> str:
    """The ``ipse`` script of the environment the tests run in (what a user who ran ``pip
    install '.[proxy,mcp]'`` there types), else this interpreter with ``-m ipse``."""
    script = Path(sys.executable).parent / "ipse"
    return str(script) if script.is_file() else sys.executable


def ipse_argv(*args: str) -> list[str]:
    command = ipse_executable()
    return [command, *args] if command != sys.executable else [command, "-m", "ipse", *args]


def missing_extras(extras: tuple[str, ...] = EXTRAS) -> list[str]:
    """The requirements of ipse's ``extras`` that this environment does not satisfy (what
    ``pip install '.[proxy,mcp]'`` would have installed)."""
    import importlib.metadata as metadata

    from packaging.requirements import Requirement

    missing = []
    for line in metadata.requires("ipse") or []:
        requirement = Requirement(line)
        wanted = [
            e for e in extras if requirement.marker and requirement.marker.evaluate({"extra": e})
        ]
        if not wanted:
            continue
        try:
            version = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            missing.append(str(requirement))
            continue
        if not requirement.specifier.contains(version, prereleases=True):
            missing.append(f"{requirement} (found {version})")
    return missing


def user_env(home: Path, ipse_home: Path, **extra: str) -> dict[str, str]:
    """The environment a user's shell gives the agent: this machine's, with a fresh HOME and
    ipse home, no agent or provider settings of the tester's, and the tests' virtual environment
    not active (its ``bin`` off PATH: what install registers must name ipse by path)."""
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "/usr/bin:/bin").split(os.pathsep) if p and p != venv_bin
    )
    env.update(HOME=str(home), IPSE_HOME=str(ipse_home), **extra)
    return env


def run(
    argv: list[str], *, cwd: Path, env: Mapping[str, str], timeout: float, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """Run a process in its own process group; on timeout that group is killed and the result
    says so (returncode -9, stderr ending in the timeout)."""
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        err += f"\n[journey] killed after {timeout:.0f} s"
        return subprocess.CompletedProcess(argv, -9, out, err)
    return subprocess.CompletedProcess(argv, process.returncode, out, err)


def poll(condition: Callable[[], Any], timeout: float, step: float = 0.05) -> Any:
    """The first truthy value of ``condition()`` before the deadline, else the last value."""
    deadline = time.monotonic() + timeout
    value = condition()
    while not value and time.monotonic() < deadline:
        time.sleep(step)
        value = condition()
    return value


def port_taken(port: int = PROXY_PORT) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def health(url: str = PROXY_URL) -> dict[str, Any] | None:
    """The proxy's health document, or None when nothing answers."""
    try:
        with urllib.request.urlopen(f"{url}/ipse/health", timeout=2) as response:
            document = json.loads(response.read())
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) else None


@contextlib.contextmanager
def proxy_port(timeout: float = 600.0) -> Iterator[None]:
    """Hold the proxy's port for one journey: journeys of several processes take turns (a file
    lock), and a port some other program holds is an error that says so (the installed settings
    name that port, so a journey cannot move)."""
    with open(_LOCK, "a+") as lock:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise Broken(f"another journey held {_LOCK} for {timeout:.0f} s") from None
                time.sleep(0.2)
        try:
            if poll(lambda: not port_taken(), 10.0) is False:
                raise Broken(
                    f"port {PROXY_PORT} is taken by another program ({health()}); `ipse install "
                    f"--proxy` points the agent at {PROXY_URL}, so the journey needs it free"
                )
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def stop_proxy(env: Mapping[str, str], cwd: Path, ipse_home: Path) -> None:
    """Stop the proxy this journey's hook (or its user) started: ``ipse proxy stop``, then a
    kill of the pid its own ipse home names, if that process still runs."""
    pid_file = ipse_home / f"proxy-{PROXY_PORT}.pid"
    pid = _pid(pid_file)
    found = health()
    ours = (ipse_home / f"proxy-{PROXY_PORT}.log").exists()  # it logs into this ipse home
    if found is not None and pid is None and isinstance(found.get("pid"), int) and ours:
        pid = found["pid"]  # no pid file (or a stale one): what answers, when it is ours
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        run(ipse_argv("proxy", "stop"), cwd=cwd, env=env, timeout=40)
    if pid is not None and _alive(pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
        poll(lambda: not _alive(pid), 10.0)


def _pid(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    return True


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (relative path: bytes), and every folder (path: b"/")."""
    found: dict[str, bytes] = {}
    for path in sorted(folder.rglob("*")):
        key = str(path.relative_to(folder))
        found[key] = b"/" if path.is_dir() else path.read_bytes()
    return found


def differences(before: Mapping[str, bytes], after: Mapping[str, bytes]) -> list[str]:
    """What changed between two snapshots, one line each."""
    lines = [f"missing {k}" for k in before if k not in after]
    lines += [f"left behind {k}" for k in after if k not in before]
    lines += [
        f"changed {k}: {before[k][:120]!r} -> {after[k][:120]!r}"
        for k in before
        if k in after and before[k] != after[k]
    ]
    return lines


def json_out(done: subprocess.CompletedProcess[str]) -> Any:
    """The one JSON document a ``--json`` command printed, or None."""
    try:
        return json.loads(done.stdout)
    except ValueError:
        return None


def find_numbers(document: Any, names: tuple[str, ...]) -> list[tuple[str, Any]]:
    """Every ``(path, value)`` in a JSON document whose key is one of ``names``."""
    found: list[tuple[str, Any]] = []

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                where = f"{path}.{key}" if path else str(key)
                if key in names:
                    found.append((where, inner))
                walk(inner, where)
        elif isinstance(value, list):
            for n, inner in enumerate(value):
                walk(inner, f"{path}[{n}]")

    walk(document, "")
    return found


def first_difference(a: str, b: str) -> str:
    """Where two texts part, with some context on either side."""
    n = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return f"at char {n}: {a[max(0, n - 60) : n + 100]!r} vs {b[max(0, n - 60) : n + 100]!r}"


def proxy_log(ipse_home: Path) -> str:
    """What the background proxy logged (its log file in the journey's ipse home)."""
    try:
        return (ipse_home / f"proxy-{PROXY_PORT}.log").read_text(errors="replace")
    except OSError:
        return ""


SAVED = re.compile(r"handoff at (\S+): .*?saved (?:(\d+) tokens, )?(\d+) bytes")


def failed_exchanges(log: str) -> list[str]:
    """The proxy's log lines about exchanges that failed (a 5xx, an error)."""
    return [
        line[:300]
        for line in log.splitlines()
        if re.match(r"ipse proxy: [A-Z]+ \S+ 5\d\d\b", line) or " error: " in line
    ]


def integers(document: Any) -> set[int]:
    """Every integer a JSON document holds (wherever a command chose to put a number)."""
    found: set[int] = set()

    def walk(value: Any) -> None:
        if isinstance(value, bool):
            return
        if isinstance(value, int):
            found.add(value)
        elif isinstance(value, dict):
            for inner in value.values():
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    walk(document)
    return found


def shows_handoff(document: Any, anchor: str) -> bool:
    """Whether a report's JSON shows a handoff the proxy made: it names the checkpoint call, a
    request's marker or cause says handoff, or it counts handoffs."""
    if anchor in json.dumps(document):
        return True
    for _, value in find_numbers(document, ("marker", "cause", "kind", "event")):
        if isinstance(value, str) and "handoff" in value.lower():
            return True
    for _, value in find_numbers(document, ("handoffs", "handoffs_made", "handoffs_applied")):
        if (isinstance(value, int) and value > 0) or (isinstance(value, list) and value):
            return True
    return False


def record_handoffs(record: Path) -> list[dict[str, Any]]:
    """The handoffs the proxy's record says it made (``ipse.handoff`` of each exchange)."""
    found = []
    try:
        lines = record.read_bytes().splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        handoff = (entry.get("ipse") or {}).get("handoff") if isinstance(entry, dict) else None
        if isinstance(handoff, dict) and handoff.get("applied"):
            found.append(handoff)
    return found


def every_command_reads(
    seams: Seams, record: Path, cwd: Path, env: Mapping[str, str], commands: tuple[str, ...]
) -> None:
    """Each of ``ipse inspect`` and ``ipse lint`` reads the proxy's own record (``lint`` exits 1
    when it finds something, which is still a reading)."""
    for command in commands:
        done = run(ipse_argv(command, str(record), "--json"), cwd=cwd, env=env, timeout=120)
        seams.check(
            done.returncode in ((0, 1) if command == "lint" else (0,))
            and json_out(done) is not None,
            f"{command}: cannot read the proxy's own record",
            f"exit {done.returncode}: {done.stderr[-400:]}",
        )


def handoff_finds(
    seams: Seams, session: Path | None, anchor: str, cwd: Path, env: Mapping[str, str], what: str
) -> None:
    """``ipse handoff SESSION`` (a dry run) cuts at the checkpoint call the proxy cut at."""
    if session is None:
        seams.check(False, f"handoff: no {what} session file was found to hand off")
        return
    done = run(ipse_argv("handoff", str(session), "--json"), cwd=cwd, env=env, timeout=120)
    cut = (json_out(done) or {}).get("cut") if done.returncode == 0 else None
    seams.check(
        anchor in json.dumps(cut),
        f"handoff: `ipse handoff` on {what}'s own session file does not find the checkpoint "
        f"call the proxy cut at ({anchor})",
        f"exit {done.returncode}: {done.stderr[-400:]} cut {cut}",
    )
