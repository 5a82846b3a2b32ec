"""Codex: its config, its MCP entry and model provider, its sessions, its compaction.

- MCP server: ``[mcp_servers.ipse]`` in ``$CODEX_HOME/config.toml`` (``~/.codex``; kept 0600),
  between ipse's marker lines (`ipse.agents._tomledit`). It says ``required = true`` (``codex
  exec`` waits for its tools, and refuses to start, in one line, when the server cannot),
  ``default_tools_approval_mode = "approve"`` for ipse's own tools (``codex exec`` asks no
  questions, so a call that needs approval fails there), passes ``CODEX_HOME`` through
  (``env_vars``: where the server finds the thread's rollout) and carries ``PYTHONPATH`` when
  install ran with one (Codex gives a server none of its own).
- Instructions: ``AGENTS.md`` (user: ``$CODEX_HOME/AGENTS.md``).
- Proxy (``--proxy``): ``[model_providers.ipse]`` (Responses API at the proxy's ``/v1``, the
  key from ``OPENAI_API_KEY``) selected by a top-level ``model_provider = "ipse"``. Codex's own
  hooks run only after the user reviews and trusts them, and without a proxy Codex waits
  "Reconnecting" forever, so the notes give the command that starts the proxy. Another
  ``model_provider`` is refused.
- Sessions: ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl``.
- Compaction: ``model_auto_compact_token_limit`` (see `COMPACTION`).

``codex mcp add`` re-renders the file and drops comments, ipse's markers with them: ipse's
tables and key are then found by their content and removed all the same.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ipse.agents import _tomledit as tomledit
from ipse.agents._agent import AgentCLI, Compaction, Installed, Paths, Request
from ipse.agents._commands import (
    LOOPBACK,
    SERVER,
    home_env,
    is_ipse_server,
    loopback_port,
    proxy_url,
    server_argv,
    start_command,
)
from ipse.agents._files import Edit, read
from ipse.errors import InputError

_PROVIDER_LINE = 'model_provider = "ipse"'
_PROVIDER_NAME = "ipse proxy"
_PROVIDER_KEY = re.compile(
    r'(?m)^[ \t]*model_provider[ \t]*=[ \t]*"ipse"[ \t]*(?:#.*?)?(?:\r?\n|$)'
)


def codex_home() -> Path:
    """Codex's folder: ``CODEX_HOME``, else ``~/.codex``."""
    env = os.environ.get("CODEX_HOME")
    return Path(env).expanduser() if env else Path.home() / ".codex"


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string


def _tables(proxy: bool, port: int) -> str:
    command, args = server_argv()
    lines = [
        f"[mcp_servers.{SERVER}]",
        f"command = {_toml_string(command)}",
        f"args = {json.dumps(args, ensure_ascii=False)}",
        'default_tools_approval_mode = "approve"',
        'env_vars = ["CODEX_HOME"]',
    ]
    env = home_env()
    if os.environ.get("PYTHONPATH"):  # the ipse that ran install (a checkout's src) runs
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
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


def _is_ipse_provider(entry: Any) -> bool:
    """A ``[model_providers.ipse]`` table some ipse install wrote (any port)."""
    if not isinstance(entry, dict) or entry.get("name") != _PROVIDER_NAME:
        return False
    url = entry.get("base_url")
    return isinstance(url, str) and re.fullmatch(LOOPBACK.pattern + "/v1", url) is not None


def _ours(doc: dict[str, Any]) -> set[tuple[str, ...]]:
    """The tables of ipse's found in a parsed config by their content."""
    names: set[tuple[str, ...]] = set()
    servers, providers = doc.get("mcp_servers"), doc.get("model_providers")
    if isinstance(servers, dict) and is_ipse_server(servers.get(SERVER)):
        names.add(("mcp_servers", SERVER))
    if isinstance(providers, dict) and _is_ipse_provider(providers.get(SERVER)):
        names.add(("model_providers", SERVER))
    return names


def _remove_provider_key(text: str) -> str:
    """``text`` without a top-level ``model_provider = "ipse"`` line (whatever its comment)."""
    match = re.search(r"(?m)^[ \t]*\[", text)
    found = _PROVIDER_KEY.search(text, 0, match.start() if match else len(text))
    return text if found is None else text[: found.start()] + text[found.end() :]


def strip(text: str, path: Path) -> tuple[str, bool]:
    """The config without what any ipse install wrote: the marked block and key, then (when
    Codex rewrote the file and dropped the markers) ipse's tables and key found by content.
    Also whether ipse's model provider was there."""
    unmarked = tomledit.remove_toml_block(text)
    base = tomledit.remove_top_key(unmarked, _PROVIDER_LINE)
    doc = tomledit.parse_toml(base, path)
    names = _ours(doc)
    proxied = base != unmarked or ("model_providers", SERVER) in names
    stripped = tomledit.remove_tables(base, names)
    if proxied and doc.get("model_provider") == SERVER:
        stripped = _remove_provider_key(stripped)
    if stripped != base and not base.startswith(("\n", "\r\n")):
        stripped = stripped.lstrip("\r\n")  # found by content: no blank lines where ipse's led
    if _ours(tomledit.parse_toml(stripped, path)):
        # written in a form no table header shows (inline, dotted keys): never claim success
        raise InputError(
            "holds ipse's entries in a form ipse cannot edit (an inline or dotted table); "
            "remove [mcp_servers.ipse] and [model_providers.ipse] by hand",
            path=path,
        )
    return stripped, proxied


def _provider_port(doc: dict[str, Any]) -> int | None:
    """The port of ipse's model provider in a parsed config, None without one."""
    providers = doc.get("model_providers")
    provider = providers.get(SERVER) if isinstance(providers, dict) else None
    if not isinstance(provider, dict) or not _is_ipse_provider(provider):
        return None
    return loopback_port(provider["base_url"])


def _refuse_conflicts(doc: dict[str, Any], proxy: bool, path: Path) -> None:
    servers = doc.get("mcp_servers")
    if isinstance(servers, dict) and SERVER in servers:
        raise InputError("already has [mcp_servers.ipse] (not ipse's own); remove it", path=path)
    if not proxy:
        return
    if "model_provider" in doc:
        raise InputError(
            f"already selects model_provider = {doc['model_provider']!r}; remove it to "
            "route Codex through the ipse proxy",
            path=path,
        )
    providers = doc.get("model_providers")
    if isinstance(providers, dict) and SERVER in providers:
        raise InputError("already has [model_providers.ipse]; remove it", path=path)


def _config(path: Path, old: str | None, request: Request) -> tuple[str, int | None]:
    """The new config and the proxy port it routes through (an earlier --proxy stays)."""
    text = old or ""
    base, was_proxied = strip(text, path)
    port: int | None = request.port if request.proxy else None
    if not request.proxy and was_proxied:  # installed again without --proxy: the proxy stays
        port = _provider_port(tomledit.parse_toml(text, path)) or request.port
    _refuse_conflicts(tomledit.parse_toml(base, path), request.proxy, path)
    new = tomledit.add_toml_block(base, _tables(port is not None, port or request.port))
    if port is not None:
        new = tomledit.add_top_key(new, _PROVIDER_LINE)
    tomledit.parse_toml(new, path)  # what ipse writes must parse
    return new, port


def compaction_threshold(window: int, values: Mapping[str, str], max_output: int = 0) -> int | None:
    """``model_auto_compact_token_limit`` when set (a token count), else None: the default
    comes from Codex's model catalog."""
    limit = values.get("model_auto_compact_token_limit", "")
    return int(limit) if limit.isdigit() else None


COMPACTION = Compaction(
    settings=("model_auto_compact_token_limit",),
    rule=(
        "compacts when the conversation's tokens reach model_auto_compact_token_limit "
        "(config.toml, top level); unset, the limit comes from its model catalog"
    ),
    verified=(
        "the key is read from Codex 0.169.0's own config schema (its binary); where the "
        "default limit falls for each model was not measured"
    ),
    threshold=compaction_threshold,
)


class Codex(AgentCLI):
    name = "codex"
    label = "Codex"
    instructions = "AGENTS.md"
    proxy = True
    private = frozenset({"config.toml"})
    session_format = "codex"
    session_globs = ("**/rollout-*.jsonl",)
    compaction = COMPACTION

    def paths(self, root: Path, user: bool) -> Paths:
        home = codex_home()
        return Paths(home / "config.toml", (home if user else root) / "AGENTS.md", None)

    def server_entry(self) -> dict[str, Any]:
        command, args = server_argv()
        return {"command": command, "args": args}

    def install(self, where: Paths, request: Request, attrs: dict[str, str]) -> Installed:
        old = read(where.config)
        if old is None:
            attrs["config"] = "new"
            if not where.config.parent.exists():
                attrs["dir"] = "new"
        new, port = _config(where.config, old, request)
        return Installed([Edit(where.config, old, new)], port)

    def uninstall(self, where: Paths, attrs: dict[str, str], marked: bool) -> list[Edit]:
        old = read(where.config)
        if old is None:
            return []
        new, _ = strip(old, where.config)
        gone = attrs.get("config") == "new" and new == ""
        return [Edit(where.config, old, None if gone else new)]

    def proxy_port(self, where: Paths) -> int | None:
        text = read(where.config)
        if text is None:
            return None
        try:
            doc = tomledit.parse_toml(text, where.config)
        except InputError:
            return None
        return _provider_port(doc) if doc.get("model_provider") == SERVER else None

    def notes(self, request: Request, port: int | None) -> list[str]:
        if port is None:
            return [
                "without --proxy, a checkpoint keeps notes for recall; nothing is removed from "
                "the conversation"
            ]
        if request.proxy:
            start = f"start it with `{start_command(port, request.upstreams, request.record)}`"
        else:  # the upstreams and record of that install are not recorded
            start = (
                f"start it with `{start_command(port)}` (and the --openai-upstream and --record "
                "that install was given, if any: its note gave the whole line)"
            )
        kept = "" if request.proxy else " (installed earlier with --proxy, which stays)"
        unset = "" if os.environ.get("OPENAI_API_KEY") else " (not set in this shell)"
        return [
            f"Codex now reaches its model only through the ipse proxy at {proxy_url(port)}"
            f"{kept}: {start} before running codex (again after a reboot); without it Codex "
            'waits "Reconnecting..." until stopped',
            "the provider entry sends the key in OPENAI_API_KEY (env_key), which the proxy "
            f"forwards to the OpenAI API: set it to your key{unset}",
        ]

    def session_folder(self, cwd: Path) -> Path | None:
        return codex_home() / "sessions"

    def sessions_root(self) -> Path | None:
        return codex_home() / "sessions"

    def session_file(self, session: str, cwd: Path) -> Path | None:
        from ipse.transcript._shared import codex_session_file

        return codex_session_file(session)

    def compaction_values(self, where: Paths) -> dict[str, str]:
        text = read(where.config)
        try:
            doc = tomledit.parse_toml(text or "", where.config)
        except InputError:
            return {}
        limit = doc.get("model_auto_compact_token_limit")
        ok = isinstance(limit, int) and not isinstance(limit, bool)
        return {"model_auto_compact_token_limit": str(limit)} if ok else {}


AGENT = Codex()

# What the table (`ipse.agents._table`) reads; the rest serves it and its tests.
__all__ = ["AGENT"]
