"""Questions from demanded facts, in the four kinds the field asks: recall, artifact,
continuation, decision.

- ``recall``: a piece of grit to fill in: the words around its first appearance, with the fact
  blanked out; the truth is the fact's exact string.
- ``artifact``: which files were created, edited, deleted or moved (one question per action);
  the truths are the paths, scored by how many the answer names exactly.
- ``continuation``: what the human last asked for, and what the agent said it would do next;
  judged (a paraphrase is a right answer).
- ``decision``: the rules the human gave; judged.

Generation is deterministic: the same facts give the same questions in the same order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ipse.probe._facts import SessionFact
from ipse.probe._timeline import Timeline, block_text

AROUND = 80  # characters of context on each side of a blanked fact
BLANK = "____"


@dataclass(frozen=True, slots=True)
class Question:
    """One question: its kind, its text, the truths, and whether it is scored by exact string."""

    kind: str
    text: str
    truths: tuple[str, ...]
    exact: bool


def questions(line: Timeline, demand: Sequence[SessionFact], limit: int = 8) -> list[Question]:
    """Up to ``limit`` recall questions plus one of every other kind the demand supports."""
    out: list[Question] = []
    by_action: dict[str, list[str]] = {}
    for fact in demand:
        if fact.kind == "artifact":
            by_action.setdefault(fact.sub, []).append(fact.value)
    for action, paths in by_action.items():
        what = {"committed": "commit messages", "branched": "branches"}.get(
            action, f"files {action}"
        )
        out.append(
            Question(
                "artifact",
                f"List the {what} so far in this session, exactly as written, one per line.",
                tuple(paths),
                True,
            )
        )
    for fact in demand:
        if fact.kind == "task" and fact.sub == "request":
            out.append(
                Question(
                    "continuation", "What did the user last ask you to do?", (fact.value,), False
                )
            )
        elif fact.kind == "task":
            out.append(
                Question(
                    "continuation", "What did you say you would do next?", (fact.value,), False
                )
            )
    rules = [f.value for f in demand if f.kind == "constraint"]
    if rules:
        out.append(
            Question(
                "decision", "What rules did the user give you for this work?", tuple(rules), False
            )
        )
    recall = 0
    for fact in demand:
        if fact.kind != "grit" or recall >= limit:
            continue
        snippet = _snippet(line, fact)
        if snippet is None:
            continue
        recall += 1
        out.append(
            Question(
                "recall",
                "Fill in the blank with the exact text from earlier in this session; answer with "
                f"that text only: \u201c{snippet}\u201d",
                (fact.value,),
                True,
            )
        )
    return out


def _snippet(line: Timeline, fact: SessionFact) -> str | None:
    if not 0 <= fact.first < len(line.messages):
        return None
    for block in line.messages[fact.first].blocks:
        text = block_text(block)
        at = text.find(fact.value)
        if at < 0:
            continue
        before = text[max(0, at - AROUND) : at]
        after = text[at + len(fact.value) : at + len(fact.value) + AROUND]
        if fact.value in before or fact.value in after:
            before, after = before.replace(fact.value, BLANK), after.replace(fact.value, BLANK)
        return " ".join(f"{before}{BLANK}{after}".split())
    return None


def exact_score(question: Question, answer: str) -> float:
    """The share of the question's truths the answer states exactly."""
    return sum(1 for t in question.truths if t in answer) / len(question.truths)


__all__ = ["Question", "exact_score", "questions"]
