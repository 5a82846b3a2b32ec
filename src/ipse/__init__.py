"""ipse keeps an AI agent itself across context resets, and makes each reset cheaper.

The conversation model's entry points are re-exported here (`Conversation`, `load`,
`read_conversation`, `write`, from ``ipse.transcript`` on first use: a command that never reads a
conversation does not import its readers), with the root of the exception tree, `IpseError`; the
mechanisms live in their own subpackages (``ipse.transcript``, ``ipse.handoff``,
``ipse.prefix``, ``ipse.twin``, ``ipse.statedir``).
"""

from __future__ import annotations

__version__ = "0.1.0"

from ipse import _lazy
from ipse.errors import IpseError

_TYPE_CHECKING = False  # (no `typing` on the SessionStart hook's path: docs/development.md)
if _TYPE_CHECKING:
    from ipse.transcript import Conversation, load, read_conversation, write

# Names served from ipse.transcript, imported on first use: a command that never reads a
# conversation (a SessionStart hook) does not pay for the readers of every format
# (``python bench/edge_tricks.py``; docs/development.md, "Speed at the edges").
_MODULES = {"transcript": ("Conversation", "load", "read_conversation", "write")}

__getattr__, __dir__ = _lazy.exports("ipse", _MODULES, globals())

__all__ = _lazy.public(_MODULES, "IpseError", "__version__")
