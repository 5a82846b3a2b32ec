"""What `ipse.probe` shares with the rest of ipse: the names its sibling packages import
that are not its public API (``ipse.probe.__all__``). Only ipse's own modules import
this one; the names live in the package's private modules."""

from __future__ import annotations

from ipse.probe._ask import Asker
from ipse.probe._best import best_of, continuity
from ipse.probe._facts import FactIndex, read_invariants
from ipse.probe._model import Asking
from ipse.probe._reach import Reach
from ipse.probe._run import plan_of
from ipse.probe._strategies import Meter, Plan
from ipse.probe._timeline import Timeline

__all__ = [
    "Asker",
    "Asking",
    "FactIndex",
    "Meter",
    "Plan",
    "Reach",
    "Timeline",
    "best_of",
    "continuity",
    "plan_of",
    "read_invariants",
]
