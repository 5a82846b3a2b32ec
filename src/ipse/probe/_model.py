"""With a model: each strategy's context asked the same questions, the answers scored.

Exact questions (recall, artifact) are scored by string: the share of their truths the answer
states as written. The others (continuation, decision) go to the judge when there is one and
stay unscored otherwise. The model gets the context only, never ipse's archive: the recall
channel is not offered here, so ipse's score is a floor. A small model answers poorly; its
score checks the machinery, never the quality of a strategy, and the output says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ipse._redact import redact
from ipse.probe._ask import Asker, judge
from ipse.probe._questions import Question, exact_score
from ipse.probe._strategies import Context

CAVEAT = (
    "scores measure this model answering from each context; a small model answers poorly, so "
    "its scores check the machinery and say nothing about the quality of a strategy; the model "
    "is not offered ipse's recall, so ipse's score is a floor"
)


@dataclass(frozen=True, slots=True)
class Asking:
    """The model to ask, the judge (None: judged questions stay unscored), and how many recall
    questions to ask per cut."""

    asker: Asker
    judge: Asker | None = None
    recall_questions: int = 8


def answers(asking: Asking, context: Context, asked: Sequence[Question]) -> dict[str, Any]:
    """One strategy's answers to every question, scored, with the mean score per kind."""
    rows: list[dict[str, Any]] = []
    for question in asked:
        answer = asking.asker.ask(context.text, question.text)
        score: float | None
        if question.exact:
            score = exact_score(question, answer)
        elif asking.judge is not None:
            score = judge(asking.judge, question.text, question.truths, answer)
        else:
            score = None
        rows.append(
            {
                "kind": question.kind,
                "question": redact(question.text),
                "answer": redact(answer.strip()[:300]),
                "score": score,
            }
        )
    by_kind: dict[str, dict[str, Any]] = {}
    for kind in dict.fromkeys(r["kind"] for r in rows):
        scored = [r["score"] for r in rows if r["kind"] == kind and r["score"] is not None]
        by_kind[kind] = {
            "asked": sum(1 for r in rows if r["kind"] == kind),
            "score": round(100.0 * sum(scored) / len(scored), 1) if scored else None,
        }
    scored = [r["score"] for r in rows if r["score"] is not None]
    return {
        "asked": len(rows),
        "score": round(100.0 * sum(scored) / len(scored), 1) if scored else None,
        "by_kind": by_kind,
        "answers": rows,
    }


__all__ = ["CAVEAT", "Asking", "answers"]
