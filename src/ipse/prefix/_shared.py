"""What `ipse.prefix` shares with the rest of ipse: the names its sibling packages import
that are not its public API (``ipse.prefix.__all__``). Only ipse's own modules import
this one; the names live in the package's private modules."""

from __future__ import annotations

import typing as _typing

from ipse import _lazy

if _typing.TYPE_CHECKING:
    from ipse.prefix._actual import actual_tokens
    from ipse.prefix._billing import billed_tokens, same_call
    from ipse.prefix._growing import SharedHistory
    from ipse.prefix._lint import Finding
    from ipse.prefix._live import LiveAnalysis
    from ipse.prefix._report import MIN_TOKENS
    from ipse.prefix._requests import UNRECORDED_FRONT, RequestLog
    from ipse.prefix._rows import Row
    from ipse.prefix._rules import PROVIDERS, windows
    from ipse.prefix._simulate import Tokens
    from ipse.prefix._watch import Watcher, default_folders

# Imported on first use, like the package's own names (`ipse._lazy`).
_MODULES = {
    "_actual": ("actual_tokens",),
    "_billing": ("billed_tokens", "same_call"),
    "_growing": ("SharedHistory",),
    "_lint": ("Finding",),
    "_live": ("LiveAnalysis",),
    "_report": ("MIN_TOKENS",),
    "_requests": ("UNRECORDED_FRONT", "RequestLog"),
    "_rows": ("Row",),
    "_rules": ("PROVIDERS", "windows"),
    "_simulate": ("Tokens",),
    "_watch": ("Watcher", "default_folders"),
}

__getattr__, __dir__ = _lazy.exports("ipse.prefix", _MODULES, globals())

__all__ = _lazy.public(_MODULES)
