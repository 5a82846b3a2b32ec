"""What `ipse.mcp` shares with the rest of ipse: the names its sibling packages import
that are not its public API (``ipse.mcp.__all__``). Only ipse's own modules import
this one; the names live in the package's private modules."""

from __future__ import annotations

import typing as _typing

from ipse import _lazy

if _typing.TYPE_CHECKING:
    from ipse.mcp._server import require_sdk, serve_http, serve_stdio
    from ipse.mcp._tools import default_session

# Imported on first use, like the package's own names (`ipse._lazy`).
_MODULES = {
    "_server": ("require_sdk", "serve_http", "serve_stdio"),
    "_tools": ("default_session",),
}

__getattr__, __dir__ = _lazy.exports("ipse.mcp", _MODULES, globals())

__all__ = _lazy.public(_MODULES)
