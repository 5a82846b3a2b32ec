"""``install`` / ``uninstall``: the startup rule in agent instruction files, and Claude Code hooks.

The rule goes into AGENTS.md, CLAUDE.md or GEMINI.md as one marked block, appended at the end;
installing again replaces only the block, and the rest of the file is never touched. The begin
marker records what install added around the block (``lead=N`` newlines before it, or
``lead=new`` when install created the file; for Claude Code also whether it created
``.claude/settings.json`` and ``.claude/``), so ``uninstall`` removes exactly that.

For Claude Code, hook groups are added to ``.claude/settings.json`` keeping everything there
byte for byte (`ipse.agents._jsonedit`: formatting, key order, trailing newline and CRLF line
endings stay):
SessionStart (startup, resume, compact) runs ``ipse state resume --hook claude-code``;
PreCompact logs a WAL checkpoint. The marker records which containers install created
(``hooks=new``, ``session_start=new``, ``pre_compact=new``), so uninstall removes exactly the
groups and those containers. The file edits are atomic.

A hook command is run by a shell when the agent starts, often without ipse's virtual
environment active: it names the ipse executable by absolute path (`program`), and every
word in it is quoted for the POSIX shell (``shlex.quote``), so a state folder named
``st$(sh<p)`` is a folder name, never a command; ``IPSE_HOME``, when set at install, leads the
command, so the hooks sign and verify with the same home as the commands run by hand.
Uninstall and reinstall recognise hooks written for another executable path (a moved
environment, a bare ``ipse``, another home).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from ipse.agents import AGENTS
from ipse.agents._shared import (
    Change,
    hook_program,
    hooks_file,
    instructions_file,
    jsonedit,
    program,
)
from ipse.agents._shared import add_block as _add_block
from ipse.agents._shared import find_block as _find_block
from ipse.agents._shared import remove_block as _remove_block
from ipse.errors import InputError, UsageError
from ipse.fileio import StrPath, atomic_write

GENERIC = "generic"  # an agent CLI not in the table: the rule goes into AGENTS.md
AGENT_FILES = {**{name: instructions_file(name) for name in AGENTS}, GENERIC: "AGENTS.md"}
BLOCK = "state"
END = "<!-- ipse:state:end -->"
# the containers install may create, and the marker attribute that records it
_CONTAINERS = {
    "hooks": "hooks",
    "hooks.SessionStart": "session_start",
    "hooks.PreCompact": "pre_compact",
}


def rule_block(state_dir: str) -> str:
    """The body of the marked block (without markers)."""
    return (
        f"## State directory ({state_dir}/)\n\n"
        f"If {state_dir}/ exists, read 00 through 99 in order before doing anything else; "
        "after any context compaction, re-read them before continuing.\n"
        "Record decisions and rejected approaches with `ipse state invariant TEXT --reason "
        "TEXT`, and the next step with `ipse state next TEXT`.\n"
    )


def find_block(text: str) -> tuple[int, int, dict[str, str]] | None:
    """(start, end, marker attributes) of the marked block, end past its newline."""
    return _find_block(text, BLOCK)


def add_block(text: str | None, body: str, extra: dict[str, str] | None = None) -> str:
    """The file's text with the block added or replaced; nothing else changes."""
    return _add_block(text, body, BLOCK, extra)


def remove_block(text: str) -> tuple[str | None, dict[str, str]]:
    """The text without the block and what install added before it (None: delete the file)."""
    return _remove_block(text, BLOCK)


_RESUME = " state resume --hook claude-code"
_CHECKPOINT = " state checkpoint --hook claude-code"
_REASON = " 'context compaction'"


def hook_groups(state_arg: str, ipse: str = "ipse") -> dict[str, list[dict[str, Any]]]:
    """The hook groups install merges into Claude Code's settings; ``ipse`` is the (already
    quoted) command that runs ipse, ``state_arg`` the quoted ``--dir`` option or empty."""
    resume = f"{ipse}{_RESUME}{state_arg}"
    checkpoint = f"{ipse}{_CHECKPOINT}{state_arg}{_REASON}"
    return {
        "SessionStart": [
            {"matcher": source, "hooks": [{"type": "command", "command": resume, "timeout": 60}]}
            for source in ("startup", "resume", "compact")
        ],
        "PreCompact": [
            {"matcher": "", "hooks": [{"type": "command", "command": checkpoint, "timeout": 60}]}
        ],
    }


def _copy(settings: dict[str, Any]) -> dict[str, Any]:
    copied: dict[str, Any] = json.loads(json.dumps(settings))
    return copied


def merge_hooks(
    settings: dict[str, Any], groups: dict[str, list[dict[str, Any]]]
) -> dict[str, Any]:
    """``settings`` with the groups added where absent, everything else kept."""
    merged = _copy(settings)
    hooks = merged.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InputError("`hooks` in .claude/settings.json is not an object")
    for event, wanted in groups.items():
        present = hooks.setdefault(event, [])
        if not isinstance(present, list):
            raise InputError(f"`hooks.{event}` in .claude/settings.json is not a list")
        for group in wanted:
            if group not in present:
                present.append(group)
    return merged


def unmerge_hooks(
    settings: dict[str, Any], groups: dict[str, list[dict[str, Any]]]
) -> dict[str, Any]:
    """``settings`` without those groups; an event or ``hooks`` left empty goes too."""
    out = _copy(settings)
    hooks = out.get("hooks")
    if not isinstance(hooks, dict):
        return out
    for event, ours in groups.items():
        present = hooks.get(event)
        if not isinstance(present, list):
            continue
        kept = [g for g in present if g not in ours]
        if kept:
            hooks[event] = kept
        elif present:
            del hooks[event]
    if not hooks:
        del out["hooks"]
    return out


def _read(path: Path) -> str | None:
    """The file's text as stored: line endings untranslated, so a CRLF file stays CRLF."""
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", path=path) from exc


def _settings_value(path: Path, text: str) -> dict[str, Any]:
    value, _ = jsonedit.parse(text, path)
    hooks = value.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise InputError("`hooks` is not an object", path=path)
    for event in ("SessionStart", "PreCompact"):
        if isinstance(hooks, dict) and not isinstance(hooks.get(event, []), list):
            raise InputError(f"`hooks.{event}` is not a list", path=path)
    result: dict[str, Any] = value
    return result


def _state_arg(root: Path, folder: Path) -> tuple[str, str]:
    try:
        rel = folder.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        rel = str(folder.resolve())
    return rel, ("" if rel == "state" else f" --dir {shlex.quote(rel)}")


def _programs(settings: dict[str, Any], state_arg: str) -> list[str]:
    """Every ipse command prefix our resume hook was installed with (any executable path)."""
    hooks = settings.get("hooks")
    starts = hooks.get("SessionStart") if isinstance(hooks, dict) else None
    found: list[str] = []
    suffix = _RESUME + state_arg
    for group in starts if isinstance(starts, list) else []:
        inner = group.get("hooks") if isinstance(group, dict) else None
        for hook in inner if isinstance(inner, list) else []:
            command = hook.get("command") if isinstance(hook, dict) else None
            if isinstance(command, str) and command.endswith(suffix):
                prefix = command[: -len(suffix)]
                if prefix and prefix not in found:
                    found.append(prefix)
    return found


def _remove_groups(text: str, path: Path, state_arg: str, keep: str | None) -> str:
    """``text`` without the hook groups any ipse install wrote for this state folder (except
    those for the program ``keep``)."""
    for prefix in _programs(_settings_value(path, text), state_arg):
        if prefix == keep:
            continue
        for event, groups in hook_groups(state_arg, prefix).items():
            for group in groups:
                text = jsonedit.remove_items(text, ["hooks", event], group)
    return text


def _prune(text: str, created: list[str]) -> str:
    for event in ("SessionStart", "PreCompact"):
        text = jsonedit.prune(text, ["hooks", event], created)
    return text


def _install_settings(path: Path, state_arg: str, extra: dict[str, str]) -> tuple[str | None, str]:
    """(old text, new text) of the settings with our hook groups."""
    old = _read(path)
    if old is None:
        extra["settings"] = "new"
        extra["claude_dir"] = "keep" if path.parent.exists() else "new"
    text = old if old is not None and old.strip() else "{}\n"
    _settings_value(path, text)
    ours = hook_program()  # with IPSE_HOME: the key and anchor the hooks verify with
    cleaned = _remove_groups(text, path, state_arg, ours)
    if cleaned != text:  # an older install's groups: what they alone held goes with them
        text = _prune(cleaned, list(_CONTAINERS))
    for event, groups in hook_groups(state_arg, ours).items():
        for group in groups:
            hooks = _settings_value(path, text).get("hooks") or {}
            if group in hooks.get(event, []):
                continue
            text, created = jsonedit.append_item(text, ["hooks", event], group)
            extra.update({_CONTAINERS[c]: "new" for c in created})
    return old, text


def install(root: StrPath, folder: StrPath, agent: str = "generic") -> list[Change]:
    """Write the startup rule (and, for Claude Code, the hooks); idempotent."""
    root = Path(root)
    folder = Path(folder)
    if agent not in AGENT_FILES:
        raise UsageError(f"unknown agent {agent!r} (choose from {', '.join(AGENT_FILES)})")
    rel, state_arg = _state_arg(root, folder)
    doc = root / AGENT_FILES[agent]
    settings_path = hooks_file(agent, root) if agent != GENERIC else None
    extra: dict[str, str] = {}
    settings: tuple[str | None, str] | None = None
    if settings_path is not None:
        settings = _install_settings(settings_path, state_arg, extra)
    old = _read(doc)
    new = add_block(old, rule_block(rel), extra)
    changes = [Change(str(doc), _write(doc, old, new))]
    if settings_path is not None and settings is not None:
        settings_path.parent.mkdir(parents=True, exist_ok=True)
        changes.append(Change(str(settings_path), _write(settings_path, *settings)))
    return changes


def _replace(path: Path, text: str) -> None:
    """Write atomically, keeping the file's permissions (a new file's: 0666 less the umask)."""
    atomic_write(path, text)


def _write(path: Path, old: str | None, new: str | None) -> str:
    if new == old:
        return "unchanged"
    if new is None:
        path.unlink()
        return "removed"
    _replace(path, new)
    return "created" if old is None else "updated"


def uninstall(root: StrPath, folder: StrPath, agent: str | None = None) -> list[Change]:
    """Remove exactly what install added, from every agent file (or the one named)."""
    root = Path(root)
    folder = Path(folder)
    if agent is not None and agent not in AGENT_FILES:
        raise UsageError(f"unknown agent {agent!r} (choose from {', '.join(AGENT_FILES)})")
    names = sorted({AGENT_FILES[agent]} if agent else set(AGENT_FILES.values()))
    _, state_arg = _state_arg(root, folder)
    changes: list[Change] = []
    for name in names:
        doc = root / name
        old = _read(doc)
        if old is None or find_block(old) is None:
            continue
        new, attrs = remove_block(old)
        changes.append(Change(str(doc), _write(doc, old, new)))
        for settings in _hooks_files(root, name):
            changes.extend(_uninstall_settings(settings, state_arg, attrs))
    return changes


def _hooks_files(root: Path, name: str) -> list[Path]:
    """The hooks files of the agent CLIs whose instructions file is ``name``."""
    found = {hooks_file(agent, root) for agent in AGENTS if instructions_file(agent) == name}
    return sorted(path for path in found if path is not None)


def _uninstall_settings(path: Path, state_arg: str, attrs: dict[str, str]) -> list[Change]:
    old = _read(path)
    if old is None or not old.strip():
        return []
    text = _remove_groups(old, path, state_arg, None)
    if text == old:
        return []
    text = _prune(text, [c for c, name in _CONTAINERS.items() if attrs.get(name) == "new"])
    if attrs.get("settings") == "new" and _settings_value(path, text) == {}:
        path.unlink()
        if attrs.get("claude_dir") == "new" and not any(path.parent.iterdir()):
            path.parent.rmdir()
        return [Change(str(path), "removed")]
    _replace(path, text)
    return [Change(str(path), "updated")]


__all__ = [
    "AGENT_FILES",
    "END",
    "Change",
    "add_block",
    "find_block",
    "hook_groups",
    "install",
    "merge_hooks",
    "program",
    "remove_block",
    "rule_block",
    "uninstall",
    "unmerge_hooks",
]
