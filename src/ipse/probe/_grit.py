"""Grit in a text (paths, ``file:line``, URLs, identifiers, numbers, tests, errors), found in time
linear in the text's length.

Tool output is whatever a tool printed, and a crafted or unlucky output (40,000 characters of
``x/aaa.../``, a run of ``a.a.a...`` or ``sk-sk-...``) must cost what reading it costs. Two
things make a pattern slow on a long run, and both are ruled out here:

- a repeat that gives back what it read to try another split (``[\\w.]*[A-Za-z][\\w.]*``
  tries every split of a run): every unbounded repeat here is possessive (``++``, ``*+``), so
  a match attempt reads a run once;
- a match attempted at every position of a run, each reading to its end (``\\b[a-z][a-z0-9.-]*://``
  at every ``a`` of ``a.a.a...``): each pattern starts only where its run starts (a lookbehind
  rejects a position inside the run at once), and the two shapes a possessive pattern cannot
  say alone are found by a little code over one run: a URL (its scheme is found back from
  ``://``) and a path (`_paths`).

What is found is what the greedy patterns this replaces found (the tests keep them as the
reference and compare, on generated texts and on real sessions); only the time differs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_EXT = (
    r"(?:py|pyi|rs|ts|tsx|js|jsx|mjs|go|java|kt|rb|ex|exs|erl|c|h|cc|cpp|hpp|cs|swift|php|"
    r"md|rst|txt|json|jsonl|toml|yaml|yml|ini|cfg|lock|sh|bash|sql|html|css|scss|xml|csv|ipynb)"
)
# name.ext:line[:col]: folders, then a last part whose text after its last dot is the extension
_FILE_LINE = re.compile(
    r"(?<![\w/.-])(?:[\w.-]++/)*+(?:[\w-]*+\.)++(?<=[\w.-]\.)[A-Za-z]\w{0,7}+"
    r":\d++(?::\d++(?!\w))?+(?!\w)"
)
# A URL: the run of scheme characters before "://" (read once, from its start), then the rest.
_SCHEME_RUN = re.compile(r"(?<![a-z0-9+.-])[a-z0-9+.-]++(?=://)", re.IGNORECASE)
_SCHEME_START = re.compile(r"\b[a-z]", re.IGNORECASE)
_URL_REST = re.compile(r"[^\s'\"<>`)\]]++")
# A path with slashes: [~][/] then folders "part/" then the last part (all read at once;
# `_slashed_end` decides where the path ends). A path without a slash: dotted parts "a.b.py".
_SLASHED = re.compile(r"(?<![\w@:/.~-])~?+/?+((?:[\w.@+-]++/)*+)[\w.@+-]*+")
_DOTTED = re.compile(r"(?<![\w/.-])[\w-]++(?:\.[\w-]++)*+")
_PATH_RUN = re.compile(r"(?<![\w.@+~:/-])[\w@+~:-]*+[./][\w.@+~:/-]*+")
_PATH_START = re.compile(r"(?<![\w@:/.~-])[~/\w.@+-]|(?<![\w/.-])[\w-]")
_DOTTED_START = re.compile(r"(?<![\w/.-])[\w-]")
_SLASHED_BEFORE = re.compile(r"[\w@:/.~-]")
_DOTTED_BEFORE = re.compile(r"[\w/.-]")
_EXT_END = re.compile(_EXT + r"(?![\w/])")
_LETTER = re.compile(r"[A-Za-z_]")
_CUT_AT = ".@+-"  # the characters of a path part that are not word characters

_BACKTICK = re.compile(r"`([^`\n]{2,80}+)`")
_NUMBER = re.compile(
    r"(?<![\w.])\d++(?:\.\d++)?+(?:%|\s?+(?:ms|µs|us|ns|s|secs?|seconds?|minutes?|mins?|hours?|"
    r"[KMGT]i?B|bytes?|tokens?|px|lines?|files?|tests?|calls?|rows?|x)\b)"
)
_TEST = re.compile(
    r"(?<![\w/.-])(?:[\w/.-]++(?<=[\w/.-]\.py)::[\w:\[\]./-]++|test_\w++|Test[A-Z]\w*+"
    r"|\w++(?<=\w_test))(?!\w)"
)
_ERROR = re.compile(
    r"\b(?:[A-Z][A-Za-z0-9]*+(?:(?<=[A-Za-z0-9]Error)|(?<=[A-Za-z0-9]Exception)"
    r"|(?<=[A-Za-z0-9]Panic))|(?:E|TS)\d{4})\b"
)


def grit(text: str, where: str) -> Iterator[tuple[str, str]]:
    """``(sub, value)`` for every piece of grit in a text."""
    for match in _FILE_LINE.finditer(text):
        yield "file_line", match.group(0)
    for url in _urls(text):
        yield "url", url.rstrip(".,;:")
    for path in _paths(text):
        value = path.rstrip(".")
        if _path_like(value):
            yield "path", value
    if where not in ("tool_result", "tool_input"):
        for match in _BACKTICK.finditer(text):
            yield "identifier", match.group(1)
    for match in _NUMBER.finditer(text):
        yield "number", match.group(0)
    for match in _TEST.finditer(text):
        yield "test", match.group(0)
    for match in _ERROR.finditer(text):
        yield "error", match.group(0)


def _urls(text: str) -> Iterator[str]:
    """``scheme://rest``: the scheme starts at the first letter of the run before ``://`` that
    begins a word (a letter after a non-word character), and the rest runs to a space, a quote,
    ``<``, ``>``, a backtick, ``)`` or ``]``."""
    pos = 0
    while (run := _SCHEME_RUN.search(text, pos)) is not None:
        colon = run.end()
        start = _SCHEME_START.search(text, run.start(), colon)
        rest = _URL_REST.match(text, colon + 3)
        if start is None or rest is None:
            pos = colon + 1
            continue
        yield text[start.start() : rest.end()]
        pos = rest.end()


def _paths(text: str) -> Iterator[str]:
    """Every path in ``text``, left to right, looked for only in runs of path characters that
    hold a ``/`` or a ``.`` (a word of prose is passed over by one pattern)."""
    for run in _PATH_RUN.finditer(text):
        yield from _paths_in(text, run.start(), run.end())


def _paths_in(text: str, pos: int, end: int) -> Iterator[str]:
    """The paths of one run: at each place a path may start, one with slashes
    (`_slashed_end`) else one of dotted parts ending in a known extension (`_dotted_end`).

    A slashed path is read whole once: no slashed path starts inside one that was read (its
    folders are a subset of the first's), so only dotted ones are looked for there."""
    read_to = pos  # slashed paths starting before this are known not to match
    while pos < end:
        if pos < read_to:  # only a dotted path may start here
            start = _DOTTED_START.search(text, pos, read_to)
            if start is None:
                pos = read_to
                continue
        else:
            start = _PATH_START.search(text, pos, end)
            if start is None:
                return
        at = start.start()
        found = None
        if at >= read_to and not _behind(_SLASHED_BEFORE, text, at):
            slashed = _SLASHED.match(text, at)
            if slashed is not None:
                read_to = max(slashed.end(), at + 1)
                found = _slashed_end(text, slashed)
        if found is None and not _behind(_DOTTED_BEFORE, text, at):
            found = _dotted_end(text, at)
        if found is None:
            pos = at + 1
        else:
            yield text[at:found]
            pos = found


def _behind(chars: re.Pattern[str], text: str, at: int) -> bool:
    return at > 0 and chars.match(text, at - 1) is not None


def _slashed_end(text: str, match: re.Match[str]) -> int | None:
    """Where a slashed path read by `_SLASHED` ends, or None when it is none.

    It needs one folder. It ends with its last part when that part has a letter or ``_``;
    else inside the last folder that has a letter followed, later in the folder, by a ``.``,
    ``@``, ``+`` or ``-`` (the folders are tried from the last back to the second), just
    before the last such character."""
    folders_start, last_start = match.span(1)
    if folders_start == last_start:
        return None
    if _LETTER.search(text, last_start, match.end()):
        return match.end()
    end = last_start - 1  # the slash after the folder looked at
    while (slash := text.rfind("/", folders_start, end)) >= 0:
        letter = _LETTER.search(text, slash + 1, end)
        if letter is not None:
            cut = max(text.rfind(c, letter.end(), end) for c in _CUT_AT)
            if cut >= 0:
                return cut
        end = slash
    return None


def _dotted_end(text: str, at: int) -> int | None:
    """Where ``name.part.ext`` starting at ``at`` ends: after the last dot followed by a known
    extension that is not followed by a word character or ``/``; None when no dot is."""
    chain = _DOTTED.match(text, at)
    if chain is None:
        return None
    dot = chain.end()
    while (dot := text.rfind(".", at + 1, dot)) >= 0:
        ext = _EXT_END.match(text, dot + 1)
        if ext is not None:
            return ext.end()
    return None


def _path_like(value: str) -> bool:
    """A path, not prose with a slash (``and/or``, ``expand/collapse``): it is rooted (``/``,
    ``~``, ``./``), has a dotted last part, or has two slashes or more."""
    if not any(c.isalpha() for c in value) or value.startswith(("http", "www.")):
        return False
    last = value.rsplit("/", 1)[-1]
    return value.startswith(("/", "~", "./", "../")) or "." in last or value.count("/") >= 2


__all__ = ["grit"]
