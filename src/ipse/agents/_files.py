"""Reading and writing an agent CLI's files as install and uninstall do: text exactly as stored
(line endings untranslated, so a CRLF file stays CRLF), written atomically, a file install
creates given the mode its agent CLI gives it, and the blank file some users keep (an empty
``settings.json``) given back blank.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipse.agents import _jsonedit as jsonedit
from ipse.errors import InputError
from ipse.fileio import atomic_write

PRIVATE_MODE = 0o600  # the mode Claude Code gives .claude.json and Codex its config.toml


@dataclass(frozen=True)
class Change:
    """One file install or uninstall created, updated, removed, or left alone."""

    path: str
    action: str  # created | updated | removed | unchanged


@dataclass(frozen=True)
class Edit:
    """One file's text before (None: missing) and after (None: remove it) an install step."""

    path: Path
    old: str | None
    new: str | None


def read(path: Path) -> str | None:
    """The file's text exactly as stored (line endings untranslated), None when missing."""
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", path=path) from exc


def write(edit: Edit, private: bool = False) -> Change:
    """Apply one edit: an existing file keeps its mode; one created gets 0600 when ``private``."""
    path, old, new = edit.path, edit.old, edit.new
    if new == old:
        return Change(str(path), "unchanged")
    if new is None:
        path.unlink()
        return Change(str(path), "removed")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, new, mode=PRIVATE_MODE if private and old is None else None)
    return Change(str(path), "created" if old is None else "updated")


def parsed(text: str | None, comments: bool = False) -> Any:
    """The JSON value of a config's text ({} for a blank one), None when it does not parse."""
    if text is None:
        return None
    try:
        return jsonedit.parse(text, comments=comments)[0] if text.strip() else {}
    except InputError:
        return None


def json_text(path: Path, text: str | None, comments: bool = False) -> str:
    """The config to edit: a missing file is an empty object; a blank one keeps its blank
    text before the object, so that uninstall can give it back (`blank_again`)."""
    if text is None:
        return "{}\n"
    if not text.strip():
        return text + "{}\n"
    jsonedit.parse(text, path, comments=comments)
    return text


def blank(text: str | None) -> bool:
    """Whether the file exists and holds nothing but white space."""
    return text is not None and not text.strip()


def is_empty_object(text: str, comments: bool = False) -> bool:
    """Whether the text is an empty JSON object (and nothing else)."""
    return bool(text.strip()) and parsed(text, comments) == {}


def blank_again(text: str, was_blank: bool, comments: bool = False) -> str:
    """After uninstall: the blank text a file held before install, when it held one and ipse
    left an empty object behind."""
    if was_blank and is_empty_object(text, comments):
        return text[: len(text) - len(text.lstrip())]
    return text


def created(path: Path, attrs: dict[str, str], file_key: str, dir_key: str) -> str | None:
    """The file's text, recording in ``attrs`` when install is about to create it (and its
    folder)."""
    old = read(path)
    if old is None:
        attrs[file_key] = "new"
        if not path.parent.exists():
            attrs[dir_key] = "new"
    return old


def remove_dir_if_empty(folder: Path, allowed: bool) -> None:
    """Remove a folder install created, once nothing is left in it."""
    if allowed and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()


__all__ = [
    "PRIVATE_MODE",
    "Change",
    "Edit",
    "blank",
    "blank_again",
    "created",
    "is_empty_object",
    "json_text",
    "parsed",
    "read",
    "remove_dir_if_empty",
    "write",
]
