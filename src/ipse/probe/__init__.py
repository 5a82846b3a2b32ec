"""Continuity, measured: what a cut of a session keeps and loses, per fact and per strategy.

`probe_session` reads a session, cuts it where asked and scores every strategy (`ipse probe`).
The parts, one job each: `timeline` (the session's messages once each, with the agent CLI's
compactions on it), `FactIndex` (facts extracted per message), `demanded` and `rediscovery`
(what the session used after a cut), `contexts` (each strategy's context after it, made as
`Plan` says), `Reach` and `queries` (what a recall query formed from a context reaches, in a
scratch archive), `probe` (the score of one cut), `headline` and `targets` (the run's shares,
micro-averaged over facts, and the targets at compaction points), `seams` (a handoff every K
turns); `questions`, `Asker` and `answers`
ask a model the demanded facts with each strategy's context; `IpseCompactor` is ipse as a
compactor of the field's conformance kit, with a recall channel; `continuity` is ipse's
line alone at one cut (for the report) and `best_cut` the cut where a handoff pays most.
"""

from __future__ import annotations

from ipse.probe._kit import IpseCompactor
from ipse.probe._reach import queries
from ipse.probe._run import probe_session
from ipse.probe._score import probe
from ipse.probe._timeline import timeline

__all__ = ["IpseCompactor", "probe", "probe_session", "queries", "timeline"]
