"""Fact extraction is linear: for each family of grit (and for sentences and a whole session's
facts), the time for 160,000 characters over the time for 10,000, on the worst of crafted runs
(``x/aaa.../``, ``a.a.a...``, ``sk-sk-...``, ``+++``, ...), beside the same ratio for an orjson
parse of the same text, measured in the same run (16x when linear, 256x when quadratic).

A tool's output reaches the extractor whole (``ipse probe``, ``ipse report``, ``handoff --at
best``), so a crafted output of one shape must cost what reading it costs. ``--old`` also times
the patterns the extractor used to have, from 10,000 to 40,000 characters (16x when quadratic;
slow: seconds a case).

    python bench/facts.py [--old] [--repeat N]
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import orjson

from ipse.probe._facts import FactIndex, _sentences
from ipse.probe._grit import (
    _BACKTICK,
    _ERROR,
    _FILE_LINE,
    _NUMBER,
    _TEST,
    _paths,
    _urls,
)
from ipse.probe._timeline import Timeline
from ipse.transcript._formats import anthropic

T = TypeVar("T")

# (a prefix, a piece repeated to the length, a suffix): the runs that made a pattern slow
RUNS = {
    "x/aaa.../": ("x/", "a", "/"),
    "x/___.../x/": ("x/", "_", "x/"),
    "a.a.a...": ("", "a.", ""),
    "sk-sk-...": ("", "sk-", ""),
    "+++...": ("", "+", ""),
    "a/a/a/...": ("", "a/", ""),
    "1.1.1...": ("", "1.", ""),
    "x.py:1:...": ("", "x.py:1", ""),
    "a`a`...": ("", "a`", ""),
    "spaces": ("x.", " ", "y"),
    "AError...": ("", "AErrorx", ""),
    "test_/...": ("", "test_/", ""),
}


def _all(pattern: re.Pattern[str]) -> Callable[[str], object]:
    return lambda text: sum(1 for _ in pattern.finditer(text))


def _count(found: Callable[[str], Iterator[str]]) -> Callable[[str], object]:
    return lambda text: sum(1 for _ in found(text))


def _session(text: str) -> Timeline:
    """The text as a human's message and as a tool's output."""
    call = {"type": "tool_use", "id": "c1", "name": "Bash", "input": {"command": "ls"}}
    output = {"type": "tool_result", "tool_use_id": "c1", "content": text}
    body = {
        "model": "claude-x",
        "messages": [
            {"role": "user", "content": text},
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [output]},
        ],
    }
    conversation = anthropic.read_body(body)
    return Timeline(conversation.messages, (), conversation.dialect)


FAMILIES: dict[str, Callable[[str], object]] = {
    "file_line": _all(_FILE_LINE),
    "url": _count(_urls),
    "path": _count(_paths),
    "identifier": _all(_BACKTICK),
    "number": _all(_NUMBER),
    "test": _all(_TEST),
    "error": _all(_ERROR),
    "sentences": _sentences,
    "all facts": lambda text: FactIndex(_session(text)).facts(3),
}

_OLD_EXT = (
    r"(?:py|pyi|rs|ts|tsx|js|jsx|mjs|go|java|kt|rb|ex|exs|erl|c|h|cc|cpp|hpp|cs|swift|php|"
    r"md|rst|txt|json|jsonl|toml|yaml|yml|ini|cfg|lock|sh|bash|sql|html|css|scss|xml|csv|ipynb)"
)
OLD = {
    "file_line": re.compile(
        r"(?<![\w/.-])(?:[\w.-]+/)*[\w.-]+\.[A-Za-z]\w{0,7}:\d+(?::\d+)?(?!\w)"
    ),
    "url": re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s'\"<>`)\]]+", re.IGNORECASE),
    "path": re.compile(
        r"(?<![\w@:/.~-])(?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w.@+-]*[A-Za-z_][\w.@+-]*(?![\w/])"
        r"|(?<![\w/.-])[\w-]+(?:\.[\w-]+)*\." + _OLD_EXT + r"(?![\w/])"
    ),
}


def text_of(run: tuple[str, str, str], length: int) -> str:
    prefix, piece, suffix = run
    return prefix + piece * (length // len(piece)) + suffix


def per_call(function: Callable[[T], object], text: T, repeat: int) -> float:
    """The least CPU time one call takes over ``repeat`` rounds (each round calls it until
    20 ms have passed, so a short text is timed over many calls)."""
    best = float("inf")
    for _ in range(repeat):
        calls, start = 0, time.process_time()
        while True:
            function(text)
            calls += 1
            spent = time.process_time() - start
            if spent >= 0.02:
                break
        best = min(best, spent / calls)
    return best


def baseline(short: str, long: str) -> float:
    """The same ratio for parsing the text as a JSON string (orjson: linear, and fast)."""
    a, b = orjson.dumps(short), orjson.dumps(long)
    return per_call(orjson.loads, b, 3) / per_call(orjson.loads, a, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", action="store_true", help="also the patterns before (slow)")
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    print(f"{'family':11} {'worst run':14} {'10k':>9} {'160k':>9} {'ratio':>6} {'orjson':>7}")
    worst_all = 0.0
    for name, function in FAMILIES.items():
        worst: tuple[float, str, float, float, float] | None = None
        for label, run in RUNS.items():
            short, long = text_of(run, 10_000), text_of(run, 160_000)
            a = per_call(function, short, options.repeat)
            b = per_call(function, long, options.repeat)
            if worst is None or b / a > worst[0]:
                worst = (b / a, label, a, b, baseline(short, long))
        assert worst is not None
        share, label, a, b, base = worst
        worst_all = max(worst_all, share / base)
        print(
            f"{name:11} {label:14} {a * 1000:7.2f}ms {b * 1000:7.2f}ms {share:6.1f} {base:7.1f}",
            flush=True,
        )
    print(f"worst ratio over the orjson baseline's: {worst_all:.2f} (linear: about 1)")
    if options.old:
        print(f"\nbefore: {'family':9} {'worst run':14} {'10k':>9} {'40k':>9} {'ratio':>6}")
        for name, pattern in OLD.items():
            found = []
            for label, run in RUNS.items():
                short, long = text_of(run, 10_000), text_of(run, 40_000)
                a, b = per_call(_all(pattern), short, 1), per_call(_all(pattern), long, 1)
                found.append((b / a, label, a, b))
            share, label, a, b = max(found)
            print(f"        {name:9} {label:14} {a:8.3f}s {b:8.3f}s {share:6.1f}", flush=True)


if __name__ == "__main__":
    main()
