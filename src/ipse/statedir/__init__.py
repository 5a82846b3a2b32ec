"""The state directory: goal, append-only invariants, next step, write-ahead log, receipts,
canary, and the hooks that make an agent re-read it after compaction.

A small folder in the repository (``state/`` by default), read in a fixed order at start and
again right after every compaction, turns compaction into a hot restart. Modules, one job each:
`files` (layout, reading order, lock), `wal` (the log), `gitinfo`, `ops` (init, invariant,
next, log a transition), `resume` and `budget` (reading it back), `receipts`, `verify`, `rotate`,
`canary`, `install`.

The names below are imported on first use: the SessionStart hook (``ipse state resume --hook``)
runs at every session start and needs `resume` alone, not the canary's process handling or the
installer's file edits (importing every module first would double its start: ``python
bench/edge_tricks.py``; the rule: docs/development.md, "Speed at the edges").
"""

from __future__ import annotations

from ipse import _lazy

_TYPE_CHECKING = False  # (no `typing` on the SessionStart hook's path: docs/development.md)
if _TYPE_CHECKING:
    from ipse.statedir._install import install, uninstall
    from ipse.statedir._ops import add_invariant, explain, init, log_transition, set_next
    from ipse.statedir._receipts import stamp
    from ipse.statedir._resume import ResumeView, resume
    from ipse.statedir._rotate import rotate
    from ipse.statedir._verify import StateReport, verify_state

_MODULES = {
    "_install": ("install", "uninstall"),
    "_resume": ("ResumeView", "resume"),
    "_verify": ("StateReport", "verify_state"),
    "_ops": ("add_invariant", "explain", "init", "log_transition", "set_next"),
    "_receipts": ("stamp",),
    "_rotate": ("rotate",),
}


__getattr__, __dir__ = _lazy.exports("ipse.statedir", _MODULES, globals())


__all__ = _lazy.public(_MODULES)
