"""JSON in and out: orjson for speed, the standard library where orjson refuses valid input.

orjson rejects strings holding a lone UTF-16 surrogate (``"\\ud800"``), which JSON allows and
which real agent transcripts do contain (a model's output cut in the middle of an emoji).
`loads` falls back to the standard library for such documents, and `dumps` writes such strings
as ASCII escapes, so ipse never reports valid input as broken and never crashes writing it back.

Nesting is bounded the same way on both paths: orjson refuses documents deeper than 1024
levels, and the standard-library fallback's `RecursionError` on a deep document becomes the
same `JSONDecodeError` (``depth limit exceeded``), never a traceback. orjson writes only 254
levels, so `dumps` hands a deeper document (valid, and read without complaint) to the standard
library; so it does a document holding an integer beyond 64 bits (which orjson does not write,
and which readers that keep such integers exact give it): whatever ipse reads, it can write
back.
"""

from __future__ import annotations

import functools
import json
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeGuard

import orjson

from ipse.errors import InputError

JSONDecodeError = orjson.JSONDecodeError

OPT_INDENT_2 = orjson.OPT_INDENT_2
OPT_SORT_KEYS = orjson.OPT_SORT_KEYS
OPT_NON_STR_KEYS = orjson.OPT_NON_STR_KEYS


def is_object(value: Any) -> TypeGuard[Mapping[str, Any]]:
    """Whether ``value`` is a JSON object: `isinstance(value, Mapping)`, answered for a dict
    (what the parser gives) without the abstract class's check, which costs several times a
    type check and runs for every block of every message of a large session."""
    return type(value) is dict or isinstance(value, Mapping)


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse JSON; raises `JSONDecodeError` (orjson's, with its position) when it is invalid."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if "surrogate" not in str(exc):
            raise
        try:
            text = bytes(data).decode("utf-8") if not isinstance(data, str) else data
            return json.loads(text)
        except ValueError:
            raise exc from None
        except RecursionError:
            raise JSONDecodeError("depth limit exceeded", text, 0) from None


def loads_exact(data: bytes) -> Any:
    """`loads`, keeping integers beyond 64 bits exact where orjson reads them as floats (a
    copy of a value through `dumps` and back is then the value itself)."""
    import msgspec  # (here: most commands never need it, and it costs a few ms to import)

    try:
        return msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return loads(data)  # (a lone surrogate: the standard library keeps integers too)


def dumps(value: Any, option: int | None = None, default: Any = None) -> bytes:
    """Serialize compactly (orjson's bytes); strings with lone surrogates become escapes, and
    a document nested deeper than orjson writes (254 levels, where it reads 1024) or holding
    an integer beyond 64 bits is written by the standard library. Deeper than even that can:
    `InputError`. A mapping that is not a dict is written as the object it is (`is_object`),
    unless ``default`` says otherwise."""
    default = _as_object if default is None else default
    try:
        return orjson.dumps(value, default=default, option=option)
    except TypeError as exc:
        reason = str(exc)
        if "surrogates" in reason:
            return _std_dumps(value, option, default, ascii_only=True)
        if "Recursion limit" in reason or "64-bit" in reason:
            return _std_dumps(value, option, default, ascii_only=False)
        raise


def _as_object(value: Any) -> dict[str, Any]:
    """A mapping that is not a dict (a message whose content is read back from its file) as
    the dict it stands for; anything else is not JSON."""
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")


# Levels the standard library may recurse while writing a deep document (each a small C frame).
_WRITE_RECURSION = 5000
_DEEPER = threading.Lock()


def _std_dumps(value: Any, option: int | None, default: Any, *, ascii_only: bool) -> bytes:
    flags = option or 0
    encode = functools.partial(
        json.dumps,
        value,
        ensure_ascii=ascii_only,
        separators=(",", ": ") if flags & OPT_INDENT_2 else (",", ":"),
        indent=2 if flags & OPT_INDENT_2 else None,
        sort_keys=bool(flags & OPT_SORT_KEYS),
        default=default,
    )
    try:
        text = encode()
    except RecursionError:
        text = _deeper(encode)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # deep and holding lone surrogates: those as escapes
        return _std_dumps(value, option, default, ascii_only=True)


def _deeper(encode: Callable[[], str]) -> str:
    """``encode()`` once more with room to recurse: the interpreter's limit, which every thread
    shares, is raised for this call alone and one caller at a time, so concurrent writers
    always put it back as they found it (documents within the limit never touch it)."""
    with _DEEPER:
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, _WRITE_RECURSION))
        try:
            return encode()
        except RecursionError:
            raise InputError("nested too deeply to write as JSON") from None
        finally:
            sys.setrecursionlimit(limit)
