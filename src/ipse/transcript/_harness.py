"""Readers of harness files that hold one conversation: Cline and Roo Code task histories,
SWE-agent and mini-swe-agent trajectories, OpenHands event lists, Gemini CLI sessions and
checkpoints. Each format's module says what it relies on; this one only dispatches."""

from __future__ import annotations

from pathlib import Path

from ipse.errors import InputError, IpseError
from ipse.transcript._jsonl import parse_json, read_text_bytes
from ipse.transcript._model import Conversation

HARNESS_FORMATS = ("cline", "swe-agent", "mini-swe-agent", "openhands", "gemini-cli")


def read_harness(path: Path, name: str, warnings: list[str]) -> Conversation:
    """The conversation of a harness file (or OpenHands conversation folder) in the named
    format. These formats are undocumented and change between versions: a field of a kind the
    reader does not expect (a list where a string was, an object where a list was) is bad
    input, said in one line, never a crash."""
    try:
        return _read(path, name, warnings)
    except IpseError:
        raise
    except (TypeError, AttributeError, KeyError, IndexError, ValueError, RecursionError) as exc:
        detail = f"{type(exc).__name__}: {exc}"[:200]
        raise InputError(
            f"not a {name} file ipse can read: a field of an unexpected kind ({detail})",
            path=path,
        ) from exc


def _read(path: Path, name: str, warnings: list[str]) -> Conversation:
    if name == "openhands" and path.is_dir():
        from ipse.transcript.formats.openhands import read_folder

        return read_folder(path)
    data = read_text_bytes(path)
    if name == "gemini-cli":
        from ipse.transcript.formats.gemini_cli import read_gemini

        return read_gemini(path, data, warnings)
    document = parse_json(data, path)
    if name == "cline":
        from ipse.transcript.formats.cline import read_history

        return read_history(path, warnings=warnings, data=document)
    if name == "openhands":
        from ipse.transcript.formats.openhands import read_events

        return read_events(path, document)
    from ipse.transcript.formats.swe_agent import read_trajectory

    return read_trajectory(path, document, name)


__all__ = ["HARNESS_FORMATS", "read_harness"]
