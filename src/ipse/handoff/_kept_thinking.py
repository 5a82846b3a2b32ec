"""The kept turns of a handed-off request on models that bind thinking to its prefix.

Newer Anthropic models bind a thinking block to the exact prefix before it: once a handoff
changed the history, a thinking block in a kept turn after the cut is refused (or silently
dropped). `binds_thinking` says which models do (a table with its source); `without_thinking`
removes those blocks from the raw kept turns, moving a prompt-cache breakpoint that sat on one
to the kept block before it, as `strip` does before the cut.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ipse._names import Names

# Models whose thinking blocks are bound to their prefix: Claude Fable and Mythos from 5.1, Opus,
# Sonnet and Haiku from 5.5, and every later major version. Source: the Anthropic docs on
# preserved thinking (https://platform.claude.com/docs/build-with-claude/preserved-thinking) and
# ../shared/REFERENCE.md, "Thinking blocks bound to their prefix".
_BINDING_FROM: dict[str, tuple[int, int]] = {
    "fable": (5, 1),
    "mythos": (5, 1),
    "opus": (5, 5),
    "sonnet": (5, 5),
    "haiku": (5, 5),
}
_MODEL = re.compile(
    r"(?:^|[-./:])claude-(fable|mythos|opus|sonnet|haiku)-(\d+)(?:-(\d{1,2}))?(?!\d)"
)


def binds_thinking(model: object) -> bool:
    """Whether ``model`` binds thinking blocks to their prefix (a changed history 400s them)."""
    if not isinstance(model, str):
        return False
    found = _MODEL.search(model.lower())
    if found is None:
        return False
    family, major, minor = found.group(1), int(found.group(2)), int(found.group(3) or 0)
    return (major, minor) >= _BINDING_FROM[family]


_THINKING = Names({"thinking", "redacted_thinking"})


def without_thinking(tail: Sequence[Any], before: Any = None) -> tuple[list[Any], int]:
    """The kept turns with their thinking blocks removed (a turn that is only thinking stays).

    A breakpoint on a removed thinking block moves to the kept block before it (in its turn, or
    the end of the turn before: ``before`` is the message before ``tail``) when that block has
    none, as `strip` does. The message before comes back first when ``before`` was given."""
    out: list[Any] = [] if before is None else [before]
    dropped = 0
    for message in tail:
        content = message.get("content") if isinstance(message, Mapping) else None
        if (
            isinstance(message, Mapping)
            and message.get("role") == "assistant"
            and isinstance(content, list)
        ):
            kept: list[Any] = []
            for block in content:
                if not (isinstance(block, Mapping) and block.get("type") in _THINKING):
                    kept.append(block)
                    continue
                mark = block.get(_BREAKPOINT)
                if mark is not None:
                    _mark_last(kept, out, mark)
            if kept and len(kept) != len(content):
                dropped += len(content) - len(kept)
                message = {**message, "content": kept}
        out.append(message)
    return out, dropped


_BREAKPOINT = "cache_control"


def _mark_last(kept: list[Any], out: list[Any], mark: Any) -> None:
    """Put ``mark`` on the newest kept block: the last of ``kept``, else of the last message."""
    if kept:
        blocks, at = kept, len(kept) - 1
    else:
        previous = out[-1] if out and isinstance(out[-1], Mapping) else None
        content = previous.get("content") if previous is not None else None
        if previous is None or not isinstance(content, list) or not content:
            return
        blocks = list(content)
        at = len(blocks) - 1
        out[-1] = {**previous, "content": blocks}
    block = blocks[at]
    if isinstance(block, Mapping) and block.get(_BREAKPOINT) is None:
        blocks[at] = {**block, _BREAKPOINT: mark}


__all__ = ["binds_thinking", "without_thinking"]
