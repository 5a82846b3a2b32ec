"""What `ipse.statedir` shares with the rest of ipse: the names its sibling packages import
that are not its public API (``ipse.statedir.__all__``). Only ipse's own modules import
this one; the names live in the package's private modules."""

from __future__ import annotations

from ipse import _lazy

_TYPE_CHECKING = False  # (no `typing` on the SessionStart hook's path: docs/development.md)
if _TYPE_CHECKING:
    from ipse.statedir._canary import canary
    from ipse.statedir._files import WAL
    from ipse.statedir._resume import hook_json

# Imported on first use, like the package's own names (`ipse._lazy`).
_MODULES = {
    "_canary": ("canary",),
    "_files": ("WAL",),
    "_resume": ("hook_json",),
}

__getattr__, __dir__ = _lazy.exports("ipse.statedir", _MODULES, globals())

__all__ = _lazy.public(_MODULES)
