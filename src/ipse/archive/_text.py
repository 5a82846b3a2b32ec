"""The words of an archived item, as the search index holds them and as a query names them.

An item has two texts: its *call* (the tool's name and every string of its arguments; a
thinking block's words) and its *output* (every string of its result). A word is a run of
letters and digits (``[^\\W_]``: underscores, dots, slashes and the like separate words),
case-folded; words longer than `MAX_WORD` characters (64 UTF-8 bytes) are not indexed, nor are
an item's words beyond its first `MAX_WORDS` distinct ones or past its first `MAX_TEXT`
characters of each text. Both backends index exactly the words `words` gives (SQLite's FTS5
with the ``ascii`` tokenizer splits them no further; PostgreSQL gets them as lexemes, past any
parser), so they answer every query alike. A query matches an item when every word of the query
is among the item's words.

The string walk skips the fields that carry no one's words: ids, types, signatures, cache
markers, and ``data`` (an image's or a document's base64).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from ipse import jsonio
from ipse.errors import UsageError

MAX_WORD = 64
MAX_WORDS = 12_000
MAX_TEXT = 1_000_000
MAX_QUERY_WORDS = 32
EXCERPT = 160
EXCERPT_SEARCH = 262_144  # characters of a text searched for the excerpt's word

_WORD = re.compile(r"[^\W_]+")
_SKIP = frozenset(
    {
        "type",
        "id",
        "tool_use_id",
        "call_id",
        "cache_control",
        "signature",
        "data",
        "media_type",
        "encrypted_content",
        "status",
        "role",
    }
)
# where a dialect keeps a call's arguments: Anthropic ``input``, Responses ``arguments``
# (a JSON string), Chat Completions ``function.arguments``
_ARGUMENT_KEYS = ("input", "arguments")


def words(text: str, limit: int = MAX_WORDS) -> list[str]:
    """The distinct words of ``text`` in the order they first appear, at most ``limit``."""
    folded = text[:MAX_TEXT].casefold()
    found = list(dict.fromkeys(_WORD.findall(folded)))
    if found and max(map(len, found)) > MAX_WORD:
        found = [w for w in found if len(w) <= MAX_WORD]
    if not folded.isascii():
        found = [w for w in found if w.isascii() or len(w.encode("utf-8")) <= MAX_WORD]
    return found[:limit]


def query_words(text: str) -> list[str]:
    """The words a query asks for (as `words` finds them); `UsageError` if it names none, or
    more than `MAX_QUERY_WORDS`."""
    found = words(text, MAX_QUERY_WORDS + 1)
    if not found:
        raise UsageError(f"query {text[:80]!r} has no word to search for (letters or digits)")
    if len(found) > MAX_QUERY_WORDS:
        raise UsageError(f"a query has at most {MAX_QUERY_WORDS} words")
    return found


def call_text(tool: str, call: Mapping[str, Any] | None) -> str:
    """The words a call holds: its tool's name and its arguments' strings (a thinking block:
    its thinking)."""
    if not call:
        return tool
    if "thinking" in call and isinstance(call.get("thinking"), str):
        return str(call["thinking"])
    argument: Any = None
    for key in _ARGUMENT_KEYS:
        if key in call:
            argument = call[key]
            break
    function = call.get("function")
    if argument is None and isinstance(function, Mapping):
        argument = function.get("arguments")
    if argument is None:
        argument = {k: v for k, v in call.items() if k not in ("name", "namespace")}
    return "\n".join([tool, *strings(_decoded(argument))])


def output_text(result: Mapping[str, Any] | None) -> str:
    """The words a result holds: every string of it but ids, types and binary data."""
    if not result:
        return ""
    value = {k: v for k, v in result.items() if k not in ("name",)}
    return "\n".join(strings(value))


def held(
    call: Mapping[str, Any], result: Mapping[str, Any] | None, marked: bool = True
) -> list[Any]:
    """What an item holds, without its envelope (ids, types, status, cache breakpoints, a
    transcript's metadata): the call's arguments (decoded when a JSON string; a thinking block's
    words or data) and the result's output (its ``output`` or ``content``). ``marked=False``
    says no cache breakpoint is in it (nothing to take out)."""
    argument: Any = None
    for key in (*_ARGUMENT_KEYS, "thinking", "data"):
        if key in call:
            argument = call[key]
            break
    function = call.get("function")
    if argument is None and isinstance(function, Mapping):
        argument = function.get("arguments")
    if argument is None:
        argument = {k: v for k, v in call.items() if k not in _SKIP}
    output: Any = None
    if result is not None:
        output = result.get("output", result.get("content"))
        if output is None:
            output = {k: v for k, v in result.items() if k not in _SKIP}
    argument = _decoded(argument)
    if marked:
        argument, output = _unmarked(argument), _unmarked(output)
    return [str(call.get("name", "")), argument, output]


def _unmarked(value: Any) -> Any:
    """``value`` without any ``cache_control`` field, at any depth."""
    if isinstance(value, Mapping):
        return {k: _unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_unmarked(v) for v in value]
    return value


def _decoded(value: Any) -> Any:
    """An argument given as a JSON object string (Responses, Chat Completions), read."""
    if isinstance(value, str) and value.lstrip().startswith(("{", "[")):
        try:
            return jsonio.loads(value)
        except ValueError:
            return value
    return value


def strings(value: Any) -> Iterator[str]:
    """Every string in ``value``, depth first, skipping the fields that hold no words."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if item:
                yield item
        elif isinstance(item, Mapping):
            stack.extend(reversed([v for k, v in item.items() if k not in _SKIP]))
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed(item))


def excerpt_of(
    tool: str,
    call: Mapping[str, Any] | None,
    result: Mapping[str, Any] | None,
    asked: list[str],
    found_in: str,
) -> str:
    """The excerpt of a search hit: from its call where the words were all found there, else
    from its output; credentials masked (`ipse._redact.redact`)."""
    from ipse._redact import redact

    text = call_text(tool, call) if found_in == "call" else output_text(result)
    return redact(excerpt(text, asked))


def excerpt(text: str, asked: list[str], width: int = EXCERPT) -> str:
    """A one-line piece of ``text`` around the first word asked for (its start if none)."""
    at = _first(text, asked)
    start = max(at - width // 3, 0)
    piece = text[start : start + width * 2]
    flat = " ".join(piece.split())
    if len(flat) > width:
        flat = flat[: width - 1] + "…"
    return ("…" if start > 0 else "") + flat


def _first(text: str, asked: list[str]) -> int:
    best = -1
    head = text[:EXCERPT_SEARCH]
    for word in asked:
        match = re.search(rf"(?<![^\W_]){re.escape(word)}", head, re.IGNORECASE)
        if match is not None and (best < 0 or match.start() < best):
            best = match.start()
    return max(best, 0)


__all__ = [
    "EXCERPT",
    "MAX_QUERY_WORDS",
    "MAX_TEXT",
    "MAX_WORD",
    "MAX_WORDS",
    "call_text",
    "excerpt",
    "excerpt_of",
    "held",
    "output_text",
    "query_words",
    "strings",
    "words",
]
