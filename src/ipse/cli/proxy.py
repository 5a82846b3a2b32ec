"""``ipse proxy``: run the proxy in the foreground, or ``start | stop | status`` one in the
background (its pid file and log file in ipse's home, both 0600).

``start`` is idempotent: when this user's proxy already answers on the address it says so and
exits 0, so a harness hook can run it at every session start. Nothing that answers on the port is
trusted on its word: `ipse.proxy.identify` checks that it is this user's own proxy (a secret only
this user can read, the socket's and the process's owner) before ``start`` reports it as running
or ``stop`` signals it; otherwise both refuse and say why. A ``start`` given settings other than
the running proxy's says so and leaves it alone, or replaces it with ``--restart``. The work is
the library's (`ipse.proxy`); this module parses options and manages the background process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import click

from ipse.cli._output import emit_json
from ipse.errors import CheckFailed, InputError, UsageError
from ipse.proxy._shared import (
    ANTHROPIC_UPSTREAM,
    DEFAULT_HOST,
    DEFAULT_PORT,
    DEFAULT_WORKERS,
    OPENAI_UPSTREAM,
    READ_TIMEOUT,
    Listener,
)

_STARTUP_SECONDS = 20.0
_STOP_SECONDS = 40.0  # the workers' grace (`ipse.proxy._workers.GRACE`) and some


def _address(function: Any) -> Any:
    function = click.option(
        "--port", default=DEFAULT_PORT, show_default=True, type=int, help="Port to bind."
    )(function)
    return click.option("--host", default=DEFAULT_HOST, show_default=True, help="Address to bind.")(
        function
    )


def _autopilot_options() -> list[Any]:
    """The autopilot's options (`ipse.handoff.AutopilotPolicy`)."""
    return [
        click.option(
            "--autopilot",
            type=click.Choice(["off", "nudge", "cut"]),
            default="cut",
            envvar="IPSE_AUTOPILOT",
            show_default=True,
            help="What the proxy does when a conversation grows and the agent has not "
            "checkpointed: nudge it to call the checkpoint tool (from --autopilot-soft on), then "
            "cut at the newest turn boundary on its own (only with cut: once nudged, where "
            "cutting costs least, at the latest from --autopilot-hard); off forwards every "
            "body as the agent's own checkpoints leave it (so does "
            "--no-handoff). "
            "Also IPSE_AUTOPILOT (and IPSE_AUTOPILOT_SOFT, IPSE_AUTOPILOT_HARD).",
        ),
        click.option(
            "--autopilot-soft",
            type=click.IntRange(min=1),
            envvar="IPSE_AUTOPILOT_SOFT",
            help="Tokens from which the agent is nudged. Default: where a cut pays back its "
            "cache cost, never below a quarter of the agent CLI's compaction point.",
        ),
        click.option(
            "--autopilot-hard",
            type=click.IntRange(min=1),
            envvar="IPSE_AUTOPILOT_HARD",
            help="Tokens from which the proxy cuts, nudged or not. Default: a margin (the "
            "larger of 20,000 "
            "tokens and a tenth) below the agent CLI's compaction point, else the model's window.",
        ),
    ]


def _options(function: Any) -> Any:
    decorators = [
        click.option(
            "--anthropic-upstream",
            help="Origin (and optional path prefix) for Anthropic requests "
            f"[default: {ANTHROPIC_UPSTREAM}, unless only --openai-upstream is given].",
        ),
        click.option(
            "--openai-upstream",
            help="Origin (and optional path prefix) for OpenAI requests "
            f"[default: {OPENAI_UPSTREAM}, unless only --anthropic-upstream is given].",
        ),
        click.option(
            "--record",
            type=click.Path(dir_okay=False, path_type=Path),
            help="Append every exchange to this JSONL file (0600; ipse inspect/prefix/report).",
        ),
        click.option("--store", help="Store URL (default: IPSE_DATABASE_URL, else ipse.db)."),
        click.option("--json-log", is_flag=True, help="Log one JSON document per request."),
        click.option(
            "--checkpoint-tool",
            "tool_names",
            multiple=True,
            help="Name of the checkpoint tool (repeatable; default micro_handoff, also as "
            "mcp__<server>__micro_handoff).",
        ),
        click.option("--no-handoff", is_flag=True, help="Pass every body through untouched."),
        click.option(
            "--handoff-budget",
            type=click.IntRange(min=1),
            help="Hold each handoff's rewritten part to this many tokens: the oldest agent "
            "narration goes to the archive as one recallable item (the checkpoint call's own "
            "budget argument wins). Default: no budget, every authored word stays.",
        ),
        *_autopilot_options(),
        click.option(
            "--no-analysis",
            is_flag=True,
            help="Log usage without the cache model's prediction (saves CPU on large bodies).",
        ),
        click.option(
            "--read-timeout",
            default=READ_TIMEOUT,
            show_default=True,
            type=float,
            help="Seconds to wait for upstream bytes.",
        ),
        click.option(
            "--workers",
            default=DEFAULT_WORKERS,
            show_default=True,
            type=click.IntRange(min=1),
            help="Processes serving the port (one socket, one store; a dead one is replaced). "
            "More than 1 helps only when one process's CPU is the limit (many streams at once, "
            "large bodies to hand off, the cache analysis) and cores are free; a proxy that "
            "waits on its upstream gains nothing.",
        ),
    ]
    for decorator in reversed(decorators):
        function = decorator(function)
    return _address(function)


def _config(**options: Any) -> Any:
    from ipse.handoff._shared import CHECKPOINT_TOOLS, AutopilotPolicy
    from ipse.proxy import ProxyConfig

    autopilot = AutopilotPolicy(
        mode="off" if options["no_handoff"] else options.get("autopilot", "cut"),
        soft=options.get("autopilot_soft"),
        hard=options.get("autopilot_hard"),
    )
    anthropic, openai = ProxyConfig.upstreams_from_options(
        options["anthropic_upstream"], options["openai_upstream"]
    )
    return ProxyConfig(
        host=options["host"],
        port=options["port"],
        anthropic=anthropic,
        openai=openai,
        record=options["record"],
        store=options["store"],
        json_log=options["json_log"],
        handoff=not options["no_handoff"],
        handoff_budget=options["handoff_budget"],
        autopilot=autopilot,
        analyze=not options["no_analysis"],
        read_timeout=options["read_timeout"],
        tool_names=tuple(options["tool_names"]) or CHECKPOINT_TOOLS,
        workers=options["workers"],
    )


@click.group("proxy", invoke_without_command=True)
@_options
@click.pass_context
def proxy_group(ctx: click.Context, /, **options: Any) -> None:
    """Run the ipse proxy in the foreground (Ctrl-C stops it).

    Point a client at it (ANTHROPIC_BASE_URL=http://127.0.0.1:8765,
    OPENAI_BASE_URL=http://127.0.0.1:8765/v1): requests after a checkpoint call are handed off
    on the way, and the autopilot nudges an agent that grows past --autopilot-soft to
    checkpoint, and cuts on its own past --autopilot-hard (--autopilot off: never). With only
    one of --anthropic-upstream and --openai-upstream, the other provider is not contacted.

    \b
    Examples:
      ipse proxy --record exchanges.jsonl
      ipse proxy start && ipse proxy status
      ipse proxy start --workers 4 --store postgresql://proxy@db/ipse
    """
    if ctx.invoked_subcommand is not None:
        return
    from ipse.proxy import serve

    code = serve(_config(**options))
    if code:
        raise SystemExit(code)


def _files(port: int) -> tuple[Path, Path]:
    from ipse.home import home_dir

    home = home_dir()
    return home / f"proxy-{port}.pid", home / f"proxy-{port}.log"


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    if host in ("0.0.0.0", "::"):
        shown = "127.0.0.1"
    return f"http://{shown}:{port}"


def _identify(url: str, port: int, timeout: float = 2.0) -> Listener:
    from ipse.proxy._shared import identify

    return identify(url, port, timeout=timeout)


def _not_yours(url: str, listener: Listener, what: str) -> CheckFailed:
    if listener.health is None:  # another user's port: nothing was asked of it
        return CheckFailed(f"{what}: {listener.reason}, not yours; use another --port")
    return CheckFailed(
        f"{what}: something answers at {url} as an ipse proxy, but it is not yours "
        f"({listener.reason}); stop it or use another --port"
    )


def _given(ctx: click.Context, names: tuple[str, ...]) -> list[str]:
    """The options among ``names`` given on the command line (not left at their defaults)."""
    source = click.core.ParameterSource
    return [n for n in names if ctx.get_parameter_source(n) not in (source.DEFAULT, None)]


_SETTINGS = ("anthropic_upstream", "openai_upstream", "record", "store", "json_log",
             "tool_names", "no_handoff", "handoff_budget", "no_analysis", "read_timeout",
             "workers", "autopilot", "autopilot_soft", "autopilot_hard")  # fmt: skip


@proxy_group.command("start")
@_options
@click.option(
    "--restart",
    is_flag=True,
    help="When a proxy with other settings runs on the port, stop it and start this one.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.pass_context
def start_command(ctx: click.Context, /, restart: bool, as_json: bool, **options: Any) -> None:
    """Start a proxy in the background; succeed at once when yours already answers there.

    Given settings other than the running proxy's, it says so and changes nothing, or with
    --restart stops that proxy and starts one with these settings. Something else answering on
    the port as an ipse proxy is refused (exit 1), never reported as running.

    \b
    Examples:
      ipse proxy start --record exchanges.jsonl
      ipse proxy start --port 8766 --anthropic-upstream https://gateway.example/anthropic
      ipse proxy start --restart --workers 4 --json
    """
    config = _config(**options)
    url = _url(config.host, config.port)
    listener = _identify(url, config.port)
    if listener.health is not None:
        if not listener.own:
            raise _not_yours(url, listener, "not starting")
        health = listener.health
        given = _given(ctx, _SETTINGS)
        same = health.get("settings") == config.digest()
        same = same and health.get("record_file") == config.record_digest()
        if "workers" in given:  # else any count will do (a hook's start names none)
            same = same and health.get("workers", 1) == config.workers
        if not given or same:
            _say(as_json, {"running": True, "started": False, "url": url, "pid": listener.pid},
                 f"ipse proxy: already running at {url} (pid {listener.pid})")  # fmt: skip
            return
        if not restart:
            raise UsageError(
                f"a proxy with other settings runs at {url} (pid {listener.pid}; upstreams "
                f"{_shown(health.get('upstreams'))}, {health.get('workers', 1)} workers, "
                f"{autopilot_shown(health.get('autopilot'))}; asked for "
                f"{_shown(config.upstreams())}, {config.workers} workers, "
                f"{autopilot_shown(config.autopilot_settings())}); "
                "it was left running: add --restart to replace it, or run `ipse proxy stop`"
            )
        stop_proxy(listener.pid, config.port, url)
    elif listener.other_user is not None:
        raise _not_yours(url, listener, "not starting")
    elif listener.holder is not None:
        started = _starting(listener, config.port, url)  # another start launched it just now
        if started is not None:
            _say(as_json, {"running": True, "started": False, "url": url, "pid": started.pid},
                 f"ipse proxy: already running at {url} (pid {started.pid})")  # fmt: skip
            return
        raise CheckFailed(
            f"not starting: port {config.port} is held by {listener.holder}, which does not "
            "answer as an ipse proxy; stop it or use another --port"
        )
    _launch(config, options, url, as_json)


def _starting(listener: Listener, port: int, url: str) -> Listener | None:
    """The proxy holding the port once it answers as this user's own, when it is a proxy of
    this user's for that port still starting (a hook's start racing another's): waited for as
    ``_launch`` waits for its own; None for any other holder."""
    from ipse.proxy._shared import proxy_process

    pid = listener.holder_pid
    if pid is None or not proxy_process(pid, port):
        return None
    deadline = time.monotonic() + _STARTUP_SECONDS
    while time.monotonic() < deadline and _alive(pid):
        found = _identify(url, port, timeout=0.5)
        if found.own:
            return found
        time.sleep(0.1)
    return None


def _shown(upstreams: Any) -> str:
    if not isinstance(upstreams, dict):
        return "unknown"
    return ", ".join(f"{name} {value or 'none'}" for name, value in sorted(upstreams.items()))


def autopilot_shown(settings: Any) -> str:
    """The autopilot's settings of a health document in words: its mode and its thresholds
    (``per model``: worked out per model and agent CLI)."""
    if not isinstance(settings, dict):
        return "autopilot unknown"
    mode = settings.get("mode")
    if mode == "off":
        return "autopilot off"

    def tokens(name: str) -> str:
        value = settings.get(name)
        return f"{name} {value:,} tokens" if isinstance(value, int) else f"{name} per model"

    return f"autopilot {mode} ({tokens('soft')}, {tokens('hard')})"


def _launch(config: Any, options: dict[str, Any], url: str, as_json: bool) -> None:
    from ipse.fileio import private_file

    pid_file, log_file = _files(config.port)
    arguments = [sys.executable, "-m", "ipse", "proxy", *_argv(options)]
    with private_file(log_file, append=True) as log:
        process = subprocess.Popen(
            arguments,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
        )
    deadline = time.monotonic() + _STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            listener = _identify(url, config.port)  # another start won the race: that one serves
            if listener.own:
                _say(as_json, {"running": True, "started": False, "url": url,
                               "pid": listener.pid},
                     f"ipse proxy: already running at {url} (pid {listener.pid})")  # fmt: skip
                return
            if listener.health is not None:
                raise _not_yours(url, listener, "not starting")
            raise InputError(
                f"the proxy exited at start with status {process.returncode} "
                f"({_tail(log_file)}); log: {log_file}"
            )
        listener = _identify(url, config.port, timeout=0.5)
        if listener.own and listener.pid == process.pid:
            _write_pid(pid_file, process.pid)
            _say(as_json, {"running": True, "started": True, "url": url, "pid": process.pid,
                           "log": str(log_file)},
                 f"ipse proxy: started at {url} (pid {process.pid}, log {log_file})")  # fmt: skip
            return
        time.sleep(0.1)
    process.terminate()
    raise InputError(f"the proxy did not answer within {_STARTUP_SECONDS:.0f} s; log: {log_file}")


def _argv(options: dict[str, Any]) -> list[str]:
    out = ["--host", options["host"], "--port", str(options["port"]),
           "--read-timeout", str(options["read_timeout"]),
           "--workers", str(options["workers"]),
           "--autopilot", options.get("autopilot", "cut")]  # fmt: skip
    for name in ("autopilot_soft", "autopilot_hard"):
        if options.get(name) is not None:
            out += [f"--{name.replace('_', '-')}", str(options[name])]
    for name in ("anthropic_upstream", "openai_upstream"):
        if options[name] is not None:
            out += [f"--{name.replace('_', '-')}", options[name]]
    if options["record"] is not None:
        out += ["--record", str(Path(options["record"]).resolve())]
    if options["store"]:
        out += ["--store", options["store"]]
    if options["json_log"]:
        out.append("--json-log")
    if options["no_handoff"]:
        out.append("--no-handoff")
    if options["handoff_budget"] is not None:
        out += ["--handoff-budget", str(options["handoff_budget"])]
    if options["no_analysis"]:
        out.append("--no-analysis")
    for name in options["tool_names"]:
        out += ["--checkpoint-tool", name]
    return out


def _write_pid(path: Path, pid: int) -> None:
    from ipse.fileio import atomic_write

    atomic_write(path, f"{pid}\n", mode=0o600)


def _tail(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no log"
    return lines[-1][:300] if lines else "no output"


def _say(as_json: bool, document: dict[str, Any], line: str) -> None:
    if as_json:
        emit_json(document)
    else:
        click.echo(line)


@proxy_group.command("stop")
@_address
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def stop_command(host: str, port: int, as_json: bool) -> None:
    """Stop your background proxy on that port (never a process that is not yours).

    \b
    Examples:
      ipse proxy stop
      ipse proxy stop --port 8766 --json
    """
    from ipse.proxy._shared import proxy_process

    pid_file, _ = _files(port)
    url = _url(host, port)
    listener = _identify(url, port)
    if (listener.health is not None or listener.other_user is not None) and not listener.own:
        raise _not_yours(url, listener, "not stopping it; nothing was signalled")
    pid = listener.pid if listener.own else None
    if pid is None:  # nothing answers: a proxy of ours that hangs, by its pid file?
        named = _read_pid(pid_file)
        pid = named if named is not None and proxy_process(named, port) else None
    if pid is None:
        pid_file.unlink(missing_ok=True)
        held = f"; port {port} is held by {listener.holder}" if listener.holder else ""
        _say(as_json, {"running": False, "stopped": False, "url": url,
                       "held_by": listener.holder},
             f"ipse proxy: not running at {url}{held}")  # fmt: skip
        return
    stop_proxy(pid, port, url)
    _say(as_json, {"running": False, "stopped": True, "url": url, "pid": pid},
         f"ipse proxy: stopped (pid {pid})")  # fmt: skip


def stop_proxy(pid: int | None, port: int, url: str) -> None:
    """Signal this user's proxy ``pid`` (already identified) and wait until it is gone."""
    pid_file, _ = _files(port)
    if pid is None:
        raise CheckFailed(f"the proxy at {url} names no process to stop")
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + _STOP_SECONDS
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.1)
    if _alive(pid):
        raise CheckFailed(f"the proxy (pid {pid}) did not stop within {_STOP_SECONDS:.0f} s")
    pid_file.unlink(missing_ok=True)


def _read_pid(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    if not text.isdigit():
        return None
    pid = int(text)
    return pid if _alive(pid) else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child of this process counts as gone
        waited, _ = os.waitpid(pid, os.WNOHANG)
        return waited == 0
    except ChildProcessError:
        return True


@proxy_group.command("status")
@_address
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def status_command(host: str, port: int, as_json: bool) -> None:
    """Say whether your proxy answers there (exit 1 when none does, or not yours).

    \b
    Examples:
      ipse proxy status
      ipse proxy status --port 8766 --json
    """
    url = _url(host, port)
    listener = _identify(url, port)
    found = listener.health
    pid_file, log_file = _files(port)
    refused = not listener.own and (found is not None or listener.other_user is not None)
    document = {"running": listener.own, "url": url, "health": found,
                "not_yours": listener.reason if refused else None,
                "held_by": None if listener.own or found is not None else listener.holder,
                "pid_file": str(pid_file), "log": str(log_file)}  # fmt: skip
    if as_json:
        emit_json(document)
    elif found is not None and listener.own:
        counts = f"{found.get('requests')} requests, {found.get('inflight')} in flight"
        workers = found.get("workers", 1)
        if workers != 1:  # the counts are the answering worker's own
            counts = f"{workers} workers; worker {found.get('worker')}: {counts}"
        autopilot = autopilot_shown(found.get("autopilot"))
        click.echo(f"ipse proxy: running at {url} (pid {found.get('pid')}, {counts}; {autopilot})")
    elif found is not None:
        reason = listener.reason
        click.echo(f"ipse proxy: something answers at {url} but it is not yours ({reason})")
    elif listener.other_user is not None:
        click.echo(f"ipse proxy: not running at {url}; {listener.reason}, not yours")
    elif listener.holder is not None:
        click.echo(
            f"ipse proxy: not running at {url}; port {port} is held by {listener.holder}, "
            "which does not answer as an ipse proxy"
        )
    else:
        click.echo(f"ipse proxy: not running at {url}")
    if not listener.own:
        raise SystemExit(1)
