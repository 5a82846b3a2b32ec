"""Extraction is deterministic; a fact planted in human text is extracted and kept by ipse; a
fact planted only in a tool result is removed by ipse and recallable from its archive."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ipse.probe import FactIndex, Meter, contexts, demanded, grit, probe
from ipse.tokens import CharCounter
from tests.probe.build import assistant, call, line, result, text, user

NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=3, max_size=10).filter(
    lambda s: s.strip("_") == s
)
PATHS = st.builds(lambda a, b: f"src/{a}/{b}.py", NAMES, NAMES)
FILLER = st.text(alphabet="abcdefghij klmnop,", max_size=60)


def _session(fact: str, where: str, filler: str, tools: int) -> list[dict[str, object]]:
    """A session where ``fact`` lives in one place before the cut and is cited after it."""
    human = f"Please look into it. {filler}" + (
        f" Start at {fact} now." if where == "human" else ""
    )
    messages: list[dict[str, object]] = [user(text(human))]
    for n in range(tools):
        content = f"listing {filler}" + (f"\n{fact}\n" if where == "tool_result" and n == 0 else "")
        messages.append(assistant(text(f"Step {n}."), call(f"t{n}", "Bash", command=f"ls d{n}")))
        messages.append(user(result(f"t{n}", content)))
    messages.append(assistant(text("Done looking.")))
    messages.append(user(text("Carry on.")))
    # after the cut: the agent opens the file
    messages.append(assistant(call("later", "Read", file_path=fact)))
    messages.append(user(result("later", "contents")))
    return messages


def _cut(messages: list[dict[str, object]]) -> int:
    return len(messages) - 2


@settings(max_examples=40, deadline=None)
@given(PATHS, st.sampled_from(["human", "tool_result"]), FILLER, st.integers(1, 4))
def test_extraction_is_deterministic(fact: str, where: str, filler: str, tools: int) -> None:
    messages = _session(fact, where, filler, tools)
    cut = _cut(messages)
    first = FactIndex(line(*messages)).facts(cut)
    again = FactIndex(line(*messages)).facts(cut)
    assert first == again
    assert [f.key for f in first] == [f.key for f in again]


@settings(max_examples=40, deadline=None)
@given(PATHS, FILLER, st.integers(1, 4))
def test_a_fact_in_human_text_is_extracted_demanded_and_kept_by_ipse(
    fact: str, filler: str, tools: int
) -> None:
    messages = _session(fact, "human", filler, tools)
    timeline = line(*messages)
    index = FactIndex(timeline)
    cut = _cut(messages)
    facts = index.facts(cut)
    planted = [f for f in facts if f.value == fact]
    assert planted and all(f.where == ("human",) for f in planted)
    assert any(f.value == fact for f in demanded(index, facts, cut))
    document = probe(index, Meter(timeline, CharCounter()), cut, "index")
    ipse = next(s for s in document["strategies"] if s["name"] == "ipse")
    assert fact not in {f["value"] for f in ipse["lost"]}
    assert ipse["in_context"] == 100.0


@settings(max_examples=40, deadline=None)
@given(PATHS, FILLER, st.integers(1, 4))
def test_a_fact_only_in_a_tool_result_is_removed_by_ipse_but_recallable(
    fact: str, filler: str, tools: int
) -> None:
    messages = _session(fact, "tool_result", filler, tools)
    timeline = line(*messages)
    cut = _cut(messages)
    planted = [f for f in FactIndex(timeline).facts(cut) if f.value == fact]
    assert planted and all(f.where == ("tool_result",) for f in planted)
    by_name = {c.name: c for c in contexts(Meter(timeline, CharCounter()), cut)}
    assert fact in by_name["none"].text
    assert fact not in by_name["ipse"].text
    assert fact in by_name["ipse"].recall
    document = probe(FactIndex(timeline), Meter(timeline, CharCounter()), cut, "index")
    scores = {s["name"]: s for s in document["strategies"]}
    assert scores["ipse"]["kept_or_recallable"] == 100.0
    assert scores["ipse"]["recallable"] and scores["ipse"]["recallable"] > 0
    if tools > 3:  # the planted result is older than the last three: masking loses it
        assert fact in {f["value"] for f in scores["mask-3"]["lost"]}


def test_grit_shapes() -> None:
    found = set(
        grit(
            "See src/a/b.py:42 and `parse_args`; it took 3.5 s and 12 MB, 40% of "
            "tests/test_x.py::test_one failed with ValueError (E0308). Not and/or prose.",
            "agent",
        )
    )
    assert ("file_line", "src/a/b.py:42") in found
    assert ("path", "src/a/b.py") in found
    assert ("identifier", "parse_args") in found
    assert ("number", "3.5 s") in found and ("number", "12 MB") in found
    assert ("number", "40%") in found
    assert ("test", "tests/test_x.py::test_one") in found
    assert ("error", "ValueError") in found and ("error", "E0308") in found
    assert not any(value == "and/or" for _, value in found)


def test_constraints_task_and_command_status() -> None:
    timeline = line(
        user(text("Fix the build. Never push to main. You must run the tests first.")),
        assistant(text("Let me run them."), call("t1", "Bash", command="make test")),
        user(result("t1", "Exit code: 2\nFAILED")),
        assistant(text("It failed. Next, I'll fix the import in `app.py`.")),
        user(text("ok")),
    )
    facts = {(f.kind, f.sub, f.value): f for f in FactIndex(timeline).facts(4)}
    assert ("constraint", "imperative", "Never push to main.") in facts
    assert ("constraint", "imperative", "You must run the tests first.") in facts
    command = facts[("grit", "command", "make test")]
    assert command.status == 2 and command.where == ("tool_input",)
    assert facts[
        ("task", "request", "Fix the build. Never push to main. You must run the tests first.")
    ]
    assert ("task", "next_step", "Next, I'll fix the import in `app.py`.") in facts
