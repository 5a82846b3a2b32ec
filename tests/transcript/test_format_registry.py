"""The format table is the one place that knows formats: every ``--format`` offers its names,
sniffing each format's examples gives that format, ``write`` refuses with its reasons, the
documentation's formats page (docs/formats.md) lists it, and no module outside it branches on a
format's name."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import pytest

from ipse.cli.main import cli as ipse_cli
from ipse.errors import UsageError
from ipse.transcript import FORMATS, detect, load, write
from ipse.transcript._codec import DIALECTS
from ipse.transcript._harness import HARNESS_FORMATS
from ipse.transcript._table import (
    FORMAT_TABLE,
    WRITABLE_FORMATS,
    Shape,
    Where,
    format_named,
    resolve,
)
from tests.conftest import CliRun
from tests.report.build import write_log
from tests.support.generated import Turn, journaled_records, rollout_records
from tests.transcript import harness_cases as cases

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "ipse"
EXAMPLES = REPO / "examples"

Build = Callable[[Path], Path]


def _json(value: Any) -> Build:
    return lambda folder: cases.write_json(folder / "input.json", value)


def _jsonl(records: Callable[[], list[dict[str, Any]]]) -> Build:
    return lambda folder: cases.write_jsonl(folder / "input.jsonl", records())


def _copy(path: Path) -> Build:
    return lambda folder: path


def _exchange_folder(folder: Path) -> Path:
    logged = folder / "log"
    logged.mkdir()
    log = write_log(folder / "log.jsonl", turns=2)
    for number, line in enumerate(log.read_text().splitlines()):
        (logged / f"{number:03d}.json").write_text(line)
    return logged


def _har(folder: Path) -> Path:
    entry = json.loads(write_log(folder / "log.jsonl", turns=1).read_text().splitlines()[0])
    body = {"mimeType": "application/json", "text": json.dumps(entry["request"]["body"])}
    request = {"method": "POST", "url": "https://api.anthropic.com/v1/messages", "postData": body}
    response = {"status": 200, "content": {"mimeType": "application/json", "text": "{}"}}
    return cases.write_json(
        folder / "log.har", {"log": {"entries": [{"request": request, "response": response}]}}
    )


def _openhands_folder(folder: Path) -> Path:
    events = folder / "conversation" / "events"
    events.mkdir(parents=True)
    for number, event in enumerate(cases.openhands_v1_events()):
        cases.write_json(events / f"event-{number:05d}-e{number}.json", event)
    return folder / "conversation"


_BODY = {"model": "claude-sonnet-4-5", "max_tokens": 10, "system": "be brief"}
_HUMAN = [{"role": "user", "content": "hi"}]
_ANTHROPIC_CALL = {
    "role": "assistant",
    "content": [{"type": "tool_use", "id": "x", "name": "ls", "input": {}}],
}
_ANTHROPIC_RESULT = {
    "role": "user",
    "content": [{"type": "tool_result", "tool_use_id": "x", "content": "y"}],
}
_CHAT_CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [{"id": "x", "type": "function", "function": {"name": "ls", "arguments": "{}"}}],
}
_CHAT_RESULT = {"role": "tool", "tool_call_id": "x", "content": "y"}
_LEGACY_ROLLOUT = [
    {"id": "r1", "timestamp": "2025-05-01T10:00:00Z", "instructions": ""},
    {"record_type": "state"},
]

# Inputs of every format, in the shapes it comes in: a new format brings its own here.
EXAMPLES_OF: dict[str, list[Build]] = {
    "anthropic": [
        _json({**_BODY, "messages": _HUMAN}),
        _json({"model": "m", "messages": [*_HUMAN, _ANTHROPIC_CALL, _ANTHROPIC_RESULT]}),
    ],
    "openai-chat": [
        _json({"model": "gpt-5", "messages": _HUMAN}),
        _json({"model": "m", "messages": [*_HUMAN, _CHAT_CALL, _CHAT_RESULT]}),
    ],
    "openai-responses": [
        _json({"model": "gpt-5", "input": _HUMAN}),
        _json({"model": "gpt-5", "input": "hi"}),
    ],
    "claude-code": [
        _jsonl(lambda: list(journaled_records([Turn("read", tool=True), Turn("next")]))),
        _copy(EXAMPLES / "tool_heavy.jsonl"),
    ],
    "http-log": [
        lambda folder: write_log(folder / "log.jsonl"),
        _exchange_folder,
        _har,
    ],
    "codex": [
        _jsonl(lambda: list(rollout_records(3))),
        _jsonl(lambda: _LEGACY_ROLLOUT),
    ],
    "cline": [_json(cases.cline_history()), _json(cases.roo_history())],
    "swe-agent": [
        _json(cases.swe_agent_traj()),
        _json(cases.swe_agent_classic_traj()),
        *(_copy(p) for p in sorted((EXAMPLES / "swe-agent").glob("*.traj"))),
    ],
    "mini-swe-agent": [_json(cases.mini_swe_agent_traj())],
    "openhands": [
        _json(cases.openhands_events()),
        _json({"trajectory": cases.openhands_events()}),
        _json(cases.openhands_v1_events()),
        _openhands_folder,
        *(_copy(p) for p in sorted((EXAMPLES / "openhands").glob("*.json"))),
    ],
    "gemini-cli": [
        _jsonl(cases.gemini_session_jsonl),
        _json(cases.gemini_contents()),
        _json({"history": cases.gemini_contents(), "authType": "oauth-personal"}),
    ],
}

_EXAMPLE_CASES = [
    pytest.param(name, build, id=f"{name}-{number}")
    for name, builds in EXAMPLES_OF.items()
    for number, build in enumerate(builds)
]


def test_every_format_in_the_table_has_examples() -> None:
    assert list(EXAMPLES_OF) == list(FORMATS)


@pytest.mark.parametrize(("name", "build"), _EXAMPLE_CASES)
def test_sniffing_each_example_gives_its_format(tmp_path: Path, name: str, build: Build) -> None:
    path = build(tmp_path)
    assert detect(path) == name
    assert load(path).format == name


@pytest.mark.parametrize("name", FORMATS)
def test_write_back_follows_the_table(tmp_path: Path, name: str) -> None:
    """A format the table marks read only is refused with its reason; every other format's
    conversation writes back as a body of the dialect it was read in."""
    entry = format_named(name)
    assert entry is not None
    conversation = load(EXAMPLES_OF[name][0](tmp_path), name).current()
    if entry.read_only is None:
        assert write(conversation)
        return
    with pytest.raises(UsageError) as refused:
        write(conversation)
    message = str(refused.value)
    assert f"{name} conversations are read only" in message
    assert entry.read_only in message
    assert ", ".join(WRITABLE_FORMATS) in message


def test_what_is_derived_from_the_table() -> None:
    assert tuple(f.name for f in FORMAT_TABLE) == FORMATS
    assert len(set(FORMATS)) == len(FORMATS)
    assert (
        tuple(f.name for f in FORMAT_TABLE if f.read_only is None and f.shape is not Shape.LOG)
        == WRITABLE_FORMATS
    )
    assert tuple(f.name for f in FORMAT_TABLE if f.shape is Shape.CONVERSATION) == HARNESS_FORMATS
    for name in DIALECTS:  # a body is read by its dialect's codec
        entry = format_named(name)
        assert entry is not None and entry.shape is Shape.BODY and entry.read is None


def test_every_reader_and_test_the_table_names_exists_and_ranks_are_unambiguous() -> None:
    ranks: dict[Where, list[int]] = {}
    for entry in FORMAT_TABLE:
        assert entry.sniffs, f"{entry.name} cannot be detected"
        if entry.shape is not Shape.BODY:
            assert callable(entry.reader())
        for sniff in entry.sniffs:
            assert callable(resolve(sniff.test))
            ranks.setdefault(sniff.where, []).append(sniff.rank)
    for where, taken in ranks.items():
        assert len(taken) == len(set(taken)), f"two {where.value} tests share a rank"


def _format_options() -> dict[str, click.Choice[Any]]:
    """Every command's ``--format`` that takes input format names, by command path."""
    found: dict[str, click.Choice[Any]] = {}
    context = click.Context(ipse_cli)

    def walk(command: click.Command | None, path: str) -> None:
        if isinstance(command, click.Group):
            for name in command.list_commands(context):
                walk(command.get_command(context, name), f"{path} {name}".strip())
            return
        for param in command.params if command is not None else ():
            choice = param.type if "--format" in getattr(param, "opts", ()) else None
            names = set(FORMATS) - set(DIALECTS)
            if isinstance(choice, click.Choice) and set(choice.choices) & names:
                found[path] = choice

    walk(ipse_cli, "")
    return found


def test_every_reading_command_offers_exactly_the_tables_names() -> None:
    options = _format_options()
    assert {"handoff", "inspect", "lint", "prefix", "report", "verify"} <= set(options)
    for command, choice in options.items():
        assert tuple(choice.choices) == FORMATS, command


def test_the_formats_page_lists_the_tables_formats() -> None:
    text = (REPO / "docs" / "formats.md").read_text()
    section = text.split("# Formats\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")][1:]  # (the header)
    names = [re.match(r"\| `([^`]+)`", row).group(1) for row in rows]  # type: ignore[union-attr]
    assert names == list(FORMATS)
    for name, row in zip(names, rows, strict=True):
        writes = row.rstrip(" |").rsplit(" | ", 1)[1].replace("`", "")
        entry = format_named(name)
        assert entry is not None
        assert writes.startswith("no") == (name not in WRITABLE_FORMATS), name
        if entry.read_only is not None:
            assert writes == f"no: {entry.read_only}", name


# ------------------------------------------------------- no if-chains on format names elsewhere

# Words in a comparison's names that say it is about another namespace sharing words with
# formats (matched inside names: ``agent``, ``_HOOKS``).
_OTHER_NAMESPACES = {
    "agent": "the agents ipse installs into (claude-code, codex, gemini)",
    "hook": "the agents whose hooks ipse answers (claude-code)",
    "target": "what a handoff writes (--to body or claude-code)",
}
_REGISTRY = SRC / "transcript" / "_table.py"


def _identifiers(node: ast.AST) -> set[str]:
    """Every name and attribute in an expression, lower case (``log.format``: log, format)."""
    out = set()
    for part in ast.walk(node):
        if isinstance(part, ast.Name):
            out.add(part.id.lower())
        elif isinstance(part, ast.Attribute):
            out.add(part.attr.lower())
    return out


def _strings(node: ast.expr, constants: dict[str, set[str]]) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return {
            e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
        }
    if isinstance(node, ast.Name):
        return constants.get(node.id, set())
    return set()


def _module_constants(tree: ast.Module) -> dict[str, set[str]]:
    """Module-level names bound to a tuple, list or set of strings."""
    out: dict[str, set[str]] = {}
    for statement in tree.body:
        value = getattr(statement, "value", None)
        targets = getattr(statement, "targets", None) or [getattr(statement, "target", None)]
        for target in targets:
            if isinstance(target, ast.Name) and isinstance(value, ast.Tuple | ast.List | ast.Set):
                out[target.id] = _strings(value, {})
    return out


def _own_modules(name: str) -> set[str]:
    """The modules the table names for a format (its reader's, its tests')."""
    entry = format_named(name)
    assert entry is not None
    refs = [entry.read or "", *(s.test for s in entry.sniffs)]
    return {ref.partition(":")[0] for ref in refs if ref}


def _branches(tree: ast.Module) -> Iterator[tuple[ast.AST, set[str], set[str]]]:
    """Each place that branches on strings: a comparison, a ``match`` on them, or a table
    keyed by them, with the strings and the names involved."""
    return _branches_with(tree, _module_constants(tree))


def _branches_with(
    tree: ast.Module, constants: dict[str, set[str]]
) -> Iterator[tuple[ast.AST, set[str], set[str]]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            strings = {s for o in operands for s in _strings(o, constants)}
            yield node, strings, _identifiers(node)
        elif isinstance(node, ast.Match):
            cases = [c.pattern for c in node.cases if isinstance(c.pattern, ast.MatchValue)]
            strings = {s for c in cases for s in _strings(c.value, constants)}
            yield node, strings, _identifiers(node.subject)
        elif isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Dict):
            keys = [k for k in node.value.keys if k is not None]
            strings = {s for k in keys for s in _strings(k, constants)}
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            yield node, strings, {w for t in targets for w in _identifiers(t)}


def format_comparisons(source: str, module: str = "") -> list[str]:
    """The places ``source`` branches on a format's name (``module``: its path under
    ``ipse.transcript`` as the table names modules, for a reader module telling apart the
    formats it reads). A dialect's name is the codec's to compare, not counted here."""
    names = set(FORMATS) - set(DIALECTS)
    found = []
    for node, strings, words in _branches(ast.parse(source)):
        named = strings & names
        if not named or any(n in w for n in _OTHER_NAMESPACES for w in words):
            continue
        if module.startswith("_formats.") and all(module in _own_modules(n) for n in named):
            continue
        found.append(f"{getattr(node, 'lineno', 0)}: {ast.unparse(node).splitlines()[0]}")
    return found


def test_the_scan_finds_what_it_forbids() -> None:
    forbidden = {
        'if name == "claude-code": pass': 1,
        'if fmt in ("cline", "swe-agent"): pass': 1,
        '_PARTLY = ("codex",)\nif log.format in _PARTLY: pass': 1,
        'x = "http-log" != source.format': 1,
        'match name:\n    case "openhands": pass\n    case _: pass': 1,
        'READERS = {"cline": 1, "other": 2}': 1,
        'AGENT_FILES = {"claude-code": "CLAUDE.md"}': 0,
        'if agent == "codex": pass': 0,
        '_HOOKS = ("claude-code",)\nif options.get("--hook") not in _HOOKS: pass': 0,
        'if dialect == "anthropic": pass': 0,
        "if entry.shape is Shape.LOG: pass": 0,
    }
    for source, count in forbidden.items():
        assert len(format_comparisons(source)) == count, source
    own = 'if fmt == "swe-agent": pass'
    assert format_comparisons(own, "_formats.swe_agent") == []
    assert len(format_comparisons(own, "_formats.cline")) == 1


def test_no_module_outside_the_table_branches_on_a_format_name() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if path == _REGISTRY:
            continue
        inside = (
            path.relative_to(SRC / "transcript")
            if path.is_relative_to(SRC / "transcript")
            else None
        )
        module = ".".join(inside.with_suffix("").parts) if inside else ""
        found += [
            f"{path.relative_to(SRC)}:{hit}" for hit in format_comparisons(path.read_text(), module)
        ]
    assert found == [], (
        "ask the format table (ipse.transcript._table.format_named) instead:\n" + "\n".join(found)
    )


# ------------------------------------------------------ no branches on dialect names elsewhere

# The names a body's dialect goes by: the codecs' own and ``openai``, the short name of Chat
# Completions that ``--format`` options take. ``anthropic`` and ``openai`` also name providers
# (the upstream whose cache rules and prices apply), so a branch on them counts only when what
# it tests names a dialect; the other names are only ever dialects.
_DIALECT_NAMES = set(DIALECTS) | {"openai"}
_SHARED_NAMES = {"anthropic", "openai"}
_DIALECT_WORDS = ("dialect", "format", "shape", "fmt")
_NOT_DIALECT_WORDS = ("provider", "agent")

# The dialect-name branches outside the transcript package (path: the branch's first line, as
# the scan gives it), each with why it stays; at most three.
ALLOWED_DIALECT_BRANCHES = {
    "handoff/_validate.py": (
        "_RULES: dict[str, Callable[[Sequence[Message]], list[Problem]]] = {'anthropic': "
        "_anthropic, 'openai-chat': _openai, 'openai-responses': _responses}",
        "what a rewritten history must satisfy before it is sent is the handoff's judgement, "
        "one rule set per API; the table is keyed by the codecs' own names",
    ),
    "prefix/_assemble.py": (
        "_SHAPES: dict[str, _Shape] = {'anthropic': _Shape('anthropic', Assembler._anthropic, "
        "False, True), 'openai': _Shape('openai', Assembler._openai, True, False)}",
        "the assembler builds requests itself (breakpoints, system messages) and takes only the "
        "two names its table has; the table is its one place for them",
    ),
    "twin/_rehydrate.py": (
        "fmt in FORMATS",
        "the twin offers the request front in two dialects and as text: a name it does not "
        "offer is refused with its own list, and the codec lays out the ones it does",
    ),
}


def _words_name(words: set[str], parts: tuple[str, ...]) -> bool:
    return any(p in w for p in parts for w in words)


def dialect_comparisons(source: str) -> list[str]:
    """The places ``source`` branches on a dialect's name: a comparison or ``in`` test, a
    ``match`` case, or a table keyed by dialect names, where what is tested names a dialect
    (dialect, format, shape, fmt), or where a name only a dialect has is tested (a table keyed
    by ``openai-chat``). What names a provider or an agent is another namespace."""
    found = []
    tree = ast.parse(source)
    constants = _module_constants(tree)
    for statement in tree.body:  # a table's keys stand for the table in ``in`` tests
        if isinstance(statement, ast.Assign | ast.AnnAssign) and isinstance(
            statement.value, ast.Dict
        ):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            keys = {s for k in statement.value.keys if k is not None for s in _strings(k, {})}
            constants.update({t.id: keys for t in targets if isinstance(t, ast.Name)})
    for node, strings, words in _branches_with(tree, constants):
        named = strings & _DIALECT_NAMES
        if not named or _words_name(words, _NOT_DIALECT_WORDS):
            continue
        if named <= _SHARED_NAMES and not _words_name(words, _DIALECT_WORDS):
            continue
        found.append(f"{getattr(node, 'lineno', 0)}: {ast.unparse(node).splitlines()[0]}")
    return found


def _outside_transcript() -> list[tuple[str, str]]:
    """Each dialect-name branch in ``ipse`` outside ``ipse.transcript``: (path, branch)."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if path.is_relative_to(SRC / "transcript"):
            continue
        for hit in dialect_comparisons(path.read_text()):
            found.append((str(path.relative_to(SRC)), hit.partition(": ")[2]))
    return found


def test_the_dialect_scan_finds_what_it_forbids() -> None:
    forbidden = {
        'if dialect == "openai-responses": pass': 1,
        'if call.dialect == "anthropic": pass': 1,
        'if fmt == "openai": pass': 1,
        'x = source.current().dialect != "anthropic"': 1,
        'if (shape == "anthropic") == (provider == "anthropic"): pass': 1,
        'if ex.dialect in ("openai-chat", "openai-responses"): pass': 1,
        '_OPENAI = ("openai-chat",)\nif dialect in _OPENAI: pass': 1,
        'match dialect:\n    case "openai-chat": pass\n    case _: pass': 1,
        '_LAST_EVENTS = {"openai-chat": b"[DONE]"}': 1,
        '_SHAPES = {"anthropic": 1, "openai": 2}': 1,
        '_SHAPES = {"anthropic": 1}\nif dialect not in _SHAPES: pass': 2,
        'if provider == "anthropic": pass': 0,
        'if ex.provider != "openai": pass': 0,
        'upstreams = {"anthropic": 1, "openai": 2}': 0,
        'if agent == "anthropic": pass': 0,
        'if name == "claude-code": pass': 0,
        "if dialect in DIALECTS: pass": 0,
        "found = codec(dialect)": 0,
    }
    for source, count in forbidden.items():
        assert len(dialect_comparisons(source)) == count, source


def test_at_most_three_dialect_branches_remain_outside_the_transcript_package() -> None:
    """A mechanism asks the codec (`ipse.transcript.codec`) what a dialect does; the few
    branches on a dialect's name outside the package are listed, with why, above."""
    assert len(ALLOWED_DIALECT_BRANCHES) <= 3
    found = _outside_transcript()
    allowed = {(path, branch) for path, (branch, _) in ALLOWED_DIALECT_BRANCHES.items()}
    new = [f"{path}: {branch}" for path, branch in found if (path, branch) not in allowed]
    assert new == [], "ask the codec (ipse.transcript.codec) instead:\n" + "\n".join(new)
    assert sorted(found) == sorted(allowed), "an allowed branch is gone: take it off the list"


@pytest.mark.parametrize("indent", [None, 2], ids=["one-line", "pretty"])
def test_prefix_names_a_file_as_detection_does(
    tmp_path: Path, cli: CliRun, indent: int | None
) -> None:
    """Prefix analysis names a file from its first line when that says session or log; a
    Gemini CLI session on one line was taken for a log of one request (its ``messages``), and
    analysed, while the same session indented was refused."""
    records = cases.gemini_session_jsonl()
    document = {**records[0], "messages": [r for r in records if r.get("id") in ("m3", "m4")]}
    path = cases.write_json(tmp_path / "session-x.json", document, indent=indent)
    assert detect(path) == "gemini-cli"
    done = cli("prefix", str(path))
    assert done.returncode == 2
    assert done.stderr.strip().endswith("not gemini-cli"), done.stderr
