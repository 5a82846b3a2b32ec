"""Claude Code's records decoded into narrow msgspec structs: only the fields a bill needs.

msgspec skips every field a struct does not name (an assistant record's content, a tool
result's output) without building it, which makes `ipse usage`'s first read of a large history
several times cheaper than parsing each line whole. A record whose fields are not of the
expected shape fails here and is decoded whole instead (`ipse.usage._claude.values_of`):
the same values, slower. Kept apart from the reader because importing msgspec costs more than
the status line's whole work (131 million instructions under valgrind, against 72 million for
``python -c "import json"``); the status line decodes with the standard library.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ipse.usage._claude import Values, dict_values


class _Message(msgspec.Struct):
    id: Any = None
    model: Any = None
    usage: Any = None


class _Inner(msgspec.Struct):
    message: _Message | None = None
    requestId: Any = None
    timestamp: Any = None


class _Progress(msgspec.Struct):
    message: _Inner | None = None
    agentId: Any = None


class _Record(msgspec.Struct):
    type: Any = None
    message: _Message | None = None
    requestId: Any = None
    timestamp: Any = None
    sessionId: Any = None
    isSidechain: Any = None
    data: _Progress | None = None


_RECORD = msgspec.json.Decoder(_Record)
_WHOLE = msgspec.json.Decoder()


def struct_values(line: bytes) -> Values | None:
    """The values of one record (see `ipse.usage._claude.Values`), None for a record that is
    no call; `ValueError` for a line that is not JSON."""
    try:
        record = _RECORD.decode(line)
    except msgspec.ValidationError:
        return dict_values(_WHOLE.decode(line))
    except msgspec.DecodeError as exc:
        raise ValueError(str(exc)) from None
    kind = record.type
    if kind == "assistant" and record.message is not None:
        message = record.message
        return (message.id, record.requestId, message.model, message.usage, record.timestamp,
                record.sessionId, record.isSidechain is True, None)  # fmt: skip
    if kind == "progress" and record.data is not None:
        inner = record.data.message
        if inner is None or inner.message is None:
            return None
        message = inner.message
        time = inner.timestamp if inner.timestamp is not None else record.timestamp
        agent = record.data.agentId
        return (message.id, inner.requestId, message.model, message.usage, time,
                record.sessionId, False, agent if isinstance(agent, str) else "")  # fmt: skip
    return None


__all__ = ["struct_values"]
