"""A long coding session as a scripted model works it, for driving a real agent CLI to the point
where it compacts its own conversation.

Each turn ``n`` the user asks (`prompt`) to read a file and run a check; the model answers with
a ``Read`` of ``data-NN.txt`` (a 30 KB file of its own per turn, so no read is ever answered
"unchanged since last read"), then a ``Bash`` call (``seq 1 3000``: a 14 KB result), then a text
that closes the turn (`said`). Any number of turns works (the files are written for `TURNS`).

The upstream reports the usage the API would: ``input_tokens`` is the request body's length in
bytes over 4 (`input_tokens`; the API's own count of English text and JSON is near that), so an
agent CLI's meter grows with what it sends and shrinks with what a proxy removes. A compaction
request (its last user message asks for "a detailed summary of the conversation") is answered
with ``<analysis>`` and ``<summary>`` blocks, as the CLI's prompt asks.

Requests that offer no tools (side requests such as a title) get a short text. A user message
that is neither a prompt nor a tool result (a proxy's nudge to call a checkpoint tool, which
this model does not have) is passed over: the model goes on with its task.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

TURNS = 40  # files written: a session may run this many turns
FILE_BYTES = 30_000
BASH_COMMAND = "seq 1 3000"
COMPACTION_MARK = "summary of the conversation"  # in every compaction prompt seen (2.1.197+)
SUMMARY = (
    "<analysis>The user asks, each turn, to read one data file and run a check.</analysis>\n"
    "<summary>1. Primary request: read the data files one by one and run the check after "
    "each.\n2. Progress: the files read so far were all 30 KB; every check passed.\n"
    "3. Next step: the next file.</summary>"
)
PROMPT_PATTERN = re.compile(r"Turn (\d+): read data-\d+\.txt")


def input_tokens(raw: bytes) -> int:
    """The usage the upstream reports for a request body: its bytes over 4."""
    return len(raw) // 4


def file_name(n: int) -> str:
    return f"data-{n:02d}.txt"


def prompt(n: int) -> str:
    """What the user types in turn ``n``."""
    return f"Turn {n}: read {file_name(n)} and run the build check, then tell me what you saw."


def said(n: int) -> tuple[str, str, str]:
    """What the model writes in turn ``n``: before the read, before the command, at the end."""
    return (
        f"Reading {file_name(n)} for turn {n}.",
        f"Now the build check for turn {n}.",
        f"Turn {n} is done: {file_name(n)} holds {FILE_BYTES} bytes of records and the check "
        "printed 3000 lines.",
    )


def authored(turns: int) -> list[str]:
    """Every word the user and the model wrote in turns 1..``turns``, in order."""
    return [text for n in range(1, turns + 1) for text in (prompt(n), *said(n))]


def write_files(folder: Path, turns: int = TURNS) -> None:
    """The data files the session reads, ``FILE_BYTES`` each."""
    for n in range(1, turns + 1):
        line = f"record {n:02d}:{{i:05d}} value={{v}} status=ok checksum=0x{{c:08x}}\n"
        rows: list[str] = []
        size, i = 0, 0
        while size < FILE_BYTES:
            row = line.format(i=i, v=(i * 7919 + n) % 100_000, c=(i * 2654435761 + n) % 2**32)
            rows.append(row)
            size += len(row)
            i += 1
        (folder / file_name(n)).write_text("".join(rows)[:FILE_BYTES])


def texts(value: Any) -> Iterator[str]:
    """Every string inside a JSON value (message contents, tool results, ...)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from texts(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from texts(item)


def _user_text(message: dict[str, Any]) -> str:
    """The text a user message types (not its tool results)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(
        b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"
    )


def is_compaction_request(body: dict[str, Any]) -> bool:
    """Whether a Messages request is Claude Code's compaction: its last user message asks for a
    summary of the conversation."""
    users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
    return bool(users) and COMPACTION_MARK in _user_text(users[-1])


def _turn(messages: list[dict[str, Any]]) -> int:
    for message in reversed(messages):
        if message.get("role") == "user":
            found = PROMPT_PATTERN.search(_user_text(message))
            if found:
                return int(found.group(1))
    return 1


def _answered(message: dict[str, Any]) -> str:
    """The id of the last tool call a user message answers ('' for none)."""
    content = message.get("content")
    ids = [
        b.get("tool_use_id", "")
        for b in (content if isinstance(content, list) else [])
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]
    return ids[-1] if ids else ""


def _last_answered(messages: list[dict[str, Any]]) -> str:
    """The id of the tool call the newest user message with a tool result or a prompt answers
    ('' when it is a prompt): a user message with neither (a proxy's nudge to checkpoint, which
    this model does not follow) is passed over, as a model that goes on with its task does."""
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        answered = _answered(message)
        if answered or PROMPT_PATTERN.search(_user_text(message)):
            return answered
    return ""


def claude_code_model(folder: Path) -> Callable[[dict[str, Any]], Any]:
    """The model for Claude Code (Anthropic Messages; tools ``Read`` and ``Bash``) in a project
    whose data files are in ``folder``."""

    def reply(body: dict[str, Any]) -> Any:
        if is_compaction_request(body):
            return SUMMARY
        if not body.get("tools"):
            return "OK."
        messages = body.get("messages") or []
        answered = _last_answered(messages)
        # the turn: from the call answered (a compaction may have summarised the prompt away)
        n = int(answered.rsplit("_", 1)[1]) if answered else _turn(messages)
        before_read, before_bash, done = said(n)
        if answered.startswith("toolu_read_"):
            command = {"command": BASH_COMMAND, "description": "Run the build check"}
            return {
                "text": before_bash,
                "tool_use": {"id": f"toolu_bash_{n:03d}", "name": "Bash", "input": command},
            }
        if answered.startswith("toolu_bash_"):
            return done
        path = str(folder / file_name(n))
        return {
            "text": before_read,
            "tool_use": {"id": f"toolu_read_{n:03d}", "name": "Read", "input": {"file_path": path}},
        }

    return reply


def body_texts(body: dict[str, Any]) -> str:
    """The messages of a request as one JSON text (for finding what they hold)."""
    return json.dumps(body.get("messages") or [], ensure_ascii=False)


def normalized(value: Any) -> Any:
    """A message list as the provider renders it: ``cache_control`` markers left out (they move
    to the newest message each turn) and a string content read as its one text block."""
    if isinstance(value, list):
        return [normalized(item) for item in value]
    if isinstance(value, dict):
        out = {k: normalized(v) for k, v in value.items() if k != "cache_control"}
        if isinstance(out.get("content"), str) and "role" in out:
            out["content"] = [{"type": "text", "text": out["content"]}]
        return out
    return value


def extends(before: dict[str, Any], after: dict[str, Any], key: str = "messages") -> bool:
    """Whether request ``after`` sends every message of ``before`` unchanged, then more (so the
    provider's cached prefix of ``before`` is read again); ``key`` names the list (``input`` on
    the Responses API)."""
    old, new = normalized(before.get(key) or []), normalized(after.get(key) or [])
    return len(new) > len(old) and new[: len(old)] == old
