"""Claude Code: its files, its MCP entry, its proxy settings and hooks, its sessions, its
compaction.

- MCP server: ``mcpServers.ipse`` in the project's ``.mcp.json`` (user: ``.claude.json`` in
  ``CLAUDE_CONFIG_DIR``, else the home folder, kept 0600). The entry says ``alwaysLoad``: Claude
  Code holds the first prompt until the server is connected (capped by its connect timeout, 5 s
  unless ``MCP_CONNECT_TIMEOUT_MS`` says otherwise) and sends the tools' full schemas rather
  than deferring them behind tool search, so the tools array never changes mid-session.
- Instructions: ``CLAUDE.md`` (user: in ``CLAUDE_CONFIG_DIR``, else ``~/.claude``).
- Proxy (``--proxy``): ``env.ANTHROPIC_BASE_URL`` and two hooks in ``.claude/settings.json``
  (user: beside that CLAUDE.md): SessionStart starts the proxy early, UserPromptSubmit makes sure
  it answers before each prompt and, when it cannot start, exits 2 with the one-line reason on
  stderr, which Claude Code shows while it drops the prompt: the agent fails fast, never waiting
  on a proxy that is not there. ``env.MCP_CONNECTION_NONBLOCKING`` is set to ``"false"`` (unless
  the user set it), so Claude Code waits for MCP servers before its first request. Another
  ``ANTHROPIC_BASE_URL`` is refused.
- Status line (``--statusline``): ``statusLine`` in the same settings file runs ``ipse usage
  statusline``; a status line the user set is refused, never replaced.
- Sessions: ``<config>/projects/<folder>/<session id>.jsonl`` (`ipse.transcript`).
- Compaction: measured with Claude Code 2.1.332 (see `COMPACTION`).
"""

from __future__ import annotations

import math
import os
import re
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ipse.agents import _jsonedit as jsonedit
from ipse.agents._agent import AgentCLI, Compaction, Installed, Paths, Request
from ipse.agents._commands import (
    DEFAULT_PORT,
    LOOPBACK,
    PROXY_URL,
    START,
    home_env,
    hook_program,
    proxy_url,
    server_argv,
    start_command,
)
from ipse.agents._files import Edit, blank, blank_again, is_empty_object, json_text, parsed, read
from ipse.agents._mcpjson import add_entry, remove_entry
from ipse.errors import InputError
from ipse.transcript._shared import claude_code_session_file, claude_config_dir

_HOOK_TIMEOUT = 30
HOOK_EVENTS = {"SessionStart": "session_start", "UserPromptSubmit": "prompt_submit"}
_CREATED = {"hooks": "hooks", **{f"hooks.{e}": name for e, name in HOOK_EVENTS.items()}}
_BASE_URL = "ANTHROPIC_BASE_URL"
_PORT = re.compile(r" proxy start --port ([0-9]+)")
_WAIT = "MCP_CONNECTION_NONBLOCKING"  # "false": Claude Code waits for MCP servers at start


def claude_user_config() -> Path:
    """Claude Code's user config: ``.claude.json`` in ``CLAUDE_CONFIG_DIR``, else in the home
    folder (a legacy ``.config.json`` in the config folder while that file does not exist)."""
    env = os.environ.get("CLAUDE_CONFIG_DIR", "").strip()
    current = (Path(env).expanduser() if env else Path.home()) / ".claude.json"
    legacy = claude_config_dir() / ".config.json"
    try:
        if not current.exists() and legacy.is_file() and legacy.stat().st_size > 0:
            return legacy
    except OSError:
        pass
    return current


# ------------------------------------------------------------------------------------ hooks


def _group(command: str) -> dict[str, Any]:
    return {"hooks": [{"type": "command", "command": command, "timeout": _HOOK_TIMEOUT}]}


def proxy_hook(
    port: int = DEFAULT_PORT, upstreams: Mapping[str, str] | None = None, record: str | None = None
) -> dict[str, Any]:
    """The SessionStart hook group: starts the proxy (or, when it cannot, exits 2 with the
    reason on stderr); its stdout goes nowhere, because a hook's stdout becomes context."""
    return _group(f"{start_command(port, upstreams, record)} >/dev/null")


def prompt_hook(
    port: int = DEFAULT_PORT, upstreams: Mapping[str, str] | None = None, record: str | None = None
) -> dict[str, Any]:
    """The UserPromptSubmit hook group: a bare interpreter asks the proxy's health address
    (paid on every prompt: a fraction of what starting ipse costs, see bench/prompt_hook.py)
    and only when no ipse proxy answers runs the start, whose exit 2 and stderr make Claude
    Code refuse the prompt."""
    python = shlex.quote(os.path.abspath(sys.executable))
    check = (  # a raw socket: no import heavier than socket, no HTTP_PROXY in the way
        f'import socket; s = socket.create_connection(("127.0.0.1", {port}), 2); '
        's.sendall(b"GET /ipse/health HTTP/1.0\\r\\nHost: 127.0.0.1\\r\\n\\r\\n"); '
        'd = b"".join(iter(lambda: s.recv(65536), b"")); '
        'assert b" 200 " in d[:16] and b"ipse-proxy" in d'
    )
    start = start_command(port, upstreams, record)
    return _group(f"{python} -S -c '{check}' 2>/dev/null || {start} >/dev/null")


def _is_proxy_hook(group: Any) -> bool:
    """A proxy hook group any ipse install wrote (any executable path, port or home)."""
    if not isinstance(group, dict) or set(group) != {"hooks"}:
        return False
    hooks = group["hooks"]
    if not (isinstance(hooks, list) and len(hooks) == 1 and isinstance(hooks[0], dict)):
        return False
    hook = hooks[0]
    return (
        hook.get("type") == "command"
        and START.search(str(hook.get("command", ""))) is not None
        and hook.get("timeout") == _HOOK_TIMEOUT
    )


def _groups(settings: Any, event: str) -> list[Any]:
    hooks = settings.get("hooks") if isinstance(settings, dict) else None
    groups = hooks.get(event) if isinstance(hooks, dict) else None
    return groups if isinstance(groups, list) else []


def _has_hook(settings: Any) -> bool:
    return any(_is_proxy_hook(g) for event in HOOK_EVENTS for g in _groups(settings, event))


def _env(settings: Any) -> dict[str, Any]:
    env = settings.get("env") if isinstance(settings, dict) else None
    return env if isinstance(env, dict) else {}


# ------------------------------------------------------------------- proxy settings: install


def _set_env(text: str, name: str, value: str, attrs: dict[str, str], key: str) -> str:
    text, created = jsonedit.set_member(text, ["env"], name, value)
    attrs[key] = "new"
    if "env" in created:
        attrs["env"] = "new"
    return text


def _route(text: str, path: Path, port: int, attrs: dict[str, str]) -> str:
    """The settings with ``ANTHROPIC_BASE_URL`` at the proxy; another address is refused
    (one an earlier install of ipse set, beside its hook, is replaced)."""
    value, _ = jsonedit.parse(text, path)
    current = _env(value).get(_BASE_URL)
    url = proxy_url(port)
    ours_before = LOOPBACK.fullmatch(str(current)) is not None and _has_hook(value)
    if current not in (None, url) and not ours_before:
        raise InputError(
            f"env.ANTHROPIC_BASE_URL is already {current!r}; remove it to route Claude Code "
            "through the ipse proxy",
            path=path,
        )
    if current == url:
        return text
    created_now: dict[str, str] = {}
    text = _set_env(text, _BASE_URL, url, created_now, "base_url")
    attrs.update({k: v for k, v in created_now.items() if k != "base_url" or current is None})
    return text


def _wait_for_servers(text: str, path: Path, attrs: dict[str, str]) -> str:
    """Claude Code sends its first request before a slow MCP server is connected (the tools,
    or the deferred list, then change mid-session and the prefix cache breaks there): it waits
    for them when ``MCP_CONNECTION_NONBLOCKING`` is false. A value the user set stays."""
    value, _ = jsonedit.parse(text, path)
    if _WAIT in _env(value):
        return text
    return _set_env(text, _WAIT, "false", attrs, "wait")


def _put_hooks(text: str, path: Path, request: Request, attrs: dict[str, str]) -> str:
    """The settings with the proxy's two hook groups, replacing those of an earlier install."""
    wanted = {
        "SessionStart": proxy_hook(request.port, request.upstreams, request.record),
        "UserPromptSubmit": prompt_hook(request.port, request.upstreams, request.record),
    }
    for event, hook in wanted.items():
        groups = _groups(jsonedit.parse(text, path)[0], event)
        for stale in [g for g in groups if _is_proxy_hook(g) and g != hook]:
            text = jsonedit.remove_items(text, ["hooks", event], stale)
        if hook not in groups:
            text, created = jsonedit.append_item(text, ["hooks", event], hook)
            attrs.update({_CREATED[c]: "new" for c in created})
    return text


def _install_settings(path: Path, request: Request, attrs: dict[str, str]) -> Edit:
    """The settings with the proxy's environment and hooks (``--proxy``) and ipse's status
    line (``--statusline``)."""
    old = read(path)
    if old is None:
        attrs["settings"] = "new"
        if not path.parent.exists():
            attrs["settings_dir"] = "new"
    elif blank(old):
        attrs["settings"] = "blank"
    text = json_text(path, old)
    if request.proxy:
        text = _route(text, path, request.port, attrs)
        text = _wait_for_servers(text, path, attrs)
        text = _put_hooks(text, path, request, attrs)
    if request.statusline:
        text = _put_statusline(text, path, attrs)
    return Edit(path, old, text)


# ------------------------------------------------------------------------------ status line


def statusline_entry() -> dict[str, Any]:
    """The ``statusLine`` setting that runs ``ipse usage statusline``."""
    return {"type": "command", "command": f"{hook_program()} usage statusline"}


def _is_ipse_statusline(entry: Any) -> bool:
    """A ``statusLine`` any ipse install wrote (any executable path or home)."""
    return (
        isinstance(entry, dict)
        and set(entry) == {"type", "command"}
        and entry.get("type") == "command"
        and isinstance(entry.get("command"), str)
        and entry["command"].endswith(" usage statusline")
        and "ipse" in entry["command"]
    )


def _put_statusline(text: str, path: Path, attrs: dict[str, str]) -> str:
    """The settings with ipse's status line; another status line is refused, never replaced
    without the user saying so (they remove theirs first)."""
    value, _ = jsonedit.parse(text, path)
    current = value.get("statusLine") if isinstance(value, dict) else None
    wanted = statusline_entry()
    if current == wanted:
        return text
    if current is not None and not _is_ipse_statusline(current):
        shown = current.get("command") if isinstance(current, dict) else current
        raise InputError(
            f"statusLine is already set ({shown!r}); remove it to show ipse's status line "
            "(ipse does not replace it)",
            path=path,
        )
    text, _ = jsonedit.set_member(text, [], "statusLine", wanted)
    if current is None:
        attrs["statusline"] = "new"
    return text


def _remove_statusline(text: str, settings: Any, attrs: dict[str, str]) -> str:
    """The settings without ipse's status line: the one install added (by the marker), or
    with no marker left, one that runs ipse's."""
    current = settings.get("statusLine") if isinstance(settings, dict) else None
    ours = attrs.get("statusline") == "new" if attrs else True
    if ours and _is_ipse_statusline(current):
        text = jsonedit.remove_member(text, [], "statusLine")
    return text


# ----------------------------------------------------------------- proxy settings: uninstall


def _base_url_is_ours(settings: Any, attrs: dict[str, str]) -> bool:
    """Whether ``ANTHROPIC_BASE_URL`` is install's: as the marker says (it set it, to its
    port), or with no marker left, by its value next to ipse's hook (or the default address)."""
    base = _env(settings).get(_BASE_URL)
    if attrs:
        url = proxy_url(int(attrs.get("port", DEFAULT_PORT)))
        return attrs.get("base_url") == "new" and base == url
    return isinstance(base, str) and (
        base == PROXY_URL or (LOOPBACK.fullmatch(base) is not None and _has_hook(settings))
    )


def _unroute(text: str, settings: Any, attrs: dict[str, str]) -> str:
    ours = _base_url_is_ours(settings, attrs)
    created = ["env"] if attrs.get("env") == "new" else []
    wait_ours = attrs.get("wait") == "new" if attrs else ours
    if _env(settings).get(_WAIT) == "false" and wait_ours:
        text = jsonedit.remove_member(text, ["env"], _WAIT, created if not ours else [])
    if ours:
        text = jsonedit.remove_member(text, ["env"], _BASE_URL, created)
    return text


def _remove_hooks(text: str, settings: Any, attrs: dict[str, str]) -> str:
    for event in HOOK_EVENTS:
        for group in [g for g in _groups(settings, event) if _is_proxy_hook(g)]:
            text = jsonedit.remove_items(text, ["hooks", event], group)
    created = [k for k, name in _CREATED.items() if attrs.get(name) == "new"]
    for event in HOOK_EVENTS:
        text = jsonedit.prune(text, ["hooks", event], created)
    return text


def _uninstall_proxy(path: Path, attrs: dict[str, str]) -> Edit:
    old = read(path)
    if old is None or blank(old):  # nothing of ipse's in it
        return Edit(path, old, old)
    settings, _ = jsonedit.parse(old, path)
    text = _remove_hooks(_unroute(old, settings, attrs), settings, attrs)
    text = _remove_statusline(text, settings, attrs)
    text = blank_again(text, attrs.get("settings") == "blank")
    if text != old and attrs.get("settings") == "new" and is_empty_object(text):
        return Edit(path, old, None)
    return Edit(path, old, text)


def _kept(request: Request) -> str:
    return "" if request.proxy else " (installed earlier with --proxy, which stays)"


# ------------------------------------------------------------------------------- compaction


def _tokens(value: str | None) -> int | None:
    """A token count as Claude Code reads one (``100000``, ``100k``); None when it is not."""
    text = (value or "").strip().lower()
    scale = 1000 if text.endswith("k") else 1
    digits = text[:-1] if scale > 1 else text
    return int(digits) * scale if digits.isdigit() else None


def compaction_threshold(
    window: int, values: Mapping[str, str], max_output: int = 128_000
) -> int | None:
    """The context size at which Claude Code compacts: window W (``CLAUDE_CODE_AUTO_COMPACT_
    WINDOW``, else ``autoCompactWindow``; at least 100,000 and at most the model's) less
    min(max output, 20,000) less 13,000; ``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=P`` lowers it to
    P% of W less that reserve, never raises it."""
    asked = _tokens(values.get("CLAUDE_CODE_AUTO_COMPACT_WINDOW"))
    if asked is None:
        asked = _tokens(values.get("autoCompactWindow"))
    size = window if asked is None else min(window, max(100_000, asked))
    reserve = min(max_output, 20_000)
    threshold = size - reserve - 13_000
    percent = _tokens(values.get("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"))
    if percent is not None and 0 < percent <= 100:
        threshold = min(math.floor((size - reserve) * percent / 100), threshold)
    return threshold


COMPACTION = Compaction(
    settings=(
        "CLAUDE_CODE_AUTO_COMPACT_WINDOW",
        "autoCompactWindow",
        "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE",
    ),
    rule=(
        "compacts when the context (the last reply's usage plus its estimate of the messages "
        "since) reaches W - min(max output, 20,000) - 13,000 (W: the model's window, or "
        "CLAUDE_CODE_AUTO_COMPACT_WINDOW / autoCompactWindow, at least 100,000); "
        "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=P lowers it to P% of W less that reserve"
    ),
    verified=(
        "measured with Claude Code 2.1.332 against a scripted upstream (the environment, a "
        "settings.json env block, autoCompactWindow and --autocompact all moved the compaction "
        "request to the same turn); which of the variable and autoCompactWindow wins when both "
        "are set was not measured (ipse takes the variable)"
    ),
    threshold=compaction_threshold,
)

# ------------------------------------------------------------------------------------ agent


class ClaudeCode(AgentCLI):
    name = "claude-code"
    label = "Claude Code"
    instructions = "CLAUDE.md"
    proxy = True
    private = frozenset({".claude.json", ".config.json"})
    session_format = "claude-code"
    statusline = True
    session_globs = ("**/*.jsonl",)  # sub-agents' files too: <session>/subagents/*.jsonl
    compaction = COMPACTION

    def paths(self, root: Path, user: bool) -> Paths:
        if user:
            home = claude_config_dir()
            return Paths(claude_user_config(), home / "CLAUDE.md", home / "settings.json")
        return Paths(root / ".mcp.json", root / "CLAUDE.md", root / ".claude" / "settings.json")

    def server_entry(self) -> dict[str, Any]:
        command, args = server_argv()  # alwaysLoad: its tools in the first request
        return {"type": "stdio", "command": command, "args": args, "env": home_env(),
                "alwaysLoad": True}  # fmt: skip

    def install(self, where: Paths, request: Request, attrs: dict[str, str]) -> Installed:
        edits = [add_entry(where.config, self.server_entry(), attrs)]
        assert where.settings is not None
        if request.proxy or request.statusline:
            edits.append(_install_settings(where.settings, request, attrs))
        if request.proxy:
            return Installed(edits, request.port)
        return Installed(edits, self.proxy_port(where))  # an earlier --proxy stays

    def uninstall(self, where: Paths, attrs: dict[str, str], marked: bool) -> list[Edit]:
        assert where.settings is not None
        return [remove_entry(where.config, attrs, marked), _uninstall_proxy(where.settings, attrs)]

    def proxy_port(self, where: Paths) -> int | None:
        """The port the proxy its hooks start listens on (None: no hook of ipse's)."""
        settings = parsed(read(where.settings)) if where.settings is not None else None
        for event in HOOK_EVENTS:
            for group in filter(_is_proxy_hook, _groups(settings, event)):
                found = _PORT.search(group["hooks"][0]["command"])
                return int(found.group(1)) if found else DEFAULT_PORT
        return None

    def notes(self, request: Request, port: int | None) -> list[str]:
        shown = (
            ["Claude Code shows ipse usage statusline under the prompt (context, this "
             "session's cost, cache hit rate, what ipse saved)"]
            if request.statusline
            else []
        )  # fmt: skip
        if port is None:
            return [
                "without --proxy, a checkpoint keeps notes for recall; nothing is removed from "
                "the conversation",
                *shown,
            ]
        return [
            *shown,
            f"Claude Code now goes through the ipse proxy at {proxy_url(port)}{_kept(request)}; "
            "its hooks start it, and a prompt is refused with the reason when it cannot start",
        ]

    def hooks_file(self, root: Path) -> Path | None:
        return root / ".claude" / "settings.json"

    def session_folder(self, cwd: Path) -> Path | None:
        from ipse.transcript._shared import project_folder

        return claude_config_dir() / "projects" / project_folder(str(cwd.resolve()))

    def session_file(self, session: str, cwd: Path) -> Path | None:
        return claude_code_session_file(session, cwd)

    def sessions_root(self) -> Path | None:
        return claude_config_dir() / "projects"

    def compaction_values(self, where: Paths) -> dict[str, str]:
        settings = parsed(read(where.settings)) if where.settings is not None else None
        values: dict[str, str] = {}
        window = settings.get("autoCompactWindow") if isinstance(settings, dict) else None
        if isinstance(window, int | str) and not isinstance(window, bool):
            values["autoCompactWindow"] = str(window)
        for name in ("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"):
            value = os.environ.get(name, _env(settings).get(name))
            if isinstance(value, str | int) and not isinstance(value, bool):
                values[name] = str(value)
        return values


AGENT = ClaudeCode()

# What the table (`ipse.agents._table`) reads; the rest serves it and its tests.
__all__ = ["AGENT"]
