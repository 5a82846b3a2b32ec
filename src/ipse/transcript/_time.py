"""Times as logs and sessions write them: ISO-8601 strings or Unix times, read as aware
datetimes (the HTTP-log reader and the requests rebuilt from sessions and rollouts agree on
them)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def parse_time(value: Any) -> datetime | None:
    """An ISO-8601 string or a Unix time (seconds or milliseconds) as an aware datetime."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = value / 1000 if value > 1e11 else value
        try:
            return datetime.fromtimestamp(seconds, tz=UTC)
        except (OverflowError, OSError, ValueError):  # beyond what a datetime can hold
            return None
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None
