"""Valid but unusual Claude Code sessions at growing sizes: does the cost grow with the file?

Generates sessions of about the sizes asked for (MB), of a shape no real session has at that
scale but any file may have:

* ``one-response``: one response written as a record per tool call (every assistant record
  has the same ``message.id``), each call's result between: the whole session is one message
  of calls and one of results;
* ``replace-last``: a session that journals its requests (``api-request`` records, the
  compact ``keep: N`` form) where every request sends the last message of the one before it
  again, edited, so that no request extends the one before it.

For each file and command (``prefix``, ``inspect`` and ``handoff``), in one run: the baseline
(``orjson.loads`` of every line, best of ``--repeat``), then the command in a child process
with its CPU time and peak memory (`bench/bigsession.py`'s measure). A command whose cost
follows the file shows about the same ratio at every size; one that is quadratic shows it
doubling with the size.

    python bench/adversarial.py --kinds one-response replace-last --sizes 1 2 4
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from tests.support.generated import SESSION, _time, _uuid

from bigsession import compile_ipse, report
from ipse.transcript._formats.claude_code_journal import message_hash

_USAGE = {
    "input_tokens": 10,
    "output_tokens": 5,
    "cache_read_input_tokens": 0,
    "cache_creation_input_tokens": 0,
}


def _record(kind: str, n: int, parent: str | None, message: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": kind,
        "uuid": _uuid(n),
        "parentUuid": parent,
        "sessionId": SESSION,
        "isSidechain": False,
        "timestamp": _time(n),
        "message": message,
    }


def one_response() -> Iterator[dict[str, Any]]:
    yield _record("user", 0, None, {"role": "user", "content": "go"})
    parent = _uuid(0)
    for n in range(1, 10**8, 2):
        call = {"type": "tool_use", "id": f"toolu_{n}", "name": "Bash", "input": {"n": n}}
        answer = {
            "id": "msg_1",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [call],
            "usage": _USAGE,
        }
        yield _record("assistant", n, parent, answer)
        result = {"type": "tool_result", "tool_use_id": call["id"], "content": f"output {n}"}
        yield _record("user", n + 1, _uuid(n), {"role": "user", "content": [result]})
        parent = _uuid(n + 1)


def replace_last() -> Iterator[dict[str, Any]]:
    yield {
        "type": "api-request-shape",
        "shapeHash": "s0",
        "shape": {"system": [{"type": "text", "text": "Be brief."}], "tools": []},
    }
    sent: list[dict[str, Any]] = []  # the messages of the request before
    reply: dict[str, Any] | None = None  # and its answer
    parent: str | None = None
    for t in range(10**8):
        user = {"role": "user", "content": f"question {t} " + "x" * 200}
        yield _record("user", 2 * t, parent, user)
        parent = _uuid(2 * t)
        keep, tail = 0, [user]
        if sent and reply is not None:  # the last message sent before, sent again edited
            keep = len(sent) - 1
            tail = [{"role": "user", "content": f"question {t - 1}, edited"}, reply, user]
        for message in tail:
            yield {"type": "api-request-blob", "hash": message_hash(message), "message": message}
        sent = [*sent[:keep], *tail]
        marks = [
            {"path": ["messages", len(sent) - 1, "content", 0], "value": {"type": "ephemeral"}}
        ]
        yield {
            "type": "api-request",
            "id": f"req_{t}",
            "shapeHash": "s0",
            "params": {"model": "claude-sonnet-4-5", "max_tokens": 100},
            "keep": keep,
            "tail": [message_hash(m) for m in tail],
            "cacheControl": marks,
        }
        reply = {"role": "assistant", "content": [{"type": "text", "text": f"reply {t}"}]}
        answer = {"id": f"msg_{t}", "model": "claude-sonnet-4-5", "usage": _USAGE, **reply}
        yield {**_record("assistant", 2 * t + 1, parent, answer), "requestRef": f"req_{t}"}
        parent = _uuid(2 * t + 1)


KINDS = {"one-response": one_response, "replace-last": replace_last}


def generate(kind: str, path: Path, megabytes: float) -> Path:
    target = int(megabytes * 1_000_000)
    written = 0
    with path.open("wb") as out:
        for record in KINDS[kind]():
            line = orjson.dumps(record) + b"\n"
            out.write(line)
            written += len(line)
            if written >= target and record.get("type") == "assistant":
                break
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", nargs="*", default=list(KINDS), choices=list(KINDS))
    parser.add_argument("--sizes", type=float, nargs="*", default=[1, 2, 4])
    parser.add_argument("--commands", nargs="*", default=["prefix", "inspect", "handoff"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    compile_ipse()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for kind in args.kinds:
            for megabytes in args.sizes:
                path = generate(kind, folder / f"{kind}{megabytes:g}.jsonl", megabytes)
                lines = sum(1 for _ in path.open("rb"))
                label = f"{kind} {megabytes:g} MB ({lines} lines)"
                report(path, label, args.commands, args.repeat, args.timeout)
                path.unlink()


if __name__ == "__main__":
    main()
