"""Grit is found in time linear in the text: no pattern of the extractor can backtrack over a run,
crafted tool output of 160,000 characters finishes, and what is found is exactly what the greedy
patterns found before (kept here as the reference), on generated texts and on the real
sessions."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ipse.probe._facts as facts_module
import ipse.probe._grit as grit_module
from ipse.probe import timeline
from ipse.probe._facts import FactIndex, grit
from ipse.transcript import load
from tests.conftest import CLAUDE_CODE, HTTP_LOG, OPENAI_TRAJ, SHARED_DATA, shared_glob
from tests.support.patterns import backtracking_repeats

_OLD_EXT = (
    r"(?:py|pyi|rs|ts|tsx|js|jsx|mjs|go|java|kt|rb|ex|exs|erl|c|h|cc|cpp|hpp|cs|swift|php|"
    r"md|rst|txt|json|jsonl|toml|yaml|yml|ini|cfg|lock|sh|bash|sql|html|css|scss|xml|csv|ipynb)"
)
OLD_FILE_LINE = re.compile(r"(?<![\w/.-])(?:[\w.-]+/)*[\w.-]+\.[A-Za-z]\w{0,7}:\d+(?::\d+)?(?!\w)")
OLD_PATH = re.compile(
    r"(?<![\w@:/.~-])(?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w.@+-]*[A-Za-z_][\w.@+-]*(?![\w/])"
    r"|(?<![\w/.-])[\w-]+(?:\.[\w-]+)*\." + _OLD_EXT + r"(?![\w/])"
)
OLD_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s'\"<>`)\]]+", re.IGNORECASE)
OLD_BACKTICK = re.compile(r"`([^`\n]{2,80})`")
OLD_NUMBER = re.compile(
    r"(?<![\w.])\d+(?:\.\d+)?(?:%|\s?(?:ms|µs|us|ns|s|secs?|seconds?|minutes?|mins?|hours?|"
    r"[KMGT]i?B|bytes?|tokens?|px|lines?|files?|tests?|calls?|rows?|x)\b)"
)
OLD_TEST = re.compile(
    r"(?<![\w/.-])(?:[\w/.-]+\.py::[\w:\[\]./-]+|test_\w+|Test[A-Z]\w*|\w+_test)(?![\w])"
)
OLD_ERROR = re.compile(r"\b(?:[A-Z][A-Za-z0-9]*(?:Error|Exception|Panic)|(?:E|TS)\d{4})\b")
OLD_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
OLD_NEXT = re.compile(
    r"^\s*(?:let me|let's|i'll|i will|next,?|now,? (?:i|let)|i need to|then i|i'm going to)\b",
    re.IGNORECASE,
)
OLD = [
    OLD_FILE_LINE,
    OLD_PATH,
    OLD_URL,
    OLD_BACKTICK,
    OLD_NUMBER,
    OLD_TEST,
    OLD_ERROR,
    OLD_SENTENCE_END,
    OLD_NEXT,
]


def old_grit(text: str, where: str) -> Iterator[tuple[str, str]]:
    """The extractor as it was (quadratic on a long run), the reference for what is found."""
    for match in OLD_FILE_LINE.finditer(text):
        yield "file_line", match.group(0)
    for match in OLD_URL.finditer(text):
        yield "url", match.group(0).rstrip(".,;:")
    for match in OLD_PATH.finditer(text):
        value = match.group(0).rstrip(".")
        if grit_module._path_like(value):
            yield "path", value
    if where not in ("tool_result", "tool_input"):
        for match in OLD_BACKTICK.finditer(text):
            yield "identifier", match.group(1)
    for match in OLD_NUMBER.finditer(text):
        yield "number", match.group(0)
    for match in OLD_TEST.finditer(text):
        yield "test", match.group(0)
    for match in OLD_ERROR.finditer(text):
        yield "error", match.group(0)


# ------------------------------------------------------------------------ the same grit

# pieces that mean something to a pattern, and characters of every class they look at
PIECES = st.sampled_from(
    [
        *"aZ9_-./:@+~` \n'\"<>)]%é\u212a",
        *["://", "http", "py", ".py", "json", "x/", "~/", "../", "a.b", "sk-", "1.5", "E1234"],
        *["Error", "Panic", "Exception", "test_", "Test", "_test", ".py::", "ms", " s", "sec"],
    ]
)


@settings(max_examples=2000, deadline=None, derandomize=True, database=None)
@given(st.lists(st.tuples(PIECES, st.integers(1, 3)), max_size=16), st.booleans())
def test_grit_finds_what_the_old_patterns_found(
    parts: list[tuple[str, int]], in_tool_output: bool
) -> None:
    text = "".join(piece * count for piece, count in parts)
    where = "tool_result" if in_tool_output else "human"
    assert list(grit(text, where)) == list(old_grit(text, where))


@pytest.mark.parametrize(
    "text",
    [
        "see src/ipse/probe/_facts.py:12:4 and ./a/b, ~/x/y.toml, /usr/lib/python3.11/",
        "a/b/foo.bar/ x/a.b+c/d/1 me@foo.py-q/1 +~/a x:+b/c a//b.py:1",
        "fetch https://example.com/a?b=c). git@github.com:o/r.git -http://x _http://y",
        "pyproject.toml.bak foo.py-x foo.pyi a.b.c.json notes.md. tests/test_x.py::T::f[1]",
        "a.py:12:34x a.py:12x `x` `a b` 1.5 ms 10% 3 files TypeError E1234 x_test Test1",
    ],
)
def test_grit_on_shapes_the_old_patterns_cut_or_passed_over(text: str) -> None:
    # a slashed path whose last part has no letter is cut in a folder, a start after "+" or
    # "~" is tried, a scheme starts at a word's start: as before, character for character
    assert list(grit(text, "human")) == list(old_grit(text, "human"))


# ----------------------------------------------------------------------------- linear time


def _patterns(module: object) -> list[re.Pattern[str]]:
    return [v for v in vars(module).values() if isinstance(v, re.Pattern)]


def test_no_pattern_of_the_extractor_can_backtrack_over_a_run() -> None:
    # every unbounded repeat is possessive: a match attempt reads a run once (and each pattern
    # starts only where its run starts, which the crafted runs below hold it to)
    patterns = _patterns(grit_module) + _patterns(facts_module)
    assert len(patterns) >= 15
    for pattern in patterns:
        assert backtracking_repeats(pattern) == [], pattern.pattern
    for pattern in (OLD_FILE_LINE, OLD_PATH, OLD_URL, OLD_TEST):  # what the check catches
        assert backtracking_repeats(pattern)


# runs that took the old patterns minutes at this length (x/___/x/: about 400 s for the path
# pattern alone, a.a.a and sk-sk-: about 50 s for the URL pattern)
CRAFTED = """
import sys
from ipse.probe._facts import FactIndex
from ipse.probe._grit import grit
from tests.probe.build import assistant, call, line, result, text, user

n = 160_000
runs = ["x/" + "a" * n + "/", "x/" + "_" * n + "x/", "a." * (n // 2), "sk-" * (n // 3),
        "+" * n, "a/" * (n // 2), "1." * (n // 2), "x.py:1" * (n // 6), "a`" * (n // 2),
        "x." + " " * n + "y", "AErrorx" * (n // 7), "test_/" * (n // 6), "~/" + "a+" * (n // 2)]
for run in runs:
    for where in ("human", "tool_result"):
        sum(1 for _ in grit(run, where))
session = [user(text(runs[0]))]
for number, run in enumerate(runs):
    session.append(assistant(call(f"t{number}", "Bash", command="ls " + run[:1000])))
    session.append(user(result(f"t{number}", run)))
index = FactIndex(line(*session))
print(len(index.facts(len(session))))
"""


def test_crafted_tool_output_of_160k_characters_finishes() -> None:
    # a bound on a hang, not a speed test: every run together takes about a second here
    done = subprocess.run(
        [sys.executable, "-c", CRAFTED],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=Path(__file__).resolve().parents[2],
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]


# --------------------------------------------------------------- the real sessions, unchanged

SESSIONS = [
    *shared_glob(CLAUDE_CODE, "*.jsonl"),
    *shared_glob(CLAUDE_CODE, "*/subagents/*.jsonl"),
    *shared_glob(SHARED_DATA / "codex", "*.jsonl"),
    *([OPENAI_TRAJ, HTTP_LOG] if SHARED_DATA.is_dir() else []),
]


@pytest.mark.shared
@pytest.mark.parametrize("path", SESSIONS, ids=[p.name[:24] for p in SESSIONS])
def test_the_facts_of_every_real_session_are_what_they_were(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    line = timeline(load(path))
    now = FactIndex(line).facts(len(line.messages))
    monkeypatch.setattr(facts_module, "grit", old_grit)
    monkeypatch.setattr(facts_module, "_SENTENCE_END", OLD_SENTENCE_END)
    monkeypatch.setattr(facts_module, "_NEXT", OLD_NEXT)
    before = FactIndex(line).facts(len(line.messages))
    assert now == before
    assert len(now) >= 1
