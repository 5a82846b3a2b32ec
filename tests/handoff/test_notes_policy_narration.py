"""The checkpoint tool and its renderer, the handoff policy, and narration readiness."""

from __future__ import annotations

import pytest

from ipse._tokens import default_counter
from ipse.errors import InputError, UsageError
from ipse.handoff import render_notes, strip, tool_definition
from ipse.handoff._narration import narration, narration_prompt
from ipse.handoff._notes import SCHEMA, check_notes
from ipse.handoff._policy import RATES, CacheRates, break_even, cached_share, decide
from ipse.transcript._stats import TokenTally
from tests.handoff.build import anthropic_conv, assistant, call, result, text, user

NOTES = {
    "done": ["parser fixed (tests/test_parser.py passes)"],
    "open": ["port the CLI"],
    "went_wrong": ["pip install failed offline"],
    "rejected": [{"approach": "regex parser", "why": "nested braces"}],
    "cwd": "/work/repo",
    "repository": "git@example.com:me/repo.git (main)",
    "recipes": [{"purpose": "run tests", "command": "python -m pytest -q tests/parser"}],
    "claims": [
        {"claim": "3 tests fail on main", "status": "measured", "evidence": "pytest -q: 3 failed"}
    ],
}


def test_tool_definitions_in_both_shapes() -> None:
    anthropic = tool_definition("anthropic")
    openai = tool_definition("openai-chat")
    assert anthropic["name"] == "micro_handoff" and anthropic["input_schema"] is SCHEMA
    assert openai["type"] == "function" and openai["function"]["parameters"] is SCHEMA
    assert SCHEMA["properties"]["claims"]["items"]["properties"]["status"]["enum"] == [
        "measured",
        "inferred",
    ]
    with pytest.raises(UsageError):
        tool_definition("gemini")


def test_render_notes_is_compact_and_deterministic() -> None:
    rendered = render_notes(NOTES)
    assert rendered == render_notes(dict(reversed(list(NOTES.items()))))
    assert rendered.splitlines() == [
        "Handoff notes",
        "Where: cwd /work/repo; git@example.com:me/repo.git (main)",
        "Done:",
        "- parser fixed (tests/test_parser.py passes)",
        "Open:",
        "- port the CLI",
        "Went wrong:",
        "- pip install failed offline",
        "Rejected:",
        "- regex parser: nested braces",
        "Recipes:",
        "- run tests: python -m pytest -q tests/parser",
        "Claims:",
        "- [measured] 3 tests fail on main (evidence: pytest -q: 3 failed)",
    ]


@pytest.mark.parametrize(
    ("notes", "message"),
    [
        ([], "JSON object"),
        ({"done": []}, "missing field 'open'"),
        ({"done": [], "open": [], "story": "x"}, "unknown field"),
        ({"done": "x", "open": []}, "done must be a list"),
        (
            {
                "done": [],
                "open": [],
                "claims": [{"claim": "c", "status": "guessed", "evidence": "e"}],
            },
            "one of",
        ),
        ({"done": [], "open": [], "recipes": [{"purpose": "p"}]}, "needs 'command'"),
    ],
)
def test_bad_notes(notes: object, message: str) -> None:
    with pytest.raises(InputError, match=message):
        check_notes(notes)


def test_break_even_against_the_cache() -> None:
    rates = RATES["anthropic-5m"]
    # fully cached 100k prefix down to 10k: first turn pays 12.5k write vs 10k read
    turns, per_turn, extra = break_even(100_000, 10_000, 1.0, rates)
    assert extra == pytest.approx(2_500) and per_turn == pytest.approx(9_000) and turns == 2
    # nothing cached: the handoff is cheaper at once
    assert break_even(100_000, 10_000, 0.0, rates)[0] == 1
    # no saving: never pays back
    assert break_even(10_000, 10_000, 1.0, CacheRates(write=2.0, read=0.1))[0] is None


def _conversation(pending: bool = False, handoff_turns_ago: int | None = None) -> object:
    messages = [user(text("go"))]
    if handoff_turns_ago is not None:
        messages += [assistant(call("h", "micro_handoff")), user(result("h"))]
        messages += [
            m
            for i in range(handoff_turns_ago)
            for m in (assistant(text(f"a{i}")), user(text(f"u{i}")))
        ]
    messages.append(assistant(text("x"), call("t")) if pending else assistant(text("x")))
    return anthropic_conv(*messages)


def test_policy_rules() -> None:
    assert decide(_conversation(), tokens_now=100_000, tokens_after=10_000).handoff  # type: ignore[arg-type]
    pending = decide(_conversation(pending=True), tokens_now=100_000, tokens_after=10_000)  # type: ignore[arg-type]
    assert not pending.handoff and "unanswered" in pending.reason
    recent = decide(_conversation(handoff_turns_ago=1), tokens_now=100_000, tokens_after=10_000)  # type: ignore[arg-type]
    assert not recent.handoff and "since the last handoff" in recent.reason
    slow = decide(_conversation(), tokens_now=100_000, tokens_after=99_000, expected_turns=2)  # type: ignore[arg-type]
    assert not slow.handoff and slow.break_even_turns is not None and slow.break_even_turns > 2


def test_narration_coverage_and_warning() -> None:
    conversation = anthropic_conv(
        user(text("go")),
        assistant(text("I will list the folder to find the config file we need."), call("a")),
        user(result("a")),
        assistant(call("b")),
        user(result("b")),
        assistant(text("done")),
    )
    _, report = strip(conversation, 6)
    told = narration(conversation, report, TokenTally(default_counter()))
    assert (told.calls, told.narrated, told.coverage) == (2, 1, 0.5)
    assert told.warning is not None and "thin narration" in told.warning


def test_the_narration_prompt_ships() -> None:
    prompt = narration_prompt()
    assert "Before each tool call" in prompt and "micro_handoff" in prompt


@pytest.mark.parametrize(
    ("usage", "share"),
    [
        ({"input_tokens": 10, "cache_read_input_tokens": 30}, 0.75),
        ({"input_tokens": "ten", "cache_read_input_tokens": 30}, 1.0),
        ({"input_tokens": 10, "cache_read_input_tokens": {"a": 1}}, 0.0),
        ({"input_tokens": -5, "cache_read_input_tokens": 5}, 1.0),
        ({"input_tokens": "x"}, None),
    ],
)
def test_cached_share_reads_only_token_counts(usage: dict[str, object], share: object) -> None:
    from dataclasses import replace

    conversation = anthropic_conv(user(text("go")), assistant(text("x")))
    last = replace(conversation.messages[-1], meta={"usage": usage})
    conversation = replace(conversation, messages=(conversation.messages[0], last))
    assert cached_share(conversation) == share
