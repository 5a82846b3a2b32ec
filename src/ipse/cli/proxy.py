"""``ipse proxy``: run the proxy in the foreground, or ``start | stop | status`` one in the
background (its pid file and log file in ipse's home, both 0600).

``start`` is idempotent: when an ipse proxy already answers on the address it says so and exits
0, so a harness hook can run it at every session start. The work is the library's
(`ipse.proxy`); this module parses options and manages the background process.
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
from ipse.errors import InputError

_STARTUP_SECONDS = 20.0


def _options(function: Any) -> Any:
    decorators = [
        click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind."),
        click.option("--port", default=8765, show_default=True, type=int, help="Port to bind."),
        click.option(
            "--anthropic-upstream",
            default="https://api.anthropic.com",
            show_default=True,
            help="Origin (and optional path prefix) for Anthropic requests.",
        ),
        click.option(
            "--openai-upstream",
            default="https://api.openai.com",
            show_default=True,
            help="Origin (and optional path prefix) for OpenAI requests.",
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
            "--no-analysis",
            is_flag=True,
            help="Log usage without the cache model's prediction (saves CPU on large bodies).",
        ),
        click.option(
            "--read-timeout",
            default=600.0,
            show_default=True,
            type=float,
            help="Seconds to wait for upstream bytes.",
        ),
    ]
    for decorator in reversed(decorators):
        function = decorator(function)
    return function


def _config(**options: Any) -> Any:
    from ipse.proxy import ProxyConfig, Upstream

    names = tuple(options["tool_names"]) or ("micro_handoff",)
    return ProxyConfig(
        host=options["host"],
        port=options["port"],
        anthropic=Upstream.parse(options["anthropic_upstream"], "--anthropic-upstream"),
        openai=Upstream.parse(options["openai_upstream"], "--openai-upstream"),
        record=options["record"],
        store=options["store"],
        json_log=options["json_log"],
        tool_names=names,
        handoff=not options["no_handoff"],
        analyze=not options["no_analysis"],
        read_timeout=options["read_timeout"],
    )


@click.group("proxy", invoke_without_command=True)
@_options
@click.pass_context
def proxy_group(ctx: click.Context, /, **options: Any) -> None:
    """Run the ipse proxy in the foreground (Ctrl-C stops it).

    Point a client at it (ANTHROPIC_BASE_URL=http://127.0.0.1:8765,
    OPENAI_BASE_URL=http://127.0.0.1:8765/v1): requests after a checkpoint call are handed off
    on the way.

    \b
    Examples:
      ipse proxy --record exchanges.jsonl
      ipse proxy start && ipse proxy status
    """
    if ctx.invoked_subcommand is not None:
        return
    from ipse.proxy import serve

    serve(_config(**options))


def _files(port: int) -> tuple[Path, Path]:
    from ipse.home import home_dir

    home = home_dir()
    return home / f"proxy-{port}.pid", home / f"proxy-{port}.log"


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    if host in ("0.0.0.0", "::"):
        shown = "127.0.0.1"
    return f"http://{shown}:{port}"


@proxy_group.command("start")
@_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def start_command(as_json: bool, **options: Any) -> None:
    """Start a proxy in the background; succeed at once when one already answers there."""
    from ipse.fileio import private_file
    from ipse.proxy import probe

    config = _config(**options)
    url = _url(config.host, config.port)
    found = probe(url)
    if found is not None:
        _say(as_json, {"running": True, "started": False, "url": url, "pid": found.get("pid")},
             f"ipse proxy: already running at {url} (pid {found.get('pid')})")  # fmt: skip
        return
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
            found = probe(url)  # another start won the race: that one serves
            if found is not None:
                _say(as_json, {"running": True, "started": False, "url": url,
                               "pid": found.get("pid")},
                     f"ipse proxy: already running at {url} (pid {found.get('pid')})")  # fmt: skip
                return
            raise InputError(
                f"the proxy exited at start with status {process.returncode} "
                f"({_tail(log_file)}); log: {log_file}"
            )
        found = probe(url, timeout=0.5)
        if found is not None:
            _write_pid(pid_file, process.pid)
            _say(as_json, {"running": True, "started": True, "url": url, "pid": process.pid,
                           "log": str(log_file)},
                 f"ipse proxy: started at {url} (pid {process.pid}, log {log_file})")  # fmt: skip
            return
        time.sleep(0.1)
    process.terminate()
    raise InputError(f"the proxy did not answer within {_STARTUP_SECONDS:.0f} s; log: {log_file}")


def _argv(options: dict[str, Any]) -> list[str]:
    out = [
        "--host", options["host"], "--port", str(options["port"]),
        "--anthropic-upstream", options["anthropic_upstream"],
        "--openai-upstream", options["openai_upstream"],
        "--read-timeout", str(options["read_timeout"]),
    ]  # fmt: skip
    if options["record"] is not None:
        out += ["--record", str(Path(options["record"]).resolve())]
    if options["store"]:
        out += ["--store", options["store"]]
    if options["json_log"]:
        out.append("--json-log")
    if options["no_handoff"]:
        out.append("--no-handoff")
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
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8765, show_default=True, type=int)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def stop_command(host: str, port: int, as_json: bool) -> None:
    """Stop the background proxy started with `ipse proxy start` on that port."""
    from ipse.proxy import probe

    pid_file, _ = _files(port)
    url = _url(host, port)
    found = probe(url)
    pid = _read_pid(pid_file)
    if found is not None and pid is not None and found.get("pid") != pid:
        pid = None  # the pid file is stale: it names some other process
    if pid is None and found is not None:
        pid = found.get("pid") if isinstance(found.get("pid"), int) else None
    if pid is None:
        pid_file.unlink(missing_ok=True)
        _say(as_json, {"running": False, "stopped": False, "url": url},
             f"ipse proxy: not running at {url}")  # fmt: skip
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.1)
    pid_file.unlink(missing_ok=True)
    _say(as_json, {"running": False, "stopped": True, "url": url, "pid": pid},
         f"ipse proxy: stopped (pid {pid})")  # fmt: skip


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
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8765, show_default=True, type=int)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def status_command(host: str, port: int, as_json: bool) -> None:
    """Say whether a proxy answers there (exit 1 when none does)."""
    from ipse.proxy import probe

    url = _url(host, port)
    found = probe(url)
    pid_file, log_file = _files(port)
    document = {"running": found is not None, "url": url, "health": found,
                "pid_file": str(pid_file), "log": str(log_file)}  # fmt: skip
    if as_json:
        emit_json(document)
    elif found is not None:
        click.echo(
            f"ipse proxy: running at {url} (pid {found.get('pid')}, {found.get('requests')} "
            f"requests, {found.get('inflight')} in flight)"
        )
    else:
        click.echo(f"ipse proxy: not running at {url}")
    if found is None:
        raise SystemExit(1)


__all__ = ["proxy_group"]
