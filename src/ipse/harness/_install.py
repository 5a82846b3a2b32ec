"""``ipse install`` / ``uninstall``: register ipse's MCP server (and, with ``proxy``, the proxy)
with Claude Code, Codex or Gemini CLI, and put a section saying what checkpoints do in the
agent's instructions file.

What each agent gets (project scope by default, the user's own files with ``user``), in the
folders the harness itself reads (`paths`):

- claude-code: ``mcpServers.ipse`` in ``.mcp.json`` (user: ``.claude.json`` in
  ``CLAUDE_CONFIG_DIR``, else the home folder); instructions in ``CLAUDE.md`` (user: in
  ``CLAUDE_CONFIG_DIR``, else ``~/.claude``); with ``proxy``, ``env.ANTHROPIC_BASE_URL`` and two
  hooks in ``.claude/settings.json`` (user: beside that CLAUDE.md): SessionStart starts the proxy
  early, UserPromptSubmit makes sure it answers before each prompt and, when it cannot start,
  exits 2 with the one-line reason on stderr, which Claude Code shows while it drops the prompt:
  the agent fails fast, never waiting on a proxy that is not there.
- codex: ``[mcp_servers.ipse]`` in ``$CODEX_HOME/config.toml`` (``~/.codex``); instructions in
  ``AGENTS.md`` (user: ``$CODEX_HOME/AGENTS.md``); with ``proxy``, ``[model_providers.ipse]``
  (Responses API at the proxy's ``/v1``) selected by ``model_provider``. Codex's own hooks run
  only after the user reviews and trusts them, and without a proxy Codex waits "Reconnecting"
  forever, so `install_notes` tells the user the command that starts the proxy and the
  credential variable the provider sends.
- gemini: ``mcpServers.ipse`` in ``.gemini/settings.json`` (user: in ``$GEMINI_CLI_HOME/.gemini``,
  else ``~/.gemini``), edited as the JSON with comments Gemini CLI reads; instructions in
  ``GEMINI.md``. No proxy serves Gemini's API: checkpoints keep notes for ``recall``.

Each harness sends its first request to the model with ipse's tools only when it waits for the
server: Claude Code's entry says ``alwaysLoad`` (it holds the first prompt until the server is
connected, capped by its connect timeout, 5 s unless ``MCP_CONNECT_TIMEOUT_MS`` says otherwise,
and sends the tools' full schemas rather than deferring them behind tool search, so the tools
array never changes mid-session); Codex's says ``required = true`` (``codex exec`` waits for
its tools, and refuses to start, in one line, when the server cannot); Gemini CLI has no such
key: non-interactive runs always wait for every server, interactive ones never do.

The section says what this install does: with the proxy, that tool calls and results are removed
at checkpoints (`ipse.handoff.narration_prompt`); without it, only that notes are kept. Install
first checks that what it registers can run (`ipse.harness._extras`): the stdio server needs
nothing beyond ipse itself, ``proxy`` needs the proxy extra. The server command names
this ipse by absolute path, so it works when the user's virtual environment is not active; the
hooks, which a shell runs, are shell-quoted; ``IPSE_HOME``, when set, is passed to each, so the
server, the hooks and the proxy use one home. Every edit keeps the file's formatting, line
endings and mode (a file install creates gets the harness's own mode: 0600 for
``.claude.json`` and Codex's config), and the instructions block's begin marker records what
install created, so uninstall removes exactly what install added: a file edited by nothing else
comes back byte for byte. ipse's entries are also recognised by their content, so uninstall
removes them after a harness rewrote its config and dropped the markers. A setting ipse would
have to overwrite (another ``ANTHROPIC_BASE_URL``, another ``model_provider``) is refused.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipse.errors import InputError, UsageError
from ipse.fileio import atomic_write
from ipse.harness import jsonedit, tomledit
from ipse.harness._blocks import add_block, find_block, remove_block
from ipse.harness._extras import require
from ipse.transcript import claude_config_dir

AGENTS = ("claude-code", "codex", "gemini")
DEFAULT_PORT = 8765
PROXY_URL = f"http://127.0.0.1:{DEFAULT_PORT}"
BLOCK = "mcp"
SERVER = "ipse"
_PROVIDER_LINE = 'model_provider = "ipse"'
_PROVIDER_NAME = "ipse proxy"
_HOOK_TIMEOUT = 30
_HOOK_EVENTS = {"SessionStart": "session_start", "UserPromptSubmit": "prompt_submit"}
_START = re.compile(r"(?:^| )proxy start(?: --[a-z-]+ .*)?(?: >/dev/null)?$")
_WAIT = "MCP_CONNECTION_NONBLOCKING"  # Claude Code: "false" waits for MCP servers at start
_LOOPBACK = re.compile(r"http://127\.0\.0\.1:([0-9]+)")
_PRIVATE = 0o600  # the mode Claude Code gives .claude.json and Codex its config.toml

NOTES_ONLY = """## Checkpoints (ipse)

This agent talks to its model directly, not through the ipse proxy: a checkpoint keeps your
notes, and nothing is removed from this conversation.

- At a natural checkpoint (a subtask done, a decision made), call `micro_handoff` with the facts:
  done, open, what went wrong and which approaches were rejected and why, working directory and
  repository, recipes worth keeping verbatim, and claims with their evidence. ipse stores them
  outside this conversation.
- After a context reset, or in a new session, call `recall` with the checkpoint id it returned
  to read them back.
"""


@dataclass(frozen=True)
class Change:
    """One file install or uninstall created, updated, removed, or left alone."""

    path: str
    action: str  # created | updated | removed | unchanged


def launcher() -> tuple[str, list[str]]:
    """The absolute command that runs this ipse, and the arguments before ipse's own: the
    ``ipse`` script beside the running interpreter (a virtual environment's ``bin/``), else
    the interpreter with ``-m ipse``."""
    python = os.path.abspath(sys.executable)
    script = os.path.join(os.path.dirname(python), "ipse")
    if os.path.isfile(script) and os.access(script, os.X_OK):
        return script, []
    return python, ["-m", "ipse"]


def program() -> str:
    """`launcher` as shell words, each quoted for the POSIX shell (for hooks a shell runs)."""
    command, args = launcher()
    return " ".join(shlex.quote(word) for word in (command, *args))


def hook_program() -> str:
    """`program` for a hook: after ``IPSE_HOME=...`` when it is set, so what the hook runs uses
    the home the rest of this install does."""
    env = "".join(f"{k}={shlex.quote(v)} " for k, v in _home_env().items())
    return env + program()


def proxy_url(port: int = DEFAULT_PORT) -> str:
    """The proxy's address on this machine."""
    return f"http://127.0.0.1:{port}"


def codex_home() -> Path:
    """Codex's folder: ``CODEX_HOME``, else ``~/.codex``."""
    env = os.environ.get("CODEX_HOME")
    return Path(env).expanduser() if env else Path.home() / ".codex"


def gemini_dir() -> Path:
    """Gemini CLI's user folder: ``.gemini`` in ``GEMINI_CLI_HOME``, else in the home folder."""
    env = os.environ.get("GEMINI_CLI_HOME")
    return (Path(env).expanduser() if env else Path.home()) / ".gemini"


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


@dataclass(frozen=True)
class Paths:
    """The files one agent's install touches."""

    config: Path
    instructions: Path
    settings: Path | None  # claude-code's settings.json (for --proxy)


def paths(agent: str, root: Path, user: bool) -> Paths:
    """Where ``agent`` keeps its MCP servers, instructions and settings."""
    if agent == "claude-code":
        if user:
            home = claude_config_dir()
            return Paths(claude_user_config(), home / "CLAUDE.md", home / "settings.json")
        return Paths(root / ".mcp.json", root / "CLAUDE.md", root / ".claude" / "settings.json")
    if agent == "codex":
        home = codex_home()
        return Paths(home / "config.toml", (home if user else root) / "AGENTS.md", None)
    if agent == "gemini":
        folder = gemini_dir() if user else root / ".gemini"
        return Paths(folder / "settings.json", (folder if user else root) / "GEMINI.md", None)
    raise UsageError(f"unknown agent {agent!r} (choose from {', '.join(AGENTS)})")


def _private(agent: str, path: Path) -> bool:
    """Whether the harness keeps this file private (0600 when install creates it)."""
    if agent == "codex":
        return path.name == "config.toml"
    return agent == "claude-code" and path.name in (".claude.json", ".config.json")


def _home_env() -> dict[str, str]:
    """The environment the registered commands get: ``IPSE_HOME`` when it is set."""
    home = os.environ.get("IPSE_HOME")
    return {"IPSE_HOME": os.path.abspath(os.path.expanduser(home))} if home else {}


def server_entry(agent: str) -> dict[str, Any]:
    """The MCP server entry an agent's config gets (no shell runs it: plain argv)."""
    command, args = launcher()
    entry: dict[str, Any] = {"command": command, "args": [*args, "mcp"]}
    env = _home_env()
    if agent == "claude-code":  # alwaysLoad: its tools in the first request (see above)
        return {"type": "stdio", **entry, "env": env, "alwaysLoad": True}
    if env:
        entry["env"] = env
    return entry


def _is_ipse_server(entry: Any) -> bool:
    """An MCP server entry some ipse install wrote (any interpreter path): argv ending in
    ``... mcp`` run by an ``ipse`` executable or a Python running ``-m ipse``."""
    if not isinstance(entry, dict):
        return False
    command, args = entry.get("command"), entry.get("args")
    if not isinstance(command, str) or not isinstance(args, list) or args[-1:] != ["mcp"]:
        return False
    name = Path(command).name
    return Path(name).stem == "ipse" or (name.startswith("python") and args[:2] == ["-m", "ipse"])


def _is_ipse_provider(entry: Any) -> bool:
    """A ``[model_providers.ipse]`` table some ipse install wrote (any port)."""
    if not isinstance(entry, dict) or entry.get("name") != _PROVIDER_NAME:
        return False
    url = entry.get("base_url")
    return isinstance(url, str) and re.fullmatch(_LOOPBACK.pattern + "/v1", url) is not None


def _value(text: str, comments: bool) -> Any:
    try:
        return jsonedit.parse(text, comments=comments)[0] if text.strip() else {}
    except InputError:
        return None


def _server_of(text: str, comments: bool = False) -> Any:
    """The ``mcpServers.ipse`` entry in a JSON config's text, or None."""
    document = _value(text, comments)
    servers = document.get("mcpServers") if isinstance(document, dict) else None
    return servers.get(SERVER) if isinstance(servers, dict) else None


def _start_command(
    port: int, upstreams: Mapping[str, str] | None = None, record: str | None = None
) -> str:
    """The shell command that starts the proxy (idempotent: exits 0 when one answers), with
    the upstreams install was given (``anthropic``, ``openai``: origins the proxy forwards to)
    and the file it records every exchange in (``--record``, an absolute path)."""
    flags = "" if port == DEFAULT_PORT else f" --port {port}"
    for name, url in sorted((upstreams or {}).items()):
        flags += f" --{name}-upstream {shlex.quote(url)}"
    if record:
        flags += f" --record {shlex.quote(record)}"
    return f"{hook_program()} proxy start{flags}"


def _group(command: str) -> dict[str, Any]:
    return {"hooks": [{"type": "command", "command": command, "timeout": _HOOK_TIMEOUT}]}


def proxy_hook(
    port: int = DEFAULT_PORT, upstreams: Mapping[str, str] | None = None, record: str | None = None
) -> dict[str, Any]:
    """The SessionStart hook group: starts the proxy (or, when it cannot, exits 2 with the
    reason on stderr); its stdout goes nowhere, because a hook's stdout becomes context."""
    return _group(f"{_start_command(port, upstreams, record)} >/dev/null")


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
    start = _start_command(port, upstreams, record)
    return _group(f"{python} -S -c '{check}' 2>/dev/null || {start} >/dev/null")


def _hooks(
    port: int, upstreams: Mapping[str, str] | None, record: str | None = None
) -> dict[str, dict[str, Any]]:
    return {
        "SessionStart": proxy_hook(port, upstreams, record),
        "UserPromptSubmit": prompt_hook(port, upstreams, record),
    }


def _is_proxy_hook(group: Any) -> bool:
    """A proxy hook group any ipse install wrote (any executable path, port or home)."""
    if not isinstance(group, dict) or set(group) != {"hooks"}:
        return False
    hooks = group["hooks"]
    return bool(
        isinstance(hooks, list)
        and len(hooks) == 1
        and isinstance(hooks[0], dict)
        and hooks[0].get("type") == "command"
        and _START.search(str(hooks[0].get("command", ""))) is not None
        and hooks[0].get("timeout") == _HOOK_TIMEOUT
    )


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string


def _codex_tables(proxy: bool, port: int) -> str:
    command, args = launcher()
    lines = [
        f"[mcp_servers.{SERVER}]",
        f"command = {_toml_string(command)}",
        f"args = {json.dumps([*args, 'mcp'], ensure_ascii=False)}",
        # `codex exec` asks no questions: a tool that needs approval fails there, so ipse's own
        # tools (notes, recall, state: nothing outside ipse's store and state folder) need none
        'default_tools_approval_mode = "approve"',
        # the running Codex's home, when set: where the server finds the thread's rollout
        'env_vars = ["CODEX_HOME"]',
    ]
    env = _home_env()
    if os.environ.get("PYTHONPATH"):  # Codex gives a server no PYTHONPATH of its own: the ipse
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]  # that ran install (a checkout's src) runs
    if env:
        pairs = ", ".join(f"{k} = {_toml_string(v)}" for k, v in env.items())
        lines.append(f"env = {{ {pairs} }}")
    lines.append("required = true")  # Codex waits for its tools before the first request
    if proxy:
        lines += [
            "",
            f"[model_providers.{SERVER}]",
            f"name = {_toml_string(_PROVIDER_NAME)}",
            f'base_url = "{proxy_url(port)}/v1"',
            'env_key = "OPENAI_API_KEY"',
            'wire_api = "responses"',
            "supports_websockets = false",
        ]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------ file access


def _read(path: Path) -> str | None:
    """The file's text exactly as stored (line endings untranslated), None when missing."""
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", path=path) from exc


def _write(path: Path, old: str | None, new: str | None, private: bool = False) -> Change:
    if new == old:
        return Change(str(path), "unchanged")
    if new is None:
        path.unlink()
        return Change(str(path), "removed")
    # an existing file keeps its mode (atomic_write's default); a new one gets the harness's
    atomic_write(path, new, mode=_PRIVATE if private and old is None else None)
    return Change(str(path), "created" if old is None else "updated")


def _json_text(path: Path, text: str | None, comments: bool) -> str:
    """The config to edit: a missing file is an empty object; a blank one keeps its blank
    text before the object, so that uninstall can give it back (`_blank_again`)."""
    if text is None:
        return "{}\n"
    if not text.strip():
        return text + "{}\n"
    jsonedit.parse(text, path, comments=comments)
    return text


def _blank(text: str | None) -> bool:
    return text is not None and not text.strip()


def _blank_again(text: str, was_blank: bool) -> str:
    """After uninstall: the blank text a file held before install, when it held one and ipse
    left an empty object behind."""
    if was_blank and _is_empty_object(text):
        return text[: len(text) - len(text.lstrip())]
    return text


def _is_empty_object(text: str, comments: bool = False) -> bool:
    return bool(text.strip()) and _value(text, comments) == {}


# ---------------------------------------------------------------------------------- install


def install_agent(
    agent: str,
    root: Path,
    *,
    user: bool = False,
    proxy: bool = False,
    port: int = DEFAULT_PORT,
    upstreams: Mapping[str, str] | None = None,
    record: str | None = None,
) -> list[Change]:
    """Register ipse's MCP server with ``agent`` (and the proxy with ``proxy``, on ``port``,
    forwarding to ``upstreams`` and recording into ``record`` when given); idempotent."""
    where = paths(agent, root, user)
    if proxy and agent == "gemini":
        raise UsageError("--proxy: Gemini CLI is not served by the ipse proxy")
    if proxy:  # (the stdio server it registers needs nothing beyond ipse itself)
        require("proxy", "--proxy (ipse proxy start)")
    comments = agent == "gemini"
    attrs: dict[str, str] = {}
    current: dict[str, str] = {}
    writes: list[tuple[Path, str | None, str]] = []
    old_config = _read(where.config)
    if old_config is None:
        attrs["config"] = "new"
        if not where.config.parent.exists():
            attrs["dir"] = "new"
    elif _blank(old_config) and agent != "codex":
        attrs["config"] = "blank"
    if agent == "codex":
        config = _codex_config(where.config, old_config, proxy, port)
        writes.append((where.config, old_config, config))
        kept = _proxy_port(tomledit.parse_toml(config))  # an earlier --proxy stays
        proxy, port = (True, kept) if kept is not None else (proxy, port)
    else:
        text = _json_text(where.config, old_config, comments)
        theirs = _server_of(text, comments)
        if theirs is not None and not _is_ipse_server(theirs):
            raise InputError(
                f"already has mcpServers.{SERVER} (not ipse's own); remove or rename it",
                path=where.config,
            )
        new, created = jsonedit.set_member(
            text, ["mcpServers"], SERVER, server_entry(agent), comments=comments
        )
        if "mcpServers" in created:
            attrs["servers"] = "new"
        writes.append((where.config, old_config, new))
    if proxy:
        attrs["proxy"] = "1"
        current["port"] = str(port)
        if agent == "claude-code":
            assert where.settings is not None
            writes.append(_claude_proxy(where.settings, attrs, port, upstreams, record))
    elif agent == "claude-code" and where.settings is not None:  # an earlier --proxy stays
        proxy = _routed(where.settings)
    from ipse.handoff import narration_prompt

    section = narration_prompt() if proxy else NOTES_ONLY
    old_doc = _read(where.instructions)
    if old_doc is None and not where.instructions.parent.exists():
        attrs["docs_dir"] = "new"
    new_doc = add_block(old_doc, section.rstrip("\n") + "\n", BLOCK, attrs, current)
    writes.append((where.instructions, old_doc, new_doc))
    changes = []
    for path, old, new in writes:
        if new != old:
            path.parent.mkdir(parents=True, exist_ok=True)
        changes.append(_write(path, old, new, _private(agent, path)))
    return changes


def _strip_codex(text: str, path: Path) -> tuple[str, bool]:
    """The config without what any ipse install wrote: the marked block and key, then (when
    Codex rewrote the file and dropped the markers) ipse's tables and key found by content.
    Also whether ipse's model provider was there."""
    base = tomledit.remove_top_key(tomledit.remove_toml_block(text), _PROVIDER_LINE)
    proxied = base != tomledit.remove_toml_block(text)
    doc = tomledit.parse_toml(base, path)
    names: set[tuple[str, ...]] = set()
    servers, providers = doc.get("mcp_servers"), doc.get("model_providers")
    if isinstance(servers, dict) and _is_ipse_server(servers.get(SERVER)):
        names.add(("mcp_servers", SERVER))
    if isinstance(providers, dict) and _is_ipse_provider(providers.get(SERVER)):
        names.add(("model_providers", SERVER))
        proxied = True
    stripped = tomledit.remove_tables(base, names)
    if proxied and doc.get("model_provider") == SERVER:
        stripped = _remove_provider_key(stripped)
    if stripped != base and not base.startswith(("\n", "\r\n")):
        stripped = stripped.lstrip("\r\n")  # found by content: no blank lines where ipse's led
    left = tomledit.parse_toml(stripped, path)
    servers, providers = left.get("mcp_servers"), left.get("model_providers")
    if (isinstance(servers, dict) and _is_ipse_server(servers.get(SERVER))) or (
        isinstance(providers, dict) and _is_ipse_provider(providers.get(SERVER))
    ):  # written in a form no table header shows (inline, dotted keys): never claim success
        raise InputError(
            "holds ipse's entries in a form ipse cannot edit (an inline or dotted table); "
            "remove [mcp_servers.ipse] and [model_providers.ipse] by hand",
            path=path,
        )
    return stripped, proxied


def _remove_provider_key(text: str) -> str:
    """``text`` without a top-level ``model_provider = "ipse"`` line (whatever its comment)."""
    match = re.search(r"(?m)^[ \t]*\[", text)
    head_end = match.start() if match else len(text)
    line = re.compile(r'(?m)^[ \t]*model_provider[ \t]*=[ \t]*"ipse"[ \t]*(?:#.*?)?(?:\r?\n|$)')
    found = line.search(text, 0, head_end)
    return text if found is None else text[: found.start()] + text[found.end() :]


def _proxy_port(config: dict[str, Any]) -> int | None:
    """The port of ipse's model provider in a parsed Codex config, None without one."""
    providers = config.get("model_providers")
    provider = providers.get(SERVER) if isinstance(providers, dict) else None
    if not isinstance(provider, dict) or not _is_ipse_provider(provider):
        return None
    found = _LOOPBACK.match(str(provider["base_url"]))
    return int(found.group(1)) if found else None


def _codex_config(path: Path, old: str | None, proxy: bool, port: int) -> str:
    text = old or ""
    base, was_proxied = _strip_codex(text, path)
    if not proxy and was_proxied:  # installed again without --proxy: the proxy stays as it was
        port = _proxy_port(tomledit.parse_toml(text, path)) or port
    doc = tomledit.parse_toml(base, path)
    servers = doc.get("mcp_servers")
    if isinstance(servers, dict) and SERVER in servers:
        raise InputError("already has [mcp_servers.ipse] (not ipse's own); remove it", path=path)
    if proxy:
        if "model_provider" in doc:
            raise InputError(
                f"already selects model_provider = {doc['model_provider']!r}; remove it to "
                "route Codex through the ipse proxy",
                path=path,
            )
        providers = doc.get("model_providers")
        if isinstance(providers, dict) and SERVER in providers:
            raise InputError("already has [model_providers.ipse]; remove it", path=path)
    proxied = proxy or was_proxied
    new = tomledit.add_toml_block(base, _codex_tables(proxied, port))
    if proxied:
        new = tomledit.add_top_key(new, _PROVIDER_LINE)
    tomledit.parse_toml(new, path)  # what ipse writes must parse
    return new


def _claude_proxy(
    path: Path,
    attrs: dict[str, str],
    port: int,
    upstreams: Mapping[str, str] | None,
    record: str | None = None,
) -> tuple[Path, str | None, str]:
    old = _read(path)
    if old is None:
        attrs["settings"] = "new"
        if not path.parent.exists():
            attrs["settings_dir"] = "new"
    elif _blank(old):
        attrs["settings"] = "blank"
    text = _json_text(path, old, False)
    value, _ = jsonedit.parse(text, path)
    env = value.get("env")
    current = env.get("ANTHROPIC_BASE_URL") if isinstance(env, dict) else None
    url = proxy_url(port)
    ours_before = isinstance(current, str) and _LOOPBACK.fullmatch(current) and _has_hook(value)
    if current not in (None, url) and not ours_before:
        raise InputError(
            f"env.ANTHROPIC_BASE_URL is already {current!r}; remove it to route Claude Code "
            "through the ipse proxy",
            path=path,
        )
    if current != url:
        text, created = jsonedit.set_member(text, ["env"], "ANTHROPIC_BASE_URL", url)
        if current is None:
            attrs["base_url"] = "new"
        if "env" in created:
            attrs["env"] = "new"
    if not isinstance(env, dict) or _WAIT not in env:
        # Claude Code sends its first request before a slow MCP server is connected (the
        # tools, or the deferred list, then change mid-session and the prefix cache breaks
        # there): it waits for them when this is false. A value the user set stays.
        text, created = jsonedit.set_member(text, ["env"], _WAIT, "false")
        attrs["wait"] = "new"
        if "env" in created:
            attrs["env"] = "new"
    for event, name in _HOOK_EVENTS.items():
        hook = _hooks(port, upstreams, record)[event]
        value, _ = jsonedit.parse(text, path)
        hooks = value.get("hooks")
        groups = hooks.get(event) if isinstance(hooks, dict) else None
        groups = groups if isinstance(groups, list) else []
        for stale in [g for g in groups if _is_proxy_hook(g) and g != hook]:
            text = jsonedit.remove_items(text, ["hooks", event], stale)
        if hook not in groups:
            text, created = jsonedit.append_item(text, ["hooks", event], hook)
            if "hooks" in created:
                attrs["hooks"] = "new"
            if f"hooks.{event}" in created:
                attrs[name] = "new"
    return path, old, text


def _routed(path: Path) -> bool:
    """Whether Claude Code's settings already route it through ipse's proxy (its hooks)."""
    text = _read(path)
    value = _value(text, False) if text else None
    return isinstance(value, dict) and _has_hook(value)


def _has_hook(settings: dict[str, Any]) -> bool:
    hooks = settings.get("hooks")
    return isinstance(hooks, dict) and any(
        isinstance(hooks.get(event), list) and any(_is_proxy_hook(g) for g in hooks[event])
        for event in _HOOK_EVENTS
    )


# ------------------------------------------------------------------------------------ notes


def install_notes(
    agent: str,
    root: Path,
    *,
    user: bool = False,
    proxy: bool = False,
    port: int = DEFAULT_PORT,
    upstreams: Mapping[str, str] | None = None,
    record: str | None = None,
) -> list[str]:
    """What the user must know or do after this install, one line each."""
    notes: list[str] = []
    if agent == "codex" and proxy:
        notes.append(
            f"Codex now reaches its model only through the ipse proxy at {proxy_url(port)}: "
            f"start it with `{_start_command(port, upstreams, record)}` before running codex "
            '(again after a reboot); without it Codex waits "Reconnecting..." until stopped'
        )
        unset = "" if os.environ.get("OPENAI_API_KEY") else " (not set in this shell)"
        notes.append(
            "the provider entry sends the key in OPENAI_API_KEY (env_key), which the proxy "
            f"forwards to the OpenAI API: set it to your key{unset}"
        )
    elif agent == "claude-code" and proxy:
        notes.append(
            f"Claude Code now goes through the ipse proxy at {proxy_url(port)}; its hooks start "
            "it, and a prompt is refused with the reason when it cannot start"
        )
    elif agent == "gemini":
        notes.append(
            "no ipse proxy serves Gemini's API: a checkpoint keeps notes for recall, it does "
            "not shrink the conversation"
        )
        if user:
            notes.append(
                "Gemini CLI runs MCP servers, user-level ones too, only in trusted folders: "
                "trust each project folder when gemini asks (or with /permissions)"
            )
        elif not _gemini_trusts(root):
            notes.append(
                f"Gemini CLI runs MCP servers only in a trusted folder: trust "
                f"{root.resolve()} when gemini asks (or with /permissions)"
            )
    else:
        notes.append(
            "without --proxy, a checkpoint keeps notes for recall; nothing is removed from the "
            "conversation"
        )
    return notes


def _gemini_trusts(root: Path) -> bool:
    """Whether Gemini CLI's trusted folders trust ``root``, by its rule: the longest rule whose
    folder (a TRUST_PARENT rule's parent) holds ``root`` decides."""
    env = os.environ.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
    path = Path(env) if env else gemini_dir() / "trustedFolders.json"
    text = _read(path) if path.is_file() else None
    rules = _value(text, True) if text else None
    if not isinstance(rules, dict):
        return False
    folder = root.resolve()
    decided, length = None, -1
    for name, level in rules.items():
        where = Path(name).expanduser().resolve()
        where = where.parent if level == "TRUST_PARENT" else where
        if (folder == where or where in folder.parents) and len(name) > length:
            decided, length = level, len(name)
    return decided in ("TRUST_FOLDER", "TRUST_PARENT")


# -------------------------------------------------------------------------------- uninstall


def uninstall_agent(agent: str, root: Path, *, user: bool = False) -> list[Change]:
    """Remove what `install_agent` added for ``agent`` (with or without the proxy): exactly
    what the markers record, and ipse's entries found by content where the markers are gone."""
    where = paths(agent, root, user)
    comments = agent == "gemini"
    old_doc = _read(where.instructions)
    found = find_block(old_doc, BLOCK) if old_doc is not None else None
    attrs = found[2] if found else {}
    changes: list[Change] = []
    old_config = _read(where.config)
    if old_config is not None and (agent == "codex" or not _blank(old_config)):
        if agent == "codex":
            new, _ = _strip_codex(old_config, where.config)
            gone = attrs.get("config") == "new" and new == ""
        else:
            jsonedit.parse(old_config, where.config, comments=comments)
            created = ["mcpServers"] if attrs.get("servers") == "new" or not found else []
            ours = _is_ipse_server(_server_of(old_config, comments))
            new = (
                jsonedit.remove_member(
                    old_config, ["mcpServers"], SERVER, created, comments=comments
                )
                if ours
                else old_config
            )
            gone = attrs.get("config") == "new" and _is_empty_object(new, comments)
            new = _blank_again(new, attrs.get("config") == "blank")
        if new != old_config:
            changes.append(_write(where.config, old_config, None if gone else new))
    if where.settings is not None:
        changes.extend(_uninstall_claude_proxy(where.settings, attrs))
    if old_doc is not None and found is not None:
        new_doc, _ = remove_block(old_doc, BLOCK)
        changes.append(_write(where.instructions, old_doc, new_doc))
    folders = [(where.config.parent, "dir"), (where.instructions.parent, "docs_dir")]
    if where.settings is not None:
        folders.append((where.settings.parent, "settings_dir"))
    for folder, name in folders:
        _remove_dir_if_empty(folder, attrs.get(name) == "new")
    return changes


def _remove_dir_if_empty(folder: Path, allowed: bool) -> None:
    if allowed and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()


def _uninstall_claude_proxy(path: Path, attrs: dict[str, str]) -> list[Change]:
    old = _read(path)
    if old is None or _blank(old):  # nothing of ipse's in it
        return []
    value, _ = jsonedit.parse(old, path)
    text = old
    env = value.get("env")
    base = env.get("ANTHROPIC_BASE_URL") if isinstance(env, dict) else None
    if attrs:  # the marker says whether install set the base URL, and to which port
        url = proxy_url(int(attrs.get("port", DEFAULT_PORT)))
        ours = attrs.get("base_url") == "new" and base == url
    else:  # no marker left: ours by its value, next to ipse's hook (or the default address)
        ours = isinstance(base, str) and (
            base == PROXY_URL or (_LOOPBACK.fullmatch(base) is not None and _has_hook(value))
        )
    created = ["env"] if attrs.get("env") == "new" else []
    wait = env.get(_WAIT) if isinstance(env, dict) else None
    if wait == "false" and (attrs.get("wait") == "new" if attrs else ours):
        text = jsonedit.remove_member(text, ["env"], _WAIT, created if not ours else [])
    if ours:
        text = jsonedit.remove_member(text, ["env"], "ANTHROPIC_BASE_URL", created)
    hooks = value.get("hooks")
    for event in _HOOK_EVENTS:
        groups = hooks.get(event) if isinstance(hooks, dict) else None
        for group in [g for g in groups if _is_proxy_hook(g)] if isinstance(groups, list) else []:
            text = jsonedit.remove_items(text, ["hooks", event], group)
    created = [k for k, name in _ATTR_OF.items() if attrs.get(name) == "new"]
    for event in _HOOK_EVENTS:
        text = jsonedit.prune(text, ["hooks", event], created)
    text = _blank_again(text, attrs.get("settings") == "blank")
    if text == old:
        return []
    gone = attrs.get("settings") == "new" and _is_empty_object(text)
    return [_write(path, old, None if gone else text)]


_ATTR_OF = {"hooks": "hooks", **{f"hooks.{e}": name for e, name in _HOOK_EVENTS.items()}}


__all__ = [
    "AGENTS",
    "DEFAULT_PORT",
    "NOTES_ONLY",
    "PROXY_URL",
    "Change",
    "Paths",
    "claude_user_config",
    "codex_home",
    "gemini_dir",
    "hook_program",
    "install_agent",
    "install_notes",
    "launcher",
    "paths",
    "program",
    "prompt_hook",
    "proxy_hook",
    "proxy_url",
    "server_entry",
    "uninstall_agent",
]
