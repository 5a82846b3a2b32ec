"""Requests with plain bodies: the reference the shared-history fast paths are checked against."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from ipse.prefix._requests import Request


def plain_requests(requests: Iterable[Request]) -> list[Request]:
    """The same requests, each body a plain dict holding its own list of messages (built as
    sent: journaled breakpoints placed)."""
    return [msgspec.structs.replace(r, body=dict(r.body)) for r in requests]
