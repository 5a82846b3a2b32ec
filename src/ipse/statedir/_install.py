"""``install`` / ``uninstall``: the startup rule in agent instruction files, and Claude Code hooks.

The rule goes into AGENTS.md, CLAUDE.md or GEMINI.md as one marked block, appended at the end;
installing again replaces only the block, and the rest of the file is never touched. The begin
marker records what install added around the block (``lead=N`` newlines before it, or
``lead=new`` when install created the file; for Claude Code also whether it created
``.claude/settings.json`` and ``.claude/``), so ``uninstall`` removes exactly that.

For Claude Code, hook groups are merged into ``.claude/settings.json`` keeping everything
there: SessionStart (startup, resume, compact) runs ``ipse state resume --hook claude-code``;
PreCompact logs a WAL checkpoint. Uninstall removes exactly those groups. The transforms on text
and on the settings object are pure functions; the file edits are atomic.

A hook command is run by a shell when the agent starts, often without ipse's virtual
environment active: it names the ipse executable by absolute path (`program`), and every
word in it is quoted for the POSIX shell (``shlex.quote``), so a state folder named
``st$(sh<p)`` is a folder name, never a command. Uninstall and reinstall recognise hooks
written for another executable path (a moved environment, or a bare ``ipse``).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipse.errors import InputError, UsageError
from ipse.fileio import StrPath, atomic_write

AGENT_FILES = {
    "claude-code": "CLAUDE.md",
    "codex": "AGENTS.md",
    "gemini": "GEMINI.md",
    "generic": "AGENTS.md",
}
SETTINGS = Path(".claude") / "settings.json"
END = "<!-- ipse:state:end -->"
_BEGIN = re.compile(r"<!-- ipse:state:begin((?: [a-z_]+=[a-z0-9]+)*) -->\n")


def rule_block(state_dir: str) -> str:
    """The body of the marked block (without markers)."""
    return (
        f"## State directory ({state_dir}/)\n\n"
        f"If {state_dir}/ exists, read 00 through 99 in order before doing anything else; "
        "after any context compaction, re-read them before continuing.\n"
        "Record decisions and rejected approaches with `ipse state invariant TEXT --reason "
        "TEXT`, and the next step with `ipse state next TEXT`.\n"
    )


def _attrs(text: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in text.split())


def _begin(attrs: dict[str, str]) -> str:
    inner = "".join(f" {k}={v}" for k, v in attrs.items())
    return f"<!-- ipse:state:begin{inner} -->\n"


def find_block(text: str) -> tuple[int, int, dict[str, str]] | None:
    """(start, end, marker attributes) of the marked block, end past its newline."""
    match = _BEGIN.search(text)
    if match is None:
        return None
    end = text.find(END, match.end())
    if end < 0:
        return None
    end += len(END)
    if text.startswith("\n", end):
        end += 1
    return match.start(), end, _attrs(match.group(1))


def add_block(text: str | None, body: str, extra: dict[str, str] | None = None) -> str:
    """The file's text with the block added or replaced; nothing else changes."""
    found = find_block(text) if text is not None else None
    if text is not None and found is not None:
        start, end, attrs = found
        return text[:start] + _begin(attrs) + body + END + "\n" + text[end:]
    if text is None or text == "":
        attrs = {"lead": "new" if text is None else "0"}
        lead = ""
    else:
        lead = "\n\n" if not text.endswith("\n") else ("" if text.endswith("\n\n") else "\n")
        attrs = {"lead": str(len(lead))}
    attrs.update(extra or {})
    return (text or "") + lead + _begin(attrs) + body + END + "\n"


def remove_block(text: str) -> tuple[str | None, dict[str, str]]:
    """The text without the block and what install added before it (None: delete the file)."""
    found = find_block(text)
    if found is None:
        return text, {}
    start, end, attrs = found
    before, after = text[:start], text[end:]
    lead = attrs.get("lead", "0")
    if lead == "new":
        rest = before + after
        return (None if rest == "" else rest), attrs
    count = int(lead) if lead.isdigit() else 0
    if count and before.endswith("\n" * count):
        before = before[:-count]
    return before + after, attrs


_RESUME = " state resume --hook claude-code"
_CHECKPOINT = " state checkpoint --hook claude-code"
_REASON = " 'context compaction'"


def program() -> str:
    """The shell words that run this ipse: the ``ipse`` script beside the running Python
    (a virtual environment's ``bin/``), else that Python with ``-m ipse``; absolute, quoted."""
    python = os.path.abspath(sys.executable)
    script = os.path.join(os.path.dirname(python), "ipse")
    if os.path.isfile(script) and os.access(script, os.X_OK):
        return shlex.quote(script)
    return f"{shlex.quote(python)} -m ipse"


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
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", path=path) from exc


def _load_settings(path: Path) -> dict[str, Any] | None:
    text = _read(path)
    if text is None:
        return None
    try:
        data: Any = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise InputError(f"not valid JSON ({exc})", path=path) from exc
    if not isinstance(data, dict):
        raise InputError("not a JSON object", path=path)
    return data


def _dump(settings: dict[str, Any]) -> str:
    return json.dumps(settings, indent=2, ensure_ascii=False) + "\n"


@dataclass(frozen=True)
class Change:
    """One file install or uninstall created, updated, removed, or left alone."""

    path: str
    action: str  # created | updated | removed | unchanged


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


def _without_ours(settings: dict[str, Any], state_arg: str) -> dict[str, Any]:
    """``settings`` without the hook groups any ipse install wrote for this state folder."""
    for prefix in _programs(settings, state_arg):
        settings = unmerge_hooks(settings, hook_groups(state_arg, prefix))
    return settings


def install(root: StrPath, folder: StrPath, agent: str = "generic") -> list[Change]:
    """Write the startup rule (and, for Claude Code, the hooks); idempotent."""
    root = Path(root)
    folder = Path(folder)
    if agent not in AGENT_FILES:
        raise UsageError(f"unknown agent {agent!r} (choose from {', '.join(AGENT_FILES)})")
    rel, state_arg = _state_arg(root, folder)
    doc = root / AGENT_FILES[agent]
    settings_path = root / SETTINGS
    extra: dict[str, str] = {}
    new_settings: str | None = None
    old_settings_text = _read(settings_path) if agent == "claude-code" else None
    if agent == "claude-code":
        settings = _load_settings(settings_path)
        if settings is None:
            extra = {
                "settings": "new",
                "claude_dir": "keep" if settings_path.parent.exists() else "new",
            }
        groups = hook_groups(state_arg, program())
        new_settings = _dump(merge_hooks(_without_ours(settings or {}, state_arg), groups))
        if settings is not None and merge_hooks(settings, groups) == settings:
            new_settings = None  # already there: leave the file's bytes alone
    old = _read(doc)
    new = add_block(old, rule_block(rel), extra)
    changes = [Change(str(doc), _write(doc, old, new))]
    if agent == "claude-code":
        if new_settings is None:
            changes.append(Change(str(settings_path), "unchanged"))
        else:
            changes.append(
                Change(str(settings_path), _write(settings_path, old_settings_text, new_settings))
            )
    return changes


def _replace(path: Path, text: str) -> None:
    """Write atomically, keeping the file's permissions (0644 for a new file)."""
    try:
        mode = path.stat().st_mode & 0o777
    except OSError:
        mode = 0o644
    atomic_write(path, text, mode=mode)


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
        if name == "CLAUDE.md":
            changes.extend(_uninstall_settings(root, state_arg, attrs))
    return changes


def _uninstall_settings(root: Path, state_arg: str, attrs: dict[str, str]) -> list[Change]:
    path = root / SETTINGS
    settings = _load_settings(path)
    if settings is None:
        return []
    cleaned = _without_ours(settings, state_arg)
    if cleaned == settings:
        return []
    if cleaned == {} and attrs.get("settings") == "new":
        path.unlink()
        if attrs.get("claude_dir") == "new" and not any(path.parent.iterdir()):
            path.parent.rmdir()
        return [Change(str(path), "removed")]
    _replace(path, _dump(cleaned))
    return [Change(str(path), "updated")]
