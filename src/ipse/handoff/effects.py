"""What a tool call did, read from its input: the knowledge the handoff's ledger is made of.

`artifacts` gives what a call left behind (files created, edited, deleted, moved; commits and
branches). The rules are in `ipse.handoff._effects`; what the measurement above the handoff
reads of a call besides (`ipse.probe` finds a session's facts with it: the files it reads,
the shell command it runs, its exit status, every string of its input) is in
``ipse.handoff._shared``.
"""

from __future__ import annotations

from ipse.handoff._effects import Artifact, artifacts

__all__ = ["Artifact", "artifacts"]
