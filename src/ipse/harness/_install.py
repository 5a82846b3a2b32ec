"""``ipse install`` / ``uninstall``: register ipse's MCP server (and, with ``proxy``, the proxy)
with Claude Code, Codex or Gemini CLI, and put the narration section in the agent's
instructions file.

What each agent gets (project scope by default, the user's own files with ``user``):

- claude-code: ``mcpServers.ipse`` in ``.mcp.json`` (user: ``~/.claude.json``); instructions in
  ``CLAUDE.md`` (user: ``~/.claude/CLAUDE.md``); with ``proxy``, ``env.ANTHROPIC_BASE_URL`` and a
  SessionStart hook running ``ipse proxy start`` in ``.claude/settings.json`` (user:
  ``~/.claude/settings.json``).
- codex: ``[mcp_servers.ipse]`` in ``$CODEX_HOME/config.toml`` (``~/.codex``); instructions in
  ``AGENTS.md`` (user: ``$CODEX_HOME/AGENTS.md``); with ``proxy``, ``[model_providers.ipse]``
  (Responses API at the proxy's ``/v1``) selected by ``model_provider``.
- gemini: ``mcpServers.ipse`` in ``.gemini/settings.json`` (user: ``~/.gemini/settings.json``);
  instructions in ``GEMINI.md`` (user: ``~/.gemini/GEMINI.md``).

The server command names this ipse by absolute path (the ``ipse`` script beside the running
interpreter, else the interpreter with ``-m ipse``), so it works when the user's virtual
environment is not active; the hook, which a shell runs, is shell-quoted. Every edit preserves
the file's formatting, and the instructions block's begin marker records what install created
(files, folders, containers), so uninstall removes exactly what install added: a file edited by
nothing else comes back byte for byte. A setting ipse would have to overwrite (another
``ANTHROPIC_BASE_URL``, another ``model_provider``) is refused, never replaced.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipse.errors import InputError, UsageError
from ipse.fileio import atomic_write
from ipse.harness import jsonedit, tomledit
from ipse.harness._blocks import add_block, find_block, remove_block
from ipse.harness._sessions import claude_config_dir

AGENTS = ("claude-code", "codex", "gemini")
PROXY_URL = "http://127.0.0.1:8765"
BLOCK = "mcp"
SERVER = "ipse"
_PROVIDER_LINE = 'model_provider = "ipse"'
_HOOK_TIMEOUT = 30


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


def codex_home() -> Path:
    """Codex's folder: ``CODEX_HOME``, else ``~/.codex``."""
    env = os.environ.get("CODEX_HOME")
    return Path(env).expanduser() if env else Path.home() / ".codex"


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
            return Paths(Path.home() / ".claude.json", home / "CLAUDE.md", home / "settings.json")
        return Paths(root / ".mcp.json", root / "CLAUDE.md", root / ".claude" / "settings.json")
    if agent == "codex":
        home = codex_home()
        return Paths(home / "config.toml", (home if user else root) / "AGENTS.md", None)
    if agent == "gemini":
        folder = (Path.home() if user else root) / ".gemini"
        return Paths(folder / "settings.json", (folder if user else root) / "GEMINI.md", None)
    raise UsageError(f"unknown agent {agent!r} (choose from {', '.join(AGENTS)})")


def server_entry(agent: str) -> dict[str, Any]:
    """The MCP server entry an agent's config gets (no shell runs it: plain argv)."""
    command, args = launcher()
    entry: dict[str, Any] = {"command": command, "args": [*args, "mcp"]}
    if agent == "claude-code":
        return {"type": "stdio", **entry, "env": {}}
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


def _server_of(text: str) -> Any:
    """The ``mcpServers.ipse`` entry in a JSON config's text, or None."""
    try:
        document = json.loads(text) if text.strip() else {}
    except (ValueError, RecursionError):
        return None
    servers = document.get("mcpServers") if isinstance(document, dict) else None
    return servers.get(SERVER) if isinstance(servers, dict) else None


def proxy_hook() -> dict[str, Any]:
    """The SessionStart hook group that starts the proxy (idempotent: exits 0 when running)."""
    command = f"{program()} proxy start"
    return {"hooks": [{"type": "command", "command": command, "timeout": _HOOK_TIMEOUT}]}


def _is_proxy_hook(group: Any) -> bool:
    """A proxy hook group any ipse install wrote (any executable path)."""
    if not isinstance(group, dict) or set(group) != {"hooks"}:
        return False
    hooks = group["hooks"]
    return bool(
        isinstance(hooks, list)
        and len(hooks) == 1
        and isinstance(hooks[0], dict)
        and hooks[0].get("type") == "command"
        and str(hooks[0].get("command", "")).endswith(" proxy start")
        and hooks[0].get("timeout") == _HOOK_TIMEOUT
    )


def _codex_tables(proxy: bool) -> str:
    import json

    command, args = launcher()
    # a JSON string is a TOML basic string (the same escapes)
    lines = [
        f"[mcp_servers.{SERVER}]",
        f"command = {json.dumps(command, ensure_ascii=False)}",
        f"args = {json.dumps([*args, 'mcp'], ensure_ascii=False)}",
    ]
    if proxy:
        lines += [
            "",
            f"[model_providers.{SERVER}]",
            'name = "ipse proxy"',
            f'base_url = "{PROXY_URL}/v1"',
            'env_key = "OPENAI_API_KEY"',
            'wire_api = "responses"',
            "supports_websockets = false",
        ]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------ file access


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", path=path) from exc


def _write(path: Path, old: str | None, new: str | None) -> Change:
    if new == old:
        return Change(str(path), "unchanged")
    if new is None:
        path.unlink()
        return Change(str(path), "removed")
    try:
        mode = path.stat().st_mode & 0o777
    except OSError:
        mode = 0o644
    atomic_write(path, new, mode=mode)
    return Change(str(path), "created" if old is None else "updated")


def _json_text(path: Path, text: str | None) -> str:
    """The config to edit: a missing file is an empty object; a blank one keeps its blank
    text before the object, so that uninstall can give it back (`_blank_again`)."""
    if text is None:
        return "{}\n"
    if not text.strip():
        return text + "{}\n"
    jsonedit.parse(text, path)
    return text


def _blank(text: str | None) -> bool:
    return text is not None and not text.strip()


def _blank_again(text: str, was_blank: bool) -> str:
    """After uninstall: the blank text a file held before install, when it held one and ipse
    left an empty object behind."""
    if was_blank and _is_empty_object(text):
        return text[: len(text) - len(text.lstrip())]
    return text


def _is_empty_object(text: str) -> bool:
    import json

    try:
        return bool(json.loads(text) == {})
    except (ValueError, RecursionError):
        return False


# ---------------------------------------------------------------------------------- install


def install_agent(
    agent: str, root: Path, *, user: bool = False, proxy: bool = False
) -> list[Change]:
    """Register ipse's MCP server with ``agent`` (and the proxy with ``proxy``); idempotent."""
    where = paths(agent, root, user)
    attrs: dict[str, str] = {}
    writes: list[tuple[Path, str | None, str]] = []
    old_config = _read(where.config)
    if old_config is None:
        attrs["config"] = "new"
        if not where.config.parent.exists():
            attrs["dir"] = "new"
    elif _blank(old_config) and agent != "codex":
        attrs["config"] = "blank"
    if agent == "codex":
        writes.append((where.config, old_config, _codex_config(where.config, old_config, proxy)))
    else:
        text = _json_text(where.config, old_config)
        theirs = _server_of(text)
        if theirs is not None and not _is_ipse_server(theirs):
            raise InputError(
                f"already has mcpServers.{SERVER} (not ipse's own); remove or rename it",
                path=where.config,
            )
        new, created = jsonedit.set_member(text, ["mcpServers"], SERVER, server_entry(agent))
        if "mcpServers" in created:
            attrs["servers"] = "new"
        writes.append((where.config, old_config, new))
    if proxy:
        attrs["proxy"] = "1"
        if agent == "claude-code":
            assert where.settings is not None
            writes.append(_claude_proxy(where.settings, attrs))
        elif agent == "gemini":
            raise UsageError("--proxy: Gemini CLI is not served by the ipse proxy")
    from ipse.handoff import narration_prompt

    old_doc = _read(where.instructions)
    if old_doc is None and not where.instructions.parent.exists():
        attrs["docs_dir"] = "new"
    new_doc = add_block(old_doc, narration_prompt().rstrip("\n") + "\n", BLOCK, attrs)
    writes.append((where.instructions, old_doc, new_doc))
    changes = []
    for path, old, new in writes:
        if new != old:
            path.parent.mkdir(parents=True, exist_ok=True)
        changes.append(_write(path, old, new))
    return changes


def _codex_config(path: Path, old: str | None, proxy: bool) -> str:
    text = old or ""
    base = tomledit.remove_top_key(tomledit.remove_toml_block(text), _PROVIDER_LINE)
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
    keep_provider = not proxy and tomledit.remove_top_key(text, _PROVIDER_LINE) != text
    proxied = proxy or keep_provider
    new = tomledit.add_toml_block(
        tomledit.remove_top_key(text, _PROVIDER_LINE), _codex_tables(proxied)
    )
    if proxied:
        new = tomledit.add_top_key(new, _PROVIDER_LINE)
    tomledit.parse_toml(new, path)  # what ipse writes must parse
    return new


def _claude_proxy(path: Path, attrs: dict[str, str]) -> tuple[Path, str | None, str]:
    old = _read(path)
    if old is None:
        attrs["settings"] = "new"
        if not path.parent.exists():
            attrs["settings_dir"] = "new"
    elif _blank(old):
        attrs["settings"] = "blank"
    text = _json_text(path, old)
    value, _ = jsonedit.parse(text, path)
    env = value.get("env")
    current = env.get("ANTHROPIC_BASE_URL") if isinstance(env, dict) else None
    if current not in (None, PROXY_URL):
        raise InputError(
            f"env.ANTHROPIC_BASE_URL is already {current!r}; remove it to route Claude Code "
            "through the ipse proxy",
            path=path,
        )
    if current is None:
        text, created = jsonedit.set_member(text, ["env"], "ANTHROPIC_BASE_URL", PROXY_URL)
        attrs["base_url"] = "new"
        if "env" in created:
            attrs["env"] = "new"
    value, _ = jsonedit.parse(text, path)
    hooks = value.get("hooks")
    starts = hooks.get("SessionStart") if isinstance(hooks, dict) else None
    if not (isinstance(starts, list) and proxy_hook() in starts):
        text, created = jsonedit.append_item(text, ["hooks", "SessionStart"], proxy_hook())
        if "hooks" in created:
            attrs["hooks"] = "new"
        if "hooks.SessionStart" in created:
            attrs["session_start"] = "new"
    return path, old, text


# -------------------------------------------------------------------------------- uninstall


def uninstall_agent(agent: str, root: Path, *, user: bool = False) -> list[Change]:
    """Remove exactly what `install_agent` added for ``agent``."""
    where = paths(agent, root, user)
    old_doc = _read(where.instructions)
    found = find_block(old_doc, BLOCK) if old_doc is not None else None
    attrs = found[2] if found else {}
    changes: list[Change] = []
    old_config = _read(where.config)
    if old_config is not None and (agent == "codex" or not _blank(old_config)):
        if agent == "codex":
            new = tomledit.remove_top_key(tomledit.remove_toml_block(old_config), _PROVIDER_LINE)
            gone = attrs.get("config") == "new" and new == ""
        else:
            jsonedit.parse(old_config, where.config)
            created = ["mcpServers"] if attrs.get("servers") == "new" or not found else []
            ours = _is_ipse_server(_server_of(old_config))
            new = (
                jsonedit.remove_member(old_config, ["mcpServers"], SERVER, created)
                if ours
                else old_config
            )
            gone = attrs.get("config") == "new" and _is_empty_object(new)
            new = _blank_again(new, attrs.get("config") == "blank")
        if new != old_config:
            changes.append(_write(where.config, old_config, None if gone else new))
    if where.settings is not None and (attrs.get("proxy") == "1" or not found):
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
    ours = attrs.get("base_url") == "new" or not attrs  # no marker left: ours by its value
    if ours and isinstance(env, dict) and env.get("ANTHROPIC_BASE_URL") == PROXY_URL:
        created = ["env"] if attrs.get("env") == "new" else []
        text = jsonedit.remove_member(text, ["env"], "ANTHROPIC_BASE_URL", created)
    hooks = value.get("hooks")
    starts = hooks.get("SessionStart") if isinstance(hooks, dict) else None
    for group in [g for g in starts if _is_proxy_hook(g)] if isinstance(starts, list) else []:
        text = jsonedit.remove_items(text, ["hooks", "SessionStart"], group)
    created = [k for k, name in _ATTR_OF.items() if attrs.get(name) == "new"]
    text = jsonedit.prune(text, ["hooks", "SessionStart"], created)
    text = _blank_again(text, attrs.get("settings") == "blank")
    if text == old:
        return []
    gone = attrs.get("settings") == "new" and _is_empty_object(text)
    return [_write(path, old, None if gone else text)]


_ATTR_OF = {"hooks": "hooks", "hooks.SessionStart": "session_start"}


__all__ = [
    "AGENTS",
    "PROXY_URL",
    "Change",
    "Paths",
    "codex_home",
    "install_agent",
    "launcher",
    "paths",
    "program",
    "proxy_hook",
    "server_entry",
    "uninstall_agent",
]
