"""What `ipse._plain.plain_dataclass` saves: the transcript model (``ipse/transcript/_model.py``,
eight classes) made as it is, against the same source made with ``@dataclass`` (the classes
keep their own ``__init__``; ``@dataclass`` compiles the rest, and an ``__init__`` it does not
use), each run executing the module's compiled code afresh; interleaved, best of N.

    python bench/plain_dataclass.py [--runs N] [--makes M]

For instruction counts, the whole of ``ipse prefix`` on a small session, under valgrind:
``valgrind --tool=callgrind --callgrind-out-file=/dev/null ipse prefix
../shared/data/claude-code/tool_heavy.jsonl`` ("Collected"), with the modules compiled first
(``python -m compileall -q src``: PYTHONDONTWRITEBYTECODE would have every run compile them).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import ipse.transcript._model as model

IMPORT = "from ipse._plain import UNSET, plain_dataclass\n"
AS_DATACLASS = (
    "from ipse._plain import UNSET\nfrom dataclasses import dataclass as plain_dataclass\n"
)


def seconds(code: object, makes: int) -> float:
    """The seconds of one execution of the module's code, the mean of ``makes`` (in a fresh
    namespace under the module's name: `dataclasses` looks the module up)."""
    start = time.perf_counter()
    for _ in range(makes):
        exec(code, {"__name__": model.__name__})  # the module's own source
    return (time.perf_counter() - start) / makes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--makes", type=int, default=20)
    args = parser.parse_args()
    source = Path(model.__file__).read_text(encoding="utf-8")
    assert IMPORT in source, "the model no longer imports plain_dataclass"
    kinds = {
        "plain_dataclass": compile(source, model.__file__, "exec"),
        "@dataclass": compile(source.replace(IMPORT, AS_DATACLASS), model.__file__, "exec"),
    }
    times = {kind: float("inf") for kind in kinds}
    for _ in range(args.runs):  # interleaved: the machine's noise falls on both
        for kind, code in kinds.items():
            times[kind] = min(times[kind], seconds(code, args.makes))
    for kind, best in times.items():
        print(f"{kind:16} {best * 1000:7.3f} ms to make the model's classes")
    print(f"@dataclass / plain_dataclass: {times['@dataclass'] / times['plain_dataclass']:.1f}x")


if __name__ == "__main__":
    main()
