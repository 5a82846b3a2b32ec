"""Reachable, not recallable: a fact missing from a context counts only when a recall query
formed from that context (by a rule that reads the context alone) finds the archived item
holding it in its top five, in a real archive searched through ``ipse recall``'s library calls;
the agent CLI's summary gets the same search over the transcript it names, and none without."""

from __future__ import annotations

from pathlib import Path

from ipse.probe import probe_session, queries
from ipse.probe._reach import Query, Reach, item_text
from ipse.probe._strategies import Meter, contexts
from ipse.probe._timeline import timeline
from ipse.transcript import load
from tests.probe.build import assistant, call, result, text, user, write_session

LEDGER_LIKE = """Ledger of the removed tool calls (derived by ipse, not written by you)
Changed:
- edited src/app/parse.py [toolu_01ABCDEFGH]
Commands:
- `pytest -q tests/test_parse.py` exit 1: ValueError [toolu_02JKLMNOPQ]
Your narration was moved to the archive (id page-0123456789abcdef).
I looked at lib/core/reader.ex:42 and `load_config` there."""


def test_queries_come_from_the_context_text_alone() -> None:
    found = set(queries(LEDGER_LIKE))
    assert {
        Query("id", "toolu_01ABCDEFGH"),
        Query("id", "toolu_02JKLMNOPQ"),
        Query("id", "page-0123456789abcdef"),
        Query("path", "src/app/parse.py"),
        Query("path", "src/app"),
        Query("path", "lib/core/reader.ex"),
        Query("grep", "src app parse py"),
        Query("grep", "pytest q tests test parse py"),
        Query("grep", "load config"),
        Query("grep", "ValueError"),
    } <= found
    assert queries(LEDGER_LIKE) == sorted(found)  # deterministic
    assert queries("nothing to ask for here") == []


def _buried(tmp_path: Path, calls: int) -> Path:
    """A session where a fact lives only in the output of its oldest read, followed by
    ``calls`` commands; the agent uses the fact after the cut."""
    turns = [
        user(text("Tidy the build.")),
        assistant(call("read0001", "Read", file_path="docs/old_notes.md")),
        user(result("read0001", "The flag lives in config/flags/legacy_switch.toml")),
    ]
    for n in range(calls):
        turns.append(assistant(call(f"cmd{n:04d}", "Bash", command=f"ls build/part_{n}")))
        turns.append(user(result(f"cmd{n:04d}", f"out_{n}.o")))
    turns += [
        assistant(text("Listed the parts.")),
        user(text("Go on.")),
        assistant(call("later001", "Read", file_path="config/flags/legacy_switch.toml")),
        user(result("later001", "on = true")),
    ]
    return write_session(tmp_path / "s.jsonl", turns)


def test_a_fact_no_query_of_the_context_finds_is_lost_though_archived(tmp_path: Path) -> None:
    """Today's archive holds it (it was "recallable"), but the ledger left its call out at its
    cap and nothing else in the context leads to it: lost, and the probe says why."""
    path = _buried(tmp_path, 90)
    cut = len(timeline(load(path)).messages) - 2
    [probe] = probe_session(path, str(cut))["probes"]
    ipse = next(s for s in probe["strategies"] if s["name"] == "ipse")
    fact = "config/flags/legacy_switch.toml"
    lost = {f["value"]: f for f in ipse["lost"]}
    assert fact in lost, ipse
    assert "no query formed from the context" in lost[fact]["why"]
    assert ipse["reachable"] is not None and ipse["reachable"] < 100.0
    line = timeline(load(path))
    [built] = [c for c in contexts(Meter(line), cut) if c.name == "ipse"]
    assert fact not in built.text and "docs/old_notes.md" not in built.text
    assert any(fact in item_text(i) for i in built.items or ())  # the archive holds it


def test_a_fact_behind_a_call_the_ledger_names_is_reachable(tmp_path: Path) -> None:
    path = _buried(tmp_path, 3)
    cut = len(timeline(load(path)).messages) - 2
    [probe] = probe_session(path, str(cut))["probes"]
    ipse = next(s for s in probe["strategies"] if s["name"] == "ipse")
    assert ipse["reached"] and ipse["reached"] >= 1 and not ipse["lost"]


def _summarised(tmp_path: Path, summary: str) -> Path:
    turns = [
        user(text("Find where the flag lives.")),
        assistant(call("read0001", "Read", file_path="config/flags.toml")),
        user(result("read0001", "see config/flags/legacy_switch.toml for the switch")),
        assistant(text("Found it.")),
        user(text("Now flip it.")),
        assistant(call("edit0001", "Edit", file_path="config/flags/legacy_switch.toml", new="x")),
        user(result("edit0001", "ok")),
    ]
    return write_session(tmp_path / "s.jsonl", turns, compact_after=3, summary=summary)


def test_the_summary_is_searched_in_the_transcript_it_names(tmp_path: Path) -> None:
    named = (
        "Summary: we read config/flags.toml.\nIf you need specific details, read the full "
        "transcript at: /home/u/.claude/projects/p/s1.jsonl"
    )
    [probe] = probe_session(_summarised(tmp_path, named), "checkpoint")["probes"]
    summary = next(s for s in probe["strategies"] if s["name"] == "compaction-summary")
    assert "config/flags/legacy_switch.toml" not in {f["value"] for f in summary["lost"]}
    assert summary["reachable"] is not None and summary["reached"] >= 1
    assert "transcript it names" in summary["note"]


def test_a_summary_that_names_no_transcript_has_nothing_to_search(tmp_path: Path) -> None:
    bare = "Summary: we read config/flags.toml."
    [probe] = probe_session(_summarised(tmp_path, bare), "checkpoint")["probes"]
    summary = next(s for s in probe["strategies"] if s["name"] == "compaction-summary")
    assert summary["reachable"] is None and summary["reached"] is None
    lost = {f["value"]: f["why"] for f in summary["lost"]}
    assert "names no transcript" in lost["config/flags/legacy_switch.toml"]


def test_a_scratch_archive_is_made_and_removed(tmp_path: Path) -> None:
    with Reach() as reach:
        assert reach.measure("`ls`", (), ()).queries == 1
    # nothing archived, nothing opened: no store was made under IPSE_HOME or elsewhere
    assert not list(tmp_path.iterdir())
