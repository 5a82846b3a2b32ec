"""What `ipse.proxy` shares with the rest of ipse: the names its sibling packages import
that are not its public API (``ipse.proxy.__all__``). Only ipse's own modules import
this one; the names live in the package's private modules."""

from __future__ import annotations

from ipse.proxy._config import (
    ANTHROPIC_UPSTREAM,
    DEFAULT_HOST,
    DEFAULT_PORT,
    DEFAULT_WORKERS,
    OPENAI_UPSTREAM,
    READ_TIMEOUT,
)
from ipse.proxy._owner import Listener, identify, proxy_process

__all__ = [
    "ANTHROPIC_UPSTREAM",
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "DEFAULT_WORKERS",
    "OPENAI_UPSTREAM",
    "READ_TIMEOUT",
    "Listener",
    "identify",
    "proxy_process",
]
