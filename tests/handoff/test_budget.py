"""A handoff held to a token budget: the oldest agent narration goes to the archive as one item,
as little as it takes, word for word; the human's words, the notes and the ledger stay; the
proof finds every paged text in the archived item, and fails when one is missing."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from ipse._tokens import default_counter
from ipse.archive import open_archive
from ipse.cli.main import cli
from ipse.errors import UsageError
from ipse.handoff import HandoffOptions, run, verify
from ipse.handoff._budget import page_item
from ipse.transcript import Conversation, Text
from tests.handoff.build import anthropic_conv, assistant, call, result, text, user

COUNT = default_counter().count
NARRATION = [f"Step {n}: " + " ".join(f"observation{n}-{k}" for k in range(60)) for n in range(6)]
RULE = "Never push to main without asking. Always run the tests."


def _conversation(checkpoint_budget: int | None = None) -> Conversation:
    messages: list[dict[str, Any]] = [user(text(RULE))]
    for n, words in enumerate(NARRATION):
        messages.append(assistant(text(words), call(f"t{n}", "Bash", command=f"make step{n}")))
        messages.append(user(result(f"t{n}", "ok " * 200)))
    arguments: dict[str, Any] = {"done": ["six steps"], "open": ["ship"]}
    if checkpoint_budget is not None:
        arguments["budget"] = checkpoint_budget
    messages.append(assistant(text("Checkpoint."), call("cp", "micro_handoff", **arguments)))
    messages.append(user(result("cp", "recorded")))
    messages.append(assistant(text("Next: ship it.")))
    return anthropic_conv(*messages)


def _context(conversation: Conversation) -> str:
    return "\n".join(b.text for m in conversation.messages for b in m.blocks if isinstance(b, Text))


def _unbudgeted_tokens() -> int:
    done = run(_conversation(), HandoffOptions(budget=10**9), session="s")
    assert done.fitted is not None and done.report.page is None
    return done.fitted.tokens


def test_the_oldest_narration_is_paged_as_little_as_it_takes() -> None:
    whole = _unbudgeted_tokens()
    budget = whole - 2 * COUNT(NARRATION[0])  # room for all but about two steps' words
    done = run(_conversation(), HandoffOptions(at="now", budget=budget), session="s")
    assert done.fitted is not None and done.fitted.met and done.fitted.tokens <= budget
    page = done.report.page
    assert page is not None and page.id.startswith("page-") and page.kind == "page"
    paged = dict(done.report.paged)
    # the oldest, contiguous, as few as it takes: two or three of the six, never the newest
    assert list(paged) == sorted(paged) and 2 <= len(paged) <= 3
    assert min(paged) == 1 and max(paged) < 11
    context = _context(done.after)
    for index, words in enumerate(NARRATION):
        message = 1 + 2 * index
        if message in paged:
            assert paged[message] == (words,) and words not in context
        else:
            assert words in context  # kept byte for byte
    assert RULE in context and "Next: ship it." in context  # the human's words stay
    assert done.report.marker is not None and page.id in done.report.marker
    first, last = min(paged), max(paged)
    assert f"Your narration of messages {first}-{last}" in done.report.marker
    moved = sum(len(t) for texts in paged.values() for t in texts)
    assert done.verdict.ok and done.verdict.paged_chars == moved


def test_without_a_budget_nothing_authored_leaves_the_context() -> None:
    done = run(_conversation(), HandoffOptions(), session="s")
    assert done.report.page is None and done.budget is None
    assert all(words in _context(done.after) for words in NARRATION)


def test_the_paged_narration_is_recalled_by_its_id_word_for_word(tmp_path: Path) -> None:
    archive = open_archive(f"sqlite:///{tmp_path / 'ipse.db'}")
    try:
        done = run(_conversation(), HandoffOptions(budget=600), session="sess", archive=archive)
        page = done.report.page
        assert page is not None
        recalled = archive.recall(page.id, "sess")
        stored = orjson.loads(recalled.call)
        texts = [t for entry in stored["messages"] for t in entry["texts"]]
        assert texts == [words for _, paged in done.report.paged for words in paged]
        assert recalled.item.kind == "page" and recalled.item.tool == "narration"
        assert page.id in {i.id for i in archive.items("sess")}
    finally:
        archive.close()


def test_the_proof_fails_when_the_page_misses_a_text() -> None:
    done = run(_conversation(), HandoffOptions(budget=600), session="s")
    page = done.report.page
    assert page is not None and len(done.report.paged) >= 2
    (first, texts), *rest = done.report.paged
    short = page_item([(first, ()), *rest], 0)  # the oldest message's words left out
    verdict = verify(done.before, done.after, at=done.report.cut, page=short)
    assert not verdict.ok and [x.index for x in verdict.lost] == [first]
    altered = page_item(
        [
            (
                first,
                (texts[0] + " "),
            ),
            *rest,
        ],
        0,
    )  # one byte more
    assert not verify(done.before, done.after, at=done.report.cut, page=altered).ok
    # and the context alone, without the page, lacks them
    assert not verify(done.before, done.after, at=done.report.cut).ok


def test_a_budget_the_human_words_exceed_is_reported_not_met() -> None:
    done = run(_conversation(), HandoffOptions(budget=5), session="s")
    assert done.fitted is not None and not done.fitted.met
    assert RULE in _context(done.after)
    # every agent message with words before the cut: the six steps and "Checkpoint."
    assert len(done.report.paged) == len(NARRATION) + 1
    assert done.document()["budget"]["met"] is False


def test_the_ledger_shares_the_budget_when_the_narration_is_not_enough() -> None:
    """With every agent message paged out and still over, the ledger is scaled down (its
    newest entries of each section kept) until the rewritten part fits; below what the ledger
    can give up, the budget is reported not met."""
    messages: list[dict[str, Any]] = [user(text(RULE))]
    for n in range(40):
        path = f"/work/proj/src/module_{n}/file_{n}.py"
        messages.append(assistant(text(f"step {n}"), call(f"t{n}", "Read", file_path=path)))
        messages.append(user(result(f"t{n}", "x = 1")))
    messages.append(assistant(text("Next: ship it.")))
    conversation = anthropic_conv(*messages)
    floor = run(conversation, HandoffOptions(at="now", budget=1), session="s")
    whole = run(conversation, HandoffOptions(at="now", budget=10**9), session="s")
    assert floor.fitted is not None and not floor.fitted.met
    assert len(floor.report.paged) == 41  # every agent message with words, then the ledger
    assert whole.marked is not None and whole.marked.rendered is not None
    full = whole.marked.rendered
    assert full.tokens > 300 and not full.omitted
    budget = floor.fitted.tokens + full.tokens // 2
    done = run(conversation, HandoffOptions(at="now", budget=budget), session="s")
    assert done.fitted is not None and done.fitted.met and done.fitted.tokens <= budget
    assert done.marked is not None and done.marked.rendered is not None
    shown = done.marked.rendered.shown
    assert 0 < len(shown) < len(full.shown)
    assert list(shown) == list(full.shown[: len(shown)])  # the newest first
    assert RULE in _context(done.after) and done.verdict.ok
    assert done.document()["budget"]["met"] is True
    under = run(conversation, HandoffOptions(at="now", budget=floor.fitted.tokens - 1), session="s")
    assert under.fitted is not None and not under.fitted.met


def test_the_checkpoint_call_s_budget_wins() -> None:
    done = run(_conversation(checkpoint_budget=600), HandoffOptions(budget=10**9), session="s")
    assert done.budget == 600 and done.report.page is not None


def test_a_budget_must_be_a_positive_number_of_tokens() -> None:
    with pytest.raises(UsageError, match="budget"):
        HandoffOptions(budget=0)


def test_the_command_line_budget_and_its_json(tmp_path: Path) -> None:
    from ipse.transcript._formats.anthropic import write_body

    source = tmp_path / "body.json"
    source.write_bytes(orjson.dumps(write_body(_conversation())))
    out = tmp_path / "out.json"
    args = ["handoff", str(source), "-o", str(out), "--budget", "600", "--json", "--no-archive"]
    done = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert done.exit_code == 0, done.output
    document = orjson.loads(done.stdout)
    budget = document["budget"]
    assert budget["tokens"] == 600 and budget["paged"]["id"].startswith("page-")
    assert document["authored_preserved"] is True  # in the context or in the page
    assert document["after"]["authored_chars"] < document["before"]["authored_chars"]
    assert document["ledger"]["entries"][0] == {
        "section": "commands",
        "value": "make step5",
        "id": "t5",
        "actions": [],
        "status": None,
        "detail": "",
    }
    body = orjson.loads(out.read_bytes())
    said = orjson.dumps(body).decode()
    assert budget["paged"]["id"] in said and NARRATION[0] not in said
    again = ["handoff", str(source), "--budget", "600", "-o", str(out), "--no-archive"]
    table = CliRunner().invoke(cli, again, catch_exceptions=False)
    assert "budget 600 tokens: met" in table.stdout
    assert "narration of messages 1-" in table.stdout


def test_the_page_item_is_a_pure_function_of_what_it_holds() -> None:
    one = page_item([(3, ("a", "b")), (5, ("c",))], 7)
    two = page_item([(3, ("a", "b")), (5, ("c",))], 7)
    assert one == two and one.id == two.id
    assert replace(one, id="x") != two
    assert page_item([(3, ("a", "b"))], 7).id != one.id


def test_the_wire_rewrite_takes_the_proxy_s_budget_and_keeps_its_bytes() -> None:
    """What the proxy calls with ``--handoff-budget``: the same page on every request, and a
    cached prefix that is the cold rewrite's, byte for byte."""
    from ipse import jsonio
    from ipse.handoff._rewrite import clear_cache
    from ipse.handoff.wire import rewrite_request
    from ipse.proxy import ProxyConfig
    from ipse.transcript._formats.anthropic import write_body

    assert ProxyConfig(handoff_budget=600).handoff_budget == 600
    with pytest.raises(UsageError, match="--handoff-budget"):
        ProxyConfig(handoff_budget=0)
    body = write_body(_conversation())
    more = {**body, "messages": [*body["messages"], user(text("and then?"))]}
    clear_cache()
    outs = [rewrite_request(b, "anthropic", budget=600) for b in (body, more, more)]
    assert all(o.body is not None and o.marker for o in outs) and outs[2].cached
    cold = rewrite_request(more, "anthropic", budget=600, use_cache=False)
    assert cold.body is not None
    assert outs[0].body is not None
    n = len(outs[0].body["messages"]) - 1  # (the first request's last turn is its own)
    kept = {jsonio.dumps(o.body["messages"][:n]) for o in (*outs, cold) if o.body is not None}
    assert len(kept) == 1
    said = jsonio.dumps(outs[0].body)
    assert b"page-" in said and NARRATION[0].encode() not in said


def test_the_proxy_command_line_takes_the_budget() -> None:
    from ipse.cli.proxy import _argv, _config

    given = {
        "host": "127.0.0.1", "port": 1, "read_timeout": 5.0, "workers": 1,
        "anthropic_upstream": None, "openai_upstream": None, "record": None, "store": None,
        "json_log": False, "no_handoff": False, "no_analysis": False, "tool_names": (),
        "handoff_budget": 4000,
    }  # fmt: skip
    assert _config(**given).handoff_budget == 4000
    assert _argv(given)[-2:] == ["--handoff-budget", "4000"]
    shown = CliRunner().invoke(cli, ["proxy", "--help"]).stdout
    assert "--handoff-budget" in shown


def test_the_checkpoint_tool_takes_a_budget_argument() -> None:
    from ipse.errors import InputError
    from ipse.handoff import render_notes
    from ipse.handoff._notes import SCHEMA, check_notes

    assert SCHEMA["properties"]["budget"]["type"] == "integer"
    notes = {"done": ["a"], "open": ["b"], "budget": 3000}
    assert check_notes(notes) is notes and "3000" not in render_notes(notes)
    for bad in (0, -5, True, "3000", 2.5):
        with pytest.raises(InputError, match="budget"):
            check_notes({"done": [], "open": [], "budget": bad})
