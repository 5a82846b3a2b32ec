"""Archive payloads: the exact JSON of a removed item, its content address, and compression.

A payload is the provider's original dict serialised as compact JSON in its original key order
(orjson), so recalling it gives back exactly what was removed. Its address is the sha256 of those
bytes; equal payloads are stored once. Compression is zlib (stdlib).
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Mapping
from typing import Any

from ipse import jsonio
from ipse.archive._text import held
from ipse.errors import StoreError

CODEC = "zlib"


def payload(raw: Mapping[str, Any]) -> bytes:
    """The exact JSON bytes of a provider dict."""
    return jsonio.dumps(raw)


def address(data: bytes) -> str:
    """The content address of a payload: its sha256, hex."""
    return hashlib.sha256(data).hexdigest()


def identity(
    call: Mapping[str, Any], result: Mapping[str, Any] | None, payloads: bytes | None = None
) -> str:
    """What tells two archived items apart: the address of what they hold, the call's arguments
    and the result's output (`ipse.archive._text.held`), never their envelopes. The same item
    read from the wire and from an agent CLI's transcript (which adds its own metadata), or sent
    again with a cache breakpoint moved, is one item; two calls that share an id but ran with
    other arguments or gave other output are two. ``payloads``: the item's payloads as stored,
    where at hand (a cache breakpoint is looked for only when they hold one)."""
    marked = payloads is None or b'"cache_control"' in payloads
    try:
        data = jsonio.dumps(held(call, result, marked), option=jsonio.OPT_SORT_KEYS)
    except (TypeError, ValueError, RecursionError):  # past what orjson writes: the payloads
        data = payload(call) + b"\0" + (payload(result) if result is not None else b"")
    return address(data)


def compress(data: bytes) -> bytes:
    return zlib.compress(data, 6)


def decompress(data: bytes, codec: str, sha256: str) -> bytes:
    """The payload back, checked against its address."""
    if codec != CODEC:
        raise StoreError(f"archive blob {sha256[:12]} uses unknown codec {codec!r}")
    try:
        out = zlib.decompress(bytes(data))
    except zlib.error as exc:
        raise StoreError(f"archive blob {sha256[:12]} is corrupt: {exc}") from exc
    if address(out) != sha256:
        raise StoreError(f"archive blob {sha256[:12]} does not match its address")
    return out


__all__ = ["CODEC", "address", "compress", "decompress", "identity", "payload"]
