"""Readers of harness files that hold one conversation: Cline and Roo Code task histories,
SWE-agent and mini-swe-agent trajectories, OpenHands event lists, Gemini CLI sessions and
checkpoints. Each format's module says what it relies on; this one gives their readers the one
signature the format table (`ipse.transcript._table`) names, ``(path, warnings)``, and turns
a reader's surprise into bad input."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ipse.errors import InputError, IpseError
from ipse.transcript._jsonl import parse_json, read_text_bytes
from ipse.transcript._model import Conversation
from ipse.transcript._table import Shape, format_named, of_shape

HARNESS_FORMATS = of_shape(Shape.CONVERSATION)


def read_harness(path: Path, name: str, warnings: list[str]) -> Conversation:
    """The conversation of a harness file (or OpenHands conversation folder) in the named
    format. These formats are undocumented and change between versions: a field of a kind the
    reader does not expect (a list where a string was, an object where a list was) is bad
    input, said in one line, never a crash."""
    read = _reader(path, name)
    try:
        conversation: Conversation = read(path, warnings)
        return conversation
    except IpseError:
        raise
    except (TypeError, AttributeError, KeyError, IndexError, ValueError, RecursionError) as exc:
        detail = f"{type(exc).__name__}: {exc}"[:200]
        raise InputError(
            f"not a {name} file ipse can read: a field of an unexpected kind ({detail})",
            path=path,
        ) from exc


def _reader(path: Path, name: str) -> Callable[..., Any]:
    entry = format_named(name)
    if entry is None or entry.shape is not Shape.CONVERSATION:
        raise InputError(f"{name} is not a harness format ipse reads", path=path)
    return entry.reader()


def read_cline(path: Path, warnings: list[str]) -> Conversation:
    from ipse.transcript._formats.cline import read_history

    return read_history(path, warnings=warnings, data=parse_json(read_text_bytes(path), path))


def read_swe_agent(path: Path, warnings: list[str]) -> Conversation:
    from ipse.transcript._formats import swe_agent

    return swe_agent.read_trajectory(path, parse_json(read_text_bytes(path), path), "swe-agent")


def read_mini_swe_agent(path: Path, warnings: list[str]) -> Conversation:
    from ipse.transcript._formats import swe_agent

    document = parse_json(read_text_bytes(path), path)
    return swe_agent.read_trajectory(path, document, "mini-swe-agent")


def read_openhands(path: Path, warnings: list[str]) -> Conversation:
    from ipse.transcript._formats import openhands

    if path.is_dir():
        return openhands.read_folder(path)
    return openhands.read_events(path, parse_json(read_text_bytes(path), path))


def read_gemini_cli(path: Path, warnings: list[str]) -> Conversation:
    from ipse.transcript._formats.gemini_cli import read_gemini

    return read_gemini(path, read_text_bytes(path), warnings)


__all__ = [
    "HARNESS_FORMATS",
    "read_cline",
    "read_gemini_cli",
    "read_harness",
    "read_mini_swe_agent",
    "read_openhands",
    "read_swe_agent",
]
