"""The world a journey runs in: a fresh HOME, project folder and ipse home; the environment a
user's shell gives the agent; the ipse executable; real processes with bounded waits; and the
seams a journey checks, collected so that one run names every seam that broke.

Nothing here sleeps to synchronise: every wait polls a condition until a deadline. Every process
a journey starts is stopped by it (the proxy that a hook started too: ``ipse proxy stop``, then
a kill of the pid that the journey's own ipse home names).

Each journey's proxy listens on a port of its own, free when the journey starts, which it gives
``ipse install --port``: install points the agent there, so journeys run side by side and a
program that holds ipse's default port (8765) changes nothing.
"""

from __future__ import annotations

import contextlib
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

EXTRAS = ("proxy", "mcp")  # the extras the README names for the proxy and the MCP server
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

    failures: list[str] = field(default_factory=list)  # each seam with what was seen
    broken: list[str] = field(default_factory=list)  # the seams alone
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
        self.broken.append(seam)
        return False

    def require(self, ok: object, seam: str, detail: object = "") -> None:
        """A seam the rest of the journey stands on: stop here when it broke (the journey
        catches `Broken` and reports what it checked until then)."""
        if not self.check(ok, seam, detail):
            self.skipped.append("the rest of the journey (not reached: a seam it stands on broke)")
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
    not active (its ``bin`` off PATH: what install registers must name ipse by path). A
    ``PYTHONPATH`` stays: a checkout that puts its ``src`` there runs its own ipse in the hook
    and the MCP server too."""
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


def free_port() -> int:
    """A port nothing listens on now (the system's pick), for a journey's proxy."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def health(url: str) -> dict[str, Any] | None:
    """The proxy's health document, or None when nothing answers."""
    try:
        with urllib.request.urlopen(f"{url}/ipse/health", timeout=2) as response:
            document = json.loads(response.read())
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) else None


def stop_proxy(env: Mapping[str, str], cwd: Path, ipse_home: Path, port: int) -> None:
    """Stop the proxy this journey's hook (or its user) started on ``port``: ``ipse proxy
    stop``, then a kill of the pid its own ipse home names, if that process still runs."""
    pid_file = ipse_home / f"proxy-{port}.pid"
    pid = _pid(pid_file)
    found = health(f"http://127.0.0.1:{port}")
    ours = (ipse_home / f"proxy-{port}.log").exists()  # it logs into this ipse home
    if found is not None and pid is None and isinstance(found.get("pid"), int) and ours:
        pid = found["pid"]  # no pid file (or a stale one): what answers, when it is ours
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        run(ipse_argv("proxy", "stop", "--port", str(port)), cwd=cwd, env=env, timeout=40)
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


def proxy_log(ipse_home: Path, port: int) -> str:
    """What the background proxy on ``port`` logged (its log file in the journey's ipse home)."""
    try:
        return (ipse_home / f"proxy-{port}.log").read_text(errors="replace")
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
    """The handoffs the proxy's record says it made (``ipse.handoff`` of the exchanges it marks
    as the handoff; the later exchanges that carry the same cut are rewritten too)."""
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
        if isinstance(handoff, dict) and handoff.get("applied") and handoff.get("event"):
            found.append(handoff)
    return found


def every_command_reads(world: World, commands: tuple[str, ...] = ("inspect", "lint")) -> None:
    """Each of ``commands`` reads the proxy's own record (``lint`` exits 1 when it finds
    something, which is still a reading)."""
    for command in commands:
        done = world.ipse(command, str(world.record), "--json")
        world.seams.check(
            done.returncode in ((0, 1) if command == "lint" else (0,))
            and json_out(done) is not None,
            f"{command}: cannot read the proxy's own record",
            f"exit {done.returncode}: {done.stderr[-400:]}",
        )


def handoff_finds(world: World, session: Path | None, anchor: str, what: str) -> None:
    """``ipse handoff SESSION`` (a dry run) cuts at the checkpoint call the proxy cut at."""
    if session is None:
        world.seams.check(False, f"handoff: no {what} session file was found to hand off")
        return
    done = world.ipse("handoff", str(session), "--json")
    cut = (json_out(done) or {}).get("cut") if done.returncode == 0 else None
    world.seams.check(
        anchor in json.dumps(cut),
        f"handoff: `ipse handoff` on {what}'s own session file does not find the checkpoint "
        f"call the proxy cut at ({anchor})",
        f"exit {done.returncode}: {done.stderr[-400:]} cut {cut}",
    )


def same_saving(
    world: World,
    anchor: str,
    mcp_tokens: set[int],
    applied: bool,
    called: bool = True,
    mcp_result: str = "",
) -> None:
    """One measurement of the handoff's saving: the proxy log, its record, the checkpoint's MCP
    result, ``ipse report`` and ``ipse prefix`` (which also read the record and show the
    handoff) all quote it."""
    seams = world.seams
    logged = [m.groups() for m in SAVED.finditer(world.log()) if m.group(1) == anchor]
    log_tokens = {int(t) for _, t, _ in logged if t is not None}
    if called:
        seams.check(
            mcp_tokens,
            "MCP: the checkpoint's result does not say what the next request drops, in tokens",
            mcp_result[:600],
        )
    else:
        seams.skip("MCP: the checkpoint's result says what the next request drops", "no call")
    if applied:
        seams.check(logged, "proxy log: no line says what the handoff saved", world.log()[-800:])
        seams.check(
            len(logged) == 1 and len(record_handoffs(world.record)) == 1,
            "one handoff: the proxy's log or record count the checkpoint's one handoff more than "
            "once (every later request carries the same cut)",
            f"log {logged}, record {record_handoffs(world.record)}",
        )
        seams.check(
            log_tokens and log_tokens == mcp_tokens,
            "one measurement: the proxy log and the MCP result quote different savings",
            f"log {sorted(log_tokens)}, MCP {sorted(mcp_tokens)}",
        )
        log_bytes = {int(b) for _, _, b in logged}
        saved = [h.get("saved") or {} for h in record_handoffs(world.record)]
        recorded = {(s.get("tokens"), s.get("bytes")) for s in saved}
        logged_pairs = {(int(t), int(b)) for _, t, b in logged if t is not None}
        seams.check(
            log_bytes and logged_pairs == recorded,
            "one measurement: the proxy log and its record (ipse.handoff.saved) quote different "
            "savings",
            f"log {sorted(logged_pairs)}, record {sorted(recorded, key=str)}",
        )
    for command in ("report", "prefix"):
        argv = [command, str(world.record), "--json"]
        if command == "report":
            argv += ["-o", str(world.record.with_suffix(".html"))]
        done = world.ipse(*argv)
        document = json_out(done)
        if not seams.check(
            done.returncode == 0 and document is not None,
            f"{command}: cannot read the proxy's own record",
            done.stderr[-600:],
        ):
            continue
        if not applied:
            seams.skip(f"{command}: shows the handoff and quotes its saving", "no handoff")
            continue
        seams.check(
            shows_handoff(document, anchor),
            f"{command}: does not show the handoff the proxy made (at {anchor})",
            json.dumps(document)[:600],
        )
        shown = [v for _, v in find_numbers(document, ("handoff",)) if isinstance(v, dict)]
        shown += [h for _, v in find_numbers(document, ("handoffs",)) if isinstance(v, list)
                  for h in v]  # fmt: skip
        seams.check(
            len(shown) == 1,
            f"one handoff: `ipse {command}` shows the checkpoint's one handoff {len(shown)} times",
            shown[:4],
        )
        numbers = sorted(n for n in integers(document) if n > 100)
        seams.check(
            log_tokens and log_tokens <= set(numbers),
            f"one measurement: `ipse {command}` does not quote the saving of the proxy log",
            f"log {sorted(log_tokens)}; {command} {numbers[:20]}",
        )


def one_session(world: World, expected: str | None = None, removed: str | None = None) -> None:
    """The checkpoint's notes (the MCP server) and what the handoff removed (the proxy) are
    filed under one session, which ``ipse archive list`` shows; with ``expected``, the harness's
    own session (``session:<id>``), where ``ipse archive list session:<id>`` finds the notes
    and the item ``removed``."""
    listed = world.ipse("archive", "list", "--json")
    sessions = [s for _, s in find_numbers(json_out(listed), ("session",))]
    world.seams.check(
        listed.returncode == 0 and len(sessions) == 1,
        "one session key: the checkpoint's notes and what the handoff removed are not filed "
        "under one session (proxy, MCP server and CLI key it differently, or the MCP server "
        "wrote to another ipse home)",
        listed.stdout[:600] + listed.stderr[-300:],
    )
    if expected is None:
        return
    found = world.ipse("archive", "list", expected, "--json")
    text = found.stdout
    world.seams.check(
        found.returncode == 0 and "checkpoint" in text and (removed is None or removed in text),
        f"one session key: `ipse archive list {expected}` (the harness's own session) does not "
        "find the checkpoint's notes and what the handoff removed",
        f"sessions {sessions}; exit {found.returncode}: {text[:600]} {found.stderr[-300:]}",
    )


def recalls(world: World, item: str, expected: str) -> None:
    """``ipse recall`` gives back what the handoff removed."""
    done = world.ipse("recall", item)
    world.seams.check(
        done.returncode == 0 and expected in done.stdout,
        "recall: `ipse recall` does not return the removed file content",
        f"exit {done.returncode}: {done.stderr[-400:]} {done.stdout[:300]}",
    )


def skipped_handoffs(log: str) -> str:
    """Why the proxy left requests untouched, as its log says."""
    reasons = {
        ln[ln.find("handoff skipped") :] for ln in log.splitlines() if "handoff skipped" in ln
    }
    return " | ".join(sorted(reasons)) or "(the log gives no reason)"


@dataclass
class World:
    """One journey: its folders (fresh HOME, project and ipse home), the environment the user's
    shell gives the agent, the proxy's record, the seams checked and the time of each phase."""

    root: Path
    env: dict[str, str]
    port: int  # the proxy's, given to `ipse install --port`
    seams: Seams = field(default_factory=Seams)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def project(self) -> Path:
        return self.root / "project"

    @property
    def ipse_home(self) -> Path:
        return self.root / "ipse-home"

    @property
    def record(self) -> Path:
        return self.root / "exchanges.jsonl"

    @property
    def url(self) -> str:
        """Where the journey's proxy answers."""
        return f"http://127.0.0.1:{self.port}"

    @classmethod
    def create(cls, root: Path, **extra: str) -> World:
        for folder in (root / "home", root / "project", root / "ipse-home"):
            folder.mkdir(parents=True)
        return cls(root, user_env(root / "home", root / "ipse-home", **extra), free_port())

    def health(self) -> dict[str, Any] | None:
        """The journey's proxy's health document, or None when nothing answers."""
        return health(self.url)

    def ipse(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """``ipse ARGS`` as the user types it in the project folder."""
        return run(ipse_argv(*args), cwd=self.project, env=self.env, timeout=timeout)

    def log(self) -> str:
        return proxy_log(self.ipse_home, self.port)

    def stop_proxy(self) -> None:
        stop_proxy(self.env, self.project, self.ipse_home, self.port)

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time a phase of the journey (its seconds kept even when a seam breaks in it)."""
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = time.monotonic() - started

    def settled(self) -> None:
        """The proxy booked every exchange, and none of them failed."""
        settled = poll(
            lambda: (
                (h := self.health()) is not None
                and h.get("pending_bookkeeping") == 0
                and h.get("inflight") == 0
            ),
            20.0,
        )
        self.seams.check(
            settled, "proxy: its bookkeeping did not settle within 20 s", self.health()
        )
        failed = failed_exchanges(self.log())
        self.seams.check(
            not failed,
            "proxy: exchanges failed (an upstream error, or an upstream the user did not "
            "configure)",
            failed,
        )
