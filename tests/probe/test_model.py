"""With a model: questions from the demanded facts, asked with each strategy's context, scored.

The machinery runs against the real llama.cpp server with the small SmolLM2 model: its answers
are poor and no assertion reads them as quality, only that every strategy was asked every
question, exact questions were scored by string, judged ones by the judge, and the caveat is
said."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ipse._tokens import CharCounter
from ipse.errors import IpseError
from ipse.probe import probe_session, timeline
from ipse.probe._ask import Asker
from ipse.probe._demand import demanded
from ipse.probe._facts import FactIndex
from ipse.probe._model import Asking
from ipse.probe._questions import BLANK, exact_score, questions
from ipse.transcript import load
from tests.conftest import run_cli
from tests.probe.test_probe import _session
from tests.support.llama import free_port, llama_server, model_path


def test_questions_are_deterministic_and_never_give_the_answer_away(tmp_path: Path) -> None:
    path = _session(tmp_path)
    line = timeline(load(path))
    index = FactIndex(line)
    demand = demanded(index, index.facts(19), 19)
    asked = questions(line, demand, limit=20)
    assert asked == questions(line, demand, limit=20)
    kinds = {q.kind for q in asked}
    assert kinds == {"recall", "continuation", "decision"}
    for question in asked:
        if question.kind == "recall":
            assert BLANK in question.text
            assert question.truths[0] not in question.text
    assert len([q for q in asked if q.kind == "recall"]) == len(
        [f for f in demand if f.kind == "grit"]
    )
    assert (
        len(questions(line, demand, limit=1))
        == len(asked) - len([q for q in asked if q.kind == "recall"]) + 1
    )


def test_exact_scores_count_truths_named_as_written() -> None:
    from ipse.probe._questions import Question

    question = Question("artifact", "which?", ("a.py", "b/c.rs"), True)
    assert exact_score(question, "a.py and b/c.rs") == 1.0
    assert exact_score(question, "a.py only") == 0.5
    assert exact_score(question, "A.PY") == 0.0


def test_a_model_that_does_not_answer_is_one_line_error() -> None:
    asker = Asker(f"http://user:s3cret@127.0.0.1:{free_port()}", "openai", timeout=5)
    with pytest.raises(IpseError) as caught:
        asker.ask("context", "question")
    assert "did not answer" in str(caught.value) and "s3cret" not in str(caught.value)


def test_every_strategy_is_asked_and_scored_by_a_real_model(tmp_path: Path) -> None:
    model = model_path()
    path = _session(tmp_path)
    with llama_server(model) as url:
        asker = Asker(url, "openai", max_tokens=24)
        document = probe_session(
            path, "19", counter=CharCounter(), asking=Asking(asker, asker, recall_questions=1)
        )
        text = run_cli("probe", str(path), "--at", "19", "--model", url, "--questions", "1")
    assert "small model" in document["model"]["caveat"]
    [probe] = document["probes"]
    asked = {s["name"]: s["model"]["asked"] for s in probe["strategies"] if "model" in s}
    assert set(asked) >= {"none", "ipse", "mask-3", "compaction-summary"}
    assert len(set(asked.values())) == 1 and next(iter(asked.values())) >= 3
    for strategy in probe["strategies"]:
        for row in strategy.get("model", {}).get("answers", []):
            assert isinstance(row["answer"], str)
            assert row["score"] is not None and 0.0 <= row["score"] <= 1.0
    assert text.returncode == 0, text.stderr
    assert "small model" in text.stdout and "model score" in text.stdout
    assert "hunter2pass" not in json.dumps(document)
