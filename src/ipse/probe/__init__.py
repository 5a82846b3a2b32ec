"""Continuity, measured: what a cut of a session keeps and loses, per fact and per strategy.

`probe_session` reads a session, cuts it where asked and scores every strategy (`ipse probe`).
The parts, one job each: `timeline` (the session's messages once each, with the agent CLI's
compactions on it), `FactIndex` (facts extracted per message), `demanded` and `rediscovery`
(what the session used after a cut), `contexts` (each strategy's context after it), `probe`
(the score of one cut), `seams` (a handoff every K turns); `questions`, `Asker` and `answers`
ask a model the demanded facts with each strategy's context; `IpseCompactor` is ipse as a
compactor of the field's conformance kit, with a recall channel; `continuity` is ipse's
line alone at one cut (for the report) and `best_cut` the cut where a handoff pays most.
"""

from __future__ import annotations

from ipse.handoff.effects import Artifact, artifacts, command_of, exit_status
from ipse.probe._ask import APIS, Asker, judge
from ipse.probe._best import Continuity, best_cut, best_of, continuity
from ipse.probe._demand import Rediscovery, demanded, rediscovery
from ipse.probe._facts import KINDS, STANDING, WHERE, FactIndex, SessionFact, grit, read_invariants
from ipse.probe._kit import IpseCompactor
from ipse.probe._model import CAVEAT, Asking, answers
from ipse.probe._questions import Question, questions
from ipse.probe._run import choose_cuts, parse_every, probe_session
from ipse.probe._score import probe, score
from ipse.probe._seams import seams
from ipse.probe._strategies import MASKS, Context, Meter, contexts
from ipse.probe._timeline import Compaction, Timeline, block_text, timeline

__all__ = [
    "APIS",
    "CAVEAT",
    "KINDS",
    "MASKS",
    "STANDING",
    "WHERE",
    "Artifact",
    "Asker",
    "Asking",
    "Compaction",
    "Context",
    "Continuity",
    "FactIndex",
    "IpseCompactor",
    "Meter",
    "Question",
    "Rediscovery",
    "SessionFact",
    "Timeline",
    "answers",
    "artifacts",
    "best_cut",
    "best_of",
    "block_text",
    "choose_cuts",
    "command_of",
    "contexts",
    "continuity",
    "demanded",
    "exit_status",
    "grit",
    "judge",
    "parse_every",
    "probe",
    "probe_session",
    "questions",
    "read_invariants",
    "rediscovery",
    "score",
    "seams",
    "timeline",
]
