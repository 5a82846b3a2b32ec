"""Property: a call off the live path sends the messages it would send were it the live path's
last call (the session read up to its record), whether its request shares the live history (a
branch from the end of a live message) or is rebuilt from its parent chain, on sessions of
random shape: branches from any record, responses written as several records, tool calls and
their results."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ipse.prefix import read_requests
from ipse.transcript._formats.claude_code import read_session
from ipse.transcript._formats.claude_code_requests import request_thread

from .sessions import Session, text, tool_use, usage

# one step: (kind, where it hangs: None = the last record, k = the k-th record from the end)
STEP = st.tuples(
    st.sampled_from(["user", "assistant", "more", "call"]),
    st.one_of(st.none(), st.integers(min_value=1, max_value=6)),
)


def _session(steps: list[tuple[str, int | None]]) -> Session:
    s = Session()
    s.user("begin " * 20)
    calls = 0
    ids = 0
    for kind, back in steps:
        parent: str | bool = False
        if back is not None and back <= len(s.records):
            parent = s.records[-back]["uuid"]
        if kind == "user":
            s.user(f"prompt {len(s.records)}", parent=parent)
        elif kind in ("assistant", "call"):
            ids += 1
            block = tool_use(f"t{calls}") if kind == "call" else text(f"answer {ids}")
            s.assistant(block, usage(1_000, 10 * ids), message_id=f"m{ids}", parent=parent)
            if kind == "call":
                s.result(f"t{calls}")
                calls += 1
        else:  # another record of the response just written (a response's records are
            # written one after another, before any of its tool results)
            last = s.records[-1]
            if last["type"] != "assistant":
                continue
            s.assistant(
                text("more"),
                last["message"]["usage"],
                message_id=last["message"]["id"],
                parent=last["uuid"],
            )
    return s


@settings(max_examples=60, deadline=None)
@given(st.lists(STEP, min_size=1, max_size=18))
def test_off_path_requests_send_their_parent_chain(steps: list[tuple[str, int | None]]) -> None:
    s = _session(steps)
    with tempfile.TemporaryDirectory() as folder:
        path = s.write(Path(folder) / "s.jsonl")
        try:
            log = read_requests(path)
        except Exception:  # (a shape the reader refuses, e.g. no request at all)
            return
        for request in log.requests:
            if not request.off_path:
                continue
            line = int(request.source.rsplit("line ", 1)[1])
            assert list(request.body["messages"]) == _as_if_live(s, line, Path(folder))


def _as_if_live(s: Session, line: int, folder: Path) -> list[object]:
    """The messages before the response at ``line``, read from the session cut after it."""
    cut = Session()
    cut.records = s.records[:line]
    session = read_session(cut.write(folder / "cut.jsonl"))
    uuid = s.records[line - 1]["uuid"]
    messages = request_thread(session).segments[-1]
    for k, message in enumerate(messages):
        if uuid in message.meta["uuids"]:
            return [m.body for m in messages[:k]]
    raise AssertionError("the response is not on its own live path")
