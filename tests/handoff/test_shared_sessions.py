"""Every shared Claude Code and openai-chat session: stripped, validated, verified, re-stripped."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from ipse._tokens import default_counter
from ipse.handoff import strip, validate, verify
from ipse.handoff._measure import body_bytes, measure
from ipse.handoff._verify import authored_chars
from ipse.transcript import load, write
from ipse.transcript._formats import anthropic, openai_chat
from ipse.transcript._model import Conversation, Thinking
from ipse.transcript._stats import TokenTally
from tests.conftest import CLAUDE_CODE, EXAMPLE_SESSION, OPENAI_TRAJ, needs_shared, shared_glob

# The example ships with the repository; the shared sessions are there only beside a checkout.
SESSIONS = [
    pytest.param(EXAMPLE_SESSION, id="example-tool_heavy"),
    *(
        needs_shared(p, id=p.name[:24])
        for p in shared_glob(CLAUDE_CODE, "*.jsonl")
        if p.name != EXAMPLE_SESSION.name
    ),
    needs_shared(OPENAI_TRAJ, id=OPENAI_TRAJ.name[:24]),
]
CUTS = ("now", "end")


def _at(conversation: Conversation, cut: str) -> str | int:
    return len(conversation.messages) if cut == "end" else cut  # "end" by its index, too


def _reread(conversation: Conversation) -> Conversation:
    body = orjson.loads(body_bytes(conversation))
    reader = openai_chat.read_body if conversation.dialect == "openai-chat" else anthropic.read_body
    return reader(body)


@pytest.fixture(scope="module", params=SESSIONS)
def session(request: pytest.FixtureRequest) -> Conversation:
    path: Path = request.param
    assert path.exists(), f"missing shared session {path}"
    return load(path).current()


@pytest.mark.parametrize("cut", CUTS)
def test_shared_session_strips_validates_and_verifies(session: Conversation, cut: str) -> None:
    after, report = strip(session, _at(session, cut))
    problems = validate(after, rewritten=report.rewritten_out)
    assert all(p.index is not None and p.index >= report.rewritten_out for p in problems)
    assert set(problems) == set(report.carried_problems)
    assert not any(
        isinstance(b, Thinking) for m in after.messages[: report.rewritten_out] for b in m.blocks
    )
    verdict = verify(session, after, at=report.cut)
    assert verdict.ok, verdict.lost[:3]
    assert verdict.found_chars == verdict.authored_chars == authored_chars(session.messages)
    assert verify(session, after).ok  # the cut inferred from the identical tail
    assert report.removed_calls > 0


@pytest.mark.parametrize("cut", CUTS)
def test_shared_session_strip_is_idempotent_and_byte_stable(
    session: Conversation, cut: str
) -> None:
    after, report = strip(session, _at(session, cut))
    data = body_bytes(after)
    assert body_bytes(strip(session, _at(session, cut))[0]) == data
    again, second = strip(after, "now" if cut == "now" else report.rewritten_out)
    assert again == after and second.removed == ()
    reread = _reread(after)
    restripped, _ = strip(reread, "now" if cut == "now" else report.rewritten_out)
    assert body_bytes(restripped) == data


def test_claude_code_output_is_an_anthropic_body(session: Conversation) -> None:
    after, _ = strip(session, "now")
    body = write(after)
    assert isinstance(body["messages"], list)
    if session.dialect == "anthropic":
        assert set(body) <= {"model", "messages", "system", "tools"}
        data = orjson.dumps(body)
        assert orjson.dumps(anthropic.write_body(anthropic.read_body(orjson.loads(data)))) == data


def test_saving_is_measured_with_equal_authored_characters(session: Conversation) -> None:
    after, report = strip(session, "now")
    tally = TokenTally(default_counter())
    old, new = measure(session, tally), measure(after, tally)
    assert new["tokens"] < old["tokens"] and new["tool_calls"] < old["tool_calls"]
    assert verify(session, after, at=report.cut).found_chars == old["authored_chars"]
