"""``ipse twin``: show, history, apply, rehydrate and export a twin's identity snapshots.

Thin front end over `ipse.twin`: parse, call the library, render (rich, or one JSON document
with ``--json``). Every command takes ``--store URL`` (default: ``IPSE_DATABASE_URL``, else
``ipse.db`` in IPSE_HOME). Bad input raises `InputError`, which the main handler prints as one
line with exit code 2; nothing is stored. The commands that only read (show, history, rehydrate,
export) open the store with `_reading`: a database that does not exist is an error, never
created.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ipse._redact import redact
from ipse.cli._output import console, emit_json, warn
from ipse.errors import InputError, UsageError

if TYPE_CHECKING:
    from ipse.twin._shared import TwinStore

_STORE = click.option(
    "--store",
    "store_url",
    metavar="URL",
    default=None,
    help="memory://, sqlite:///PATH or postgresql://... (default: IPSE_DATABASE_URL, else "
    "ipse.db in IPSE_HOME).",
)
_JSON = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")


def _reading(store_url: str | None, *, cold: bool = False) -> TwinStore:
    """The twin store for a command that only reads: it must already exist (`NoStore`), or
    with ``cold`` an empty one stands in for it, with a warning."""
    from ipse.errors import NoStore
    from ipse.store import open_backend
    from ipse.twin._shared import TwinStore

    try:
        return TwinStore(open_backend(store_url, create=False))
    except NoStore as exc:
        if not cold:
            raise
        warn(f"{exc}; a cold start")
        return TwinStore(open_backend("memory://"))


def _twin_id(given: str | None, config: Any) -> str:
    """TWIN_ID as given, else the config's ``id``; a usage error when neither names one."""
    if given:
        return given
    if config is not None and config.twin_id:
        return str(config.twin_id)
    raise UsageError('missing TWIN_ID (give it, or set id = "..." in the --config file)')


@click.group("twin")
def twin_group() -> None:
    """Identity snapshots of twins: who they talk to, facts, commitments, open loops.

    A twin's id is given as TWIN_ID; commands that take --config use the config's id when
    TWIN_ID is left out. Store URLs: sqlite:///twins.db is relative to the current folder,
    sqlite:////abs/twins.db absolute (four slashes), postgresql://... for a server.

    \b
    Examples:
      ipse twin init acme-ada --config twin.toml --role "You are Ada, Acme's support twin."
      ipse twin tools --format anthropic > tools.json
      ipse twin apply acme-ada turn.jsonl
      ipse twin show acme-ada --json
      ipse twin rehydrate acme-ada --config twin.toml --format openai
    """


def _summary(snapshot: Any) -> dict[str, Any]:
    record = snapshot.record
    return {
        "version": record.version,
        "state_hash": record.state_hash,
        "schema": record.schema,
        "writer": record.writer,
        "token": record.token,
        "created_at": record.created_at,
        "notes": list(record.notes),
    }


@twin_group.command("show")
@click.argument("twin_id")
@_STORE
@_JSON
def show_command(twin_id: str, store_url: str | None, as_json: bool) -> None:
    """Show a twin's latest snapshot (as the current schema).

    \b
    Example:
      ipse twin show acme-ada --store sqlite:///twins.db --json
    """
    from ipse.twin._shared import dump_state

    with _reading(store_url) as store:
        snapshot = store.latest(twin_id)
        if snapshot is None:
            raise InputError(f"twin_id: no snapshot of twin {twin_id!r} in {redact(store.url)}")
        state = snapshot.state
    if as_json:
        emit_json({"twin_id": twin_id, **_summary(snapshot), "state": dump_state(state)})
        return
    out = console()
    out.print(f"{twin_id} v{snapshot.version} {snapshot.state_hash[:19]}", style="bold")
    out.print(f"talking with: {state.counterparty.account or '-'}")
    for fact in state.live_facts():
        out.print(f"  fact {fact.id}: {fact.text}" + (" (pinned)" if fact.pinned else ""))
    for text in state.commitments:
        out.print(f"  commitment: {text}")
    for loop in state.open_loops:
        mark = " (active)" if loop.id == state.active_loop else ""
        out.print(f"  loop {loop.id}: {loop.text}{mark}")


@twin_group.command("history")
@click.argument("twin_id")
@_STORE
@_JSON
def history_command(twin_id: str, store_url: str | None, as_json: bool) -> None:
    """List every stored snapshot of a twin, oldest first.

    \b
    Example:
      ipse twin history acme-ada --json
    """
    with _reading(store_url) as store:
        snapshots = store.history(twin_id)
    if as_json:
        emit_json({"twin_id": twin_id, "snapshots": [_summary(s) for s in snapshots]})
        return
    out = console()
    if not snapshots:
        out.print(f"{twin_id}: no snapshots")
    for s in snapshots:
        r = s.record
        notes = f" ({len(r.notes)} notes)" if r.notes else ""
        out.print(
            f"v{r.version} schema {r.schema} {r.state_hash[:19]} by {r.writer} token {r.token}"
            f"{notes}"
        )


def _read_jsonl(path: str) -> list[Any]:
    """The transitions of a JSONL file (or ``-``): valid UTF-8 text, one JSON value a line,
    no lone surrogates (a twin's text is hashed and stored as UTF-8), at least one line."""
    import orjson

    from ipse.fileio import check_text_head, max_input_bytes, read_bytes

    if path == "-":
        data = sys.stdin.buffer.read(max_input_bytes() + 1)
        if len(data) > max_input_bytes():
            raise InputError("input too large; raise the limit with IPSE_MAX_INPUT_BYTES=BYTES")
    else:
        check_text_head(path, expected="JSONL", empty_ok=True)
        data = read_bytes(path)
    if b"\0" in data:
        raise InputError("a binary file, not JSONL", path=path)
    records: list[Any] = []
    for number, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(
                "not valid UTF-8", path=path, position=f"line {number} byte {exc.start + 1}"
            ) from exc
        try:
            records.append(orjson.loads(line))  # strict: refuses lone surrogates and depth
        except orjson.JSONDecodeError as exc:
            what = (
                "a lone surrogate escape (\\ud800-\\udfff), which a twin cannot store"
                if "surrogate" in exc.msg
                else f"not valid JSON ({exc.msg})"
            )
            raise InputError(what, path=path, position=f"line {number} column {exc.colno}") from exc
    if not records:
        raise InputError("no transitions (the input is empty): nothing applied", path=path)
    return records


def _operations_epilog() -> str:
    from ipse.twin._shared import usage_lines

    return '\b\nOperations (one JSON object per line, {"op": NAME, ARG: value, ...}):\n' + (
        "\n".join(f"  {line}" for line in usage_lines())
    )


@twin_group.command("apply", epilog=_operations_epilog())
@click.argument("arguments", nargs=-1, metavar="[TWIN_ID] TRANSITIONS.jsonl")
@click.option("--config", "config_path", type=click.Path(), help="Twin TOML (policies).")
@click.option("--holder", default=None, help="Writer name for the lease (default host:pid).")
@click.option("--ttl", default=30.0, show_default=True, help="Lease duration in seconds.")
@_STORE
@_JSON
def apply_command(
    arguments: tuple[str, ...],
    config_path: str | None,
    holder: str | None,
    ttl: float,
    store_url: str | None,
    as_json: bool,
) -> None:
    """Apply transitions (one JSON object per line) and write a snapshot if identity changed.

    Each line is {"op": NAME, ...} (the operations and their arguments are listed below; `ipse
    twin tools` prints them as model tools). All lines apply or none; the twin's lease is held
    while writing. A change to a field that is not one of the config's identity fields does
    not make a snapshot, and the output says so. TRANSITIONS.jsonl may be - for stdin. When
    another writer holds the lease (or takes it over) nothing is written and the exit code is
    75: run it again.

    \b
    Example:
      echo '{"op": "establish_fact", "text": "Prefers email"}' > turn.jsonl
      ipse twin apply acme-ada turn.jsonl --config twin.toml --json
    """
    from ipse.twin import apply_turn, open_store
    from ipse.twin._shared import load_config

    if len(arguments) not in (1, 2):
        raise UsageError("expected [TWIN_ID] TRANSITIONS.jsonl (see ipse twin apply --help)")
    *given, transitions = arguments
    records = _read_jsonl(transitions)
    config = load_config(config_path) if config_path else None
    twin_id = _twin_id(given[0] if given else None, config)
    with open_store(store_url) as store:
        turn = apply_turn(store, twin_id, records, config=config, holder=holder, ttl=ttl)
    result = turn.to_json()
    if as_json:
        emit_json(result)
        return
    out = console()
    if turn.written is not None:
        out.print(f"{twin_id}: wrote v{turn.version} ({len(records)} transitions)")
    else:
        out.print(f"{twin_id}: identity unchanged, nothing written ({len(records)} transitions)")
    if turn.ignored:
        fields = ", ".join(turn.ignored)
        out.print(
            f"  changed outside the identity fields, not stored: {fields} (add them to "
            "[identity] fields in the twin's config to keep such changes)",
            markup=False,
        )
    for note in turn.evicted:
        out.print(f"  fact left ({note['reason']}): {note['text']}")


@twin_group.command("rehydrate")
@click.argument("twin_id", required=False)
@click.option("--config", "config_path", required=True, type=click.Path(), help="Twin TOML.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["anthropic", "openai", "text"]),
    default="anthropic",
    show_default=True,
    help="Shape of the request prefix.",
)
@_STORE
@_JSON
def rehydrate_command(
    twin_id: str | None, config_path: str, fmt: str, store_url: str | None, as_json: bool
) -> None:
    """Print the request prefix that resumes a twin: role, facts, commitments, open loops.

    Without a snapshot this is a cold start: the role alone (also when the store does not
    exist, with a warning naming it; nothing is created).

    \b
    Example:
      ipse twin rehydrate acme-ada --config twin.toml --format openai
    """
    from ipse.twin import rehydrate
    from ipse.twin._shared import load_config

    config = load_config(config_path)
    twin_id = _twin_id(twin_id, config)
    with _reading(store_url, cold=True) as store:
        result = rehydrate(store, twin_id, config)
    if as_json:
        emit_json(
            {
                "twin_id": twin_id,
                "cold": result.cold,
                "version": result.version,
                "state_hash": result.state_hash,
                "format": fmt,
                "prefix": result.render(fmt),
            }
        )
        return
    click.echo(result.to_bytes(fmt).decode("utf-8"), nl=fmt != "text")


@twin_group.command("export")
@click.argument("twin_id")
@click.option("--schema", "schema", type=int, default=3, show_default=True, help="2 or 3.")
@click.option(
    "--output",
    "-o",
    type=click.Path(),
    default=None,
    help="Write to a file (a new one is private, 0600; an existing one keeps its mode).",
)
@_STORE
@_JSON
def export_command(
    twin_id: str, schema: int, output: str | None, store_url: str | None, as_json: bool
) -> None:
    """Export a twin's latest state as a schema 2 or 3 document.

    \b
    Example:
      ipse twin export acme-ada --schema 2 --json
    """
    from ipse.fileio import atomic_write
    from ipse.twin._shared import export_state

    with _reading(store_url) as store:
        snapshot = store.latest(twin_id)
        if snapshot is None:
            raise InputError(f"twin_id: no snapshot of twin {twin_id!r} in {redact(store.url)}")
        document = export_state(snapshot.state, schema)
    if output:
        text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
        atomic_write(Path(output), text, private=True, make_folders=False)
        if as_json:
            emit_json({"twin_id": twin_id, "schema": schema, "output": output})
        return
    emit_json(document)


_CONFIG_TEMPLATE = """\
# A twin's configuration: see `ipse twin --help`.
id = {twin_id}
role = {role}

[identity]            # which fields make a change worth a snapshot
fields = ["counterparty", "facts", "commitments", "open_loops", "active_loop"]

[decay]               # at most this many facts; the least recently used leave first
max_facts = 40
half_life_days = 14
"""


@twin_group.command("init")
@click.argument("twin_id", required=False)
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path),
    help="Twin TOML: read when it exists, else written from --role (never overwritten).",
)
@click.option("--role", help="The twin's stable system text, for a new config file.")
@click.option("--counterparty", default="", help="Who the twin talks to, if known.")
@_STORE
@_JSON
def init_command(
    twin_id: str | None,
    config_path: Path | None,
    role: str | None,
    counterparty: str,
    store_url: str | None,
    as_json: bool,
) -> None:
    """Start a twin: write its config (if asked) and its first snapshot, a cold start.

    Refuses a twin that already has snapshots.

    \b
    Examples:
      ipse twin init acme-ada --config twin.toml --role "You are Ada, Acme's support twin."
      ipse twin init acme-42 --counterparty dana@example.com --json
    """
    from ipse.twin import open_store, parse_config
    from ipse.twin._shared import init_twin, load_config

    config = None
    text = ""
    wrote_config = False
    if config_path is not None and config_path.exists():
        if role:
            raise UsageError(f"{config_path} exists: --role only applies to a new config file")
        config = load_config(config_path)
    elif config_path is not None:
        if not role or not twin_id:
            raise UsageError(f"{config_path} does not exist: give TWIN_ID and --role to write it")
        text = _CONFIG_TEMPLATE.format(twin_id=_toml_string(twin_id), role=_toml_string(role))
        config = parse_config(_parse_toml(text))
    twin_id = _twin_id(twin_id, config)
    with open_store(store_url) as store:
        first = init_twin(store, twin_id, account=counterparty, config=config)
    if config_path is not None and not config_path.exists():
        from ipse.fileio import atomic_write

        atomic_write(config_path, text)
        wrote_config = True
    result = {
        "twin_id": twin_id,
        "version": first.version,
        "state_hash": first.state_hash,
        "config": str(config_path) if config_path else None,
        "wrote_config": wrote_config,
    }
    if as_json:
        emit_json(result)
        return
    out = console()
    out.print(f"{twin_id}: wrote v{first.version} (cold start)", markup=False)
    if wrote_config:
        out.print(f"wrote {config_path}", markup=False)


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def _parse_toml(text: str) -> dict[str, Any]:
    import tomllib

    return tomllib.loads(text)


@twin_group.command("tools")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["anthropic", "openai"]),
    default="anthropic",
    show_default=True,
    help="Anthropic tool definitions or OpenAI function tools.",
)
def tools_command(fmt: str) -> None:
    """Print the transitions as tool definitions a model can call (one JSON array).

    Give them to the twin's model; apply its calls with `ipse.twin.dispatch`, or write them
    as {"op": NAME, ...} lines for `ipse twin apply`.

    \b
    Example:
      ipse twin tools --format openai > twin-tools.json
    """
    from ipse.twin._shared import tool_definitions

    emit_json(tool_definitions(fmt))
