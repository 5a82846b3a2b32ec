"""The bill across every session a user has: what was spent, lost and saved.

`collect` reads every Claude Code, Codex and Gemini CLI session (sub-agents included) and the
ipse proxy's records into a `Ledger` of billed calls, each call counted once, through an index
in ipse's store that reads only what changed since the last run; `group` sums it by day, week,
month, project, session, model or 5-hour block, with the cache losses the prefix replay found
(`replay_losses`) and what ipse's handoffs saved; `bill_of` reads one input alone (``ipse
report``'s section). `statusline` is the line Claude Code shows under its prompt.
"""

from __future__ import annotations

import typing as _typing

from ipse import _lazy

if _typing.TYPE_CHECKING:
    from ipse.usage._collect import bill_of, collect
    from ipse.usage._report import Bucket, group, total
    from ipse.usage._statusline import statusline

_MODULES = {
    "_collect": ("bill_of", "collect"),
    "_report": ("Bucket", "group", "total"),
    "_statusline": ("statusline",),
}

__getattr__, __dir__ = _lazy.exports("ipse.usage", _MODULES, globals())

__all__ = _lazy.public(_MODULES)
