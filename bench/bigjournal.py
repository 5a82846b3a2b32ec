"""Big journaled Claude Code sessions and big Codex rollouts: ``prefix`` against an orjson parse.

Generates (with `tests/support/generated.py`) files of about the sizes asked for (MB):

* ``journal``: a Claude Code session that journals its API requests as Claude Code 2.1.332
  does (``api-request-shape`` once, ``api-request-blob`` once per message, per call an
  ``api-request`` with ``keep: 0`` and every message's hash, breakpoints on the system prompt
  and the newest message), every other turn a tool call whose result is ``--result-kb`` KB;
* ``delta``: the same with ``keep: N`` and only the new hashes (the journal's compact form:
  the file grows linearly with the turns);
* ``rollout``: a Codex rollout whose every call is a function call with a ``--result-kb`` KB
  output and a token count.

For each file, in one run: the baseline (``orjson.loads`` of every line, best of
``--repeat``), then ``python -m ipse prefix FILE --json`` in a child process with its CPU time
and peak resident memory (`bench/bigsession.py`'s measure). ``--source DIR`` runs the child
with ``PYTHONPATH=DIR`` (another checkout's ``src``: the numbers before a change).

    python bench/bigjournal.py --kinds journal delta rollout --sizes 4 8 16
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from tests.support.generated import (
    Turn,
    journaled_records,
    rollout_records,
)

from bigsession import compile_ipse, report


def _sized(records: Iterator[dict[str, Any]], path: Path, target: int) -> None:
    """Write records until the file holds ``target`` bytes (then stop at a whole turn)."""
    import orjson

    written = 0
    with path.open("wb") as out:
        for record in records:
            line = orjson.dumps(record) + b"\n"
            out.write(line)
            written += len(line)
            if written >= target and record.get("type") in ("assistant", "event_msg"):
                break


def generate(kind: str, path: Path, megabytes: float, result_kb: float) -> Path:
    size = int(result_kb * 1000)
    target = int(megabytes * 1_000_000)
    if kind == "rollout":
        _sized(rollout_records(10**7, size=size), path, target)
        return path
    mode = "delta" if kind == "delta" else "full"
    turns = (Turn(f"step {t}", tool=t % 2 == 1, mode=mode if t else "full") for t in range(10**7))
    _sized(journaled_records(_Lazy(turns), size=size), path, target)
    return path


class _Lazy(list[Turn]):
    """Turns drawn as the generator asks for them (``len`` large, index by index)."""

    def __init__(self, turns: Iterator[Turn]) -> None:
        super().__init__()
        self._turns = turns

    def __len__(self) -> int:
        return 10**7

    def __getitem__(self, index: Any) -> Any:
        while super().__len__() <= index:
            self.append(next(self._turns))
        return super().__getitem__(index)

    def __iter__(self) -> Iterator[Turn]:
        for i in range(10**7):
            yield self[i]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", nargs="*", default=["journal", "delta", "rollout"])
    parser.add_argument("--sizes", type=float, nargs="*", default=[4, 8, 16])
    parser.add_argument("--result-kb", type=float, default=4)
    parser.add_argument("--source", help="run ipse from this src folder (PYTHONPATH)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    if args.source:
        os.environ["PYTHONPATH"] = str(Path(args.source).resolve())
    compile_ipse()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for kind in args.kinds:
            for megabytes in args.sizes:
                path = generate(
                    kind, folder / f"{kind}{megabytes:g}.jsonl", megabytes, args.result_kb
                )
                lines = sum(1 for _ in path.open("rb"))
                report(
                    path,
                    f"{kind} {megabytes:g} MB ({lines} lines)",
                    ["prefix"],
                    args.repeat,
                    args.timeout,
                )
                path.unlink()


if __name__ == "__main__":
    main()
