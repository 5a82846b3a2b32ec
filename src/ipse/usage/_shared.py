"""What `ipse.usage` shares with the rest of ipse: the names its sibling packages import
that are not its public API (``ipse.usage.__all__``). Only ipse's own modules import
this one; the names live in the package's private modules."""

from __future__ import annotations

import typing as _typing

from ipse import _lazy

if _typing.TYPE_CHECKING:
    from ipse.usage._collect import Folder
    from ipse.usage._losses import replay_losses
    from ipse.usage._report import GROUPS, parse_day

# Imported on first use, like the package's own names (`ipse._lazy`).
_MODULES = {
    "_collect": ("Folder",),
    "_losses": ("replay_losses",),
    "_report": ("GROUPS", "parse_day"),
}

__getattr__, __dir__ = _lazy.exports("ipse.usage", _MODULES, globals())

__all__ = _lazy.public(_MODULES)
