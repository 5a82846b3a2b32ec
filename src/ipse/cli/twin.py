"""``ipse twin``: show, history, apply, rehydrate and export a twin's identity snapshots.

Thin front end over `ipse.twin`: parse, call the library, render (rich, or one JSON document
with ``--json``). Every command takes ``--store URL`` (default: ``IPSE_DATABASE_URL``, else
``ipse.db`` in IPSE_HOME). Bad input raises `InputError`, which the main handler prints as one
line with exit code 2; nothing is stored.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from ipse.cli._output import console, emit_json
from ipse.errors import InputError

_STORE = click.option(
    "--store",
    "store_url",
    metavar="URL",
    default=None,
    help="memory://, sqlite:///PATH or postgresql://... (default: IPSE_DATABASE_URL, else "
    "ipse.db in IPSE_HOME).",
)
_JSON = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")


@click.group("twin")
def twin_group() -> None:
    """Identity snapshots of twins: who they talk to, facts, commitments, open loops.

    \b
    Examples:
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
    from ipse.twin import dump_state, open_store

    with open_store(store_url) as store:
        snapshot = store.latest(twin_id)
        if snapshot is None:
            raise InputError(f"twin_id: no snapshot of twin {twin_id!r} in {store.url}")
        state = snapshot.state
    if as_json:
        emit_json({"twin_id": twin_id, **_summary(snapshot), "state": dump_state(state)})
        return
    out = console()
    out.print(f"[bold]{twin_id}[/bold] v{snapshot.version} {snapshot.state_hash[:19]}")
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
    from ipse.twin import open_store

    with open_store(store_url) as store:
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
    from ipse.fileio import read_bytes

    data = sys.stdin.buffer.read() if path == "-" else read_bytes(path)
    records: list[Any] = []
    for number, line in enumerate(data.decode("utf-8", errors="strict").splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except ValueError as exc:
            raise InputError("not valid JSON", path=path, position=f"line {number}") from exc
    return records


@twin_group.command("apply")
@click.argument("twin_id")
@click.argument("transitions", metavar="TRANSITIONS.jsonl")
@click.option("--config", "config_path", type=click.Path(), help="Twin TOML (policies).")
@click.option("--holder", default=None, help="Writer name for the lease (default host:pid).")
@click.option("--ttl", default=30.0, show_default=True, help="Lease duration in seconds.")
@_STORE
@_JSON
def apply_command(
    twin_id: str,
    transitions: str,
    config_path: str | None,
    holder: str | None,
    ttl: float,
    store_url: str | None,
    as_json: bool,
) -> None:
    """Apply transitions (one JSON object per line) and write a snapshot if identity changed.

    Each line is {"op": NAME, ...}; ops: establish_fact, supersede_fact, make_commitment,
    open_loop, close_loop, set_active_loop, set_counterparty, use_fact. All lines apply or
    none; the twin's lease is held while writing.

    \b
    Example:
      echo '{"op": "establish_fact", "text": "Prefers email"}' > turn.jsonl
      ipse twin apply acme-ada turn.jsonl --config twin.toml --json
    """
    from ipse.twin import apply_turn, load_config, open_store

    records = _read_jsonl(transitions)
    config = load_config(config_path) if config_path else None
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
    for note in turn.evicted:
        out.print(f"  fact left ({note['reason']}): {note['text']}")


@twin_group.command("rehydrate")
@click.argument("twin_id")
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
    twin_id: str, config_path: str, fmt: str, store_url: str | None, as_json: bool
) -> None:
    """Print the request prefix that resumes a twin: role, facts, commitments, open loops.

    Without a snapshot this is a cold start: the role alone.

    \b
    Example:
      ipse twin rehydrate acme-ada --config twin.toml --format openai
    """
    from ipse.twin import load_config, open_store, rehydrate

    config = load_config(config_path)
    with open_store(store_url) as store:
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
@click.option("--output", "-o", type=click.Path(), default=None, help="Write to a file.")
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
    from ipse.twin import export_state, open_store

    with open_store(store_url) as store:
        snapshot = store.latest(twin_id)
        if snapshot is None:
            raise InputError(f"twin_id: no snapshot of twin {twin_id!r} in {store.url}")
        document = export_state(snapshot.state, schema)
    if output:
        atomic_write(Path(output), json.dumps(document, indent=2, ensure_ascii=False) + "\n")
        if as_json:
            emit_json({"twin_id": twin_id, "schema": schema, "output": output})
        return
    emit_json(document)
