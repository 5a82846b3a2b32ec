"""JSON of the state folder's own files (log, receipts, anchor, init intent), read with the
standard library: the session-start hook reads them on every start, and orjson's import would
cost more than the parse. A document nested too deep for the parser's recursion is a
`ValueError` like any other bad document, never a `RecursionError` (the folder may sit in a
repository someone else wrote)."""

from __future__ import annotations

import json

TYPE_CHECKING = False  # (no `typing` on the SessionStart hook's path: docs/development.md)
if TYPE_CHECKING:
    from typing import Any


def loads(raw: bytes | str) -> Any:
    """Parse one JSON document; raises `ValueError` when it is not one (or is nested too deep)."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
