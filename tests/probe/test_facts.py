"""Extraction is deterministic; a fact planted in human text is extracted and kept by ipse; a
fact planted only in a tool result is removed by ipse and reachable from its archive by the
query its ledger's line for that call gives; trivia (devices, a system folder alone) is no
fact, and a command is its first meaningful line."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ipse._tokens import CharCounter
from ipse.probe import probe
from ipse.probe._demand import demanded
from ipse.probe._facts import FactIndex, grit
from ipse.probe._reach import Reach, item_text
from ipse.probe._strategies import Meter, contexts
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
def test_a_fact_only_in_a_tool_result_is_removed_by_ipse_but_reachable(
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
    assert any(fact in item_text(i) for i in by_name["ipse"].items or ())
    assert "`ls d0`" in by_name["ipse"].text  # the ledger's line for the call that printed it
    with Reach() as reach:
        document = probe(
            FactIndex(timeline), Meter(timeline, CharCounter()), cut, "index", reach=reach
        )
    scores = {s["name"]: s for s in document["strategies"]}
    assert scores["ipse"]["in_context"] is not None and scores["ipse"]["in_context"] < 100.0
    assert scores["ipse"]["reachable"] == 100.0 and not scores["ipse"]["lost"]
    assert scores["none"]["reachable"] is None
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
    assert not any(f.sub == "path" and f.value.startswith("/dev") for f in facts.values())
    assert facts[
        ("task", "request", "Fix the build. Never push to main. You must run the tests first.")
    ]
    assert ("task", "next_step", "Next, I'll fix the import in `app.py`.") in facts


def test_device_paths_and_bare_system_folders_are_no_facts() -> None:
    timeline = line(
        user(text("Check /tmp/build/out.log and /tmp, not /dev/null or /proc/self/fd/1.")),
        assistant(call("t1", "Bash", command="make 2>/dev/null > build.log")),
        user(result("t1", "written to /dev/stdout")),
        assistant(text("Done.")),
    )
    values = {f.value for f in FactIndex(timeline).facts(4)}
    assert "/tmp/build/out.log" in values
    assert not values & {"/dev/null", "/proc/self/fd/1", "/dev/stdout", "/tmp"}


def test_a_command_is_its_first_meaningful_line_and_its_status_follows_it() -> None:
    heredoc = (
        "# commit it\ngit commit -m \"$(cat <<'EOF'\nfix: parse empty input\n\nLong body.\nEOF\n)\""
    )
    timeline = line(
        user(text("Commit the fix.")),
        assistant(call("t1", "Bash", command=heredoc)),
        user(result("t1", "Exit code: 1\nnothing to commit")),
        assistant(text("Nothing to commit.")),
    )
    facts = FactIndex(timeline).facts(4)
    commands = [f for f in facts if f.sub == "command"]
    assert [(f.value, f.status) for f in commands] == [("git commit -m \"$(cat <<'EOF'", 1)]
    committed = [f.value for f in facts if f.sub == "committed"]
    assert committed == ["fix: parse empty input"]
    assert not any("$(cat" in f.value for f in facts if f.kind == "artifact")
