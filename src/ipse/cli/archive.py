"""``ipse recall`` and ``ipse archive list``: give back what a handoff removed.

Archived arguments and thinking often hold secrets, so ``archive list`` shows each item's
argument preview as a length and short hash unless ``--show-values`` asks for the text;
``recall`` is the way to see an item whole. On a terminal, ``recall`` escapes control
characters; piped, it writes the exact bytes. Both only read: a store that does not exist is
an error, never created."""

from __future__ import annotations

import sys
from typing import Any

import click

from ipse import jsonio
from ipse.cli._output import clean, console, emit_json, print_table
from ipse.redact import fingerprint


@click.command("recall")
@click.argument("item_id")
@click.option("--session", help="The session, when the id is in several.")
@click.option("--store", help="Store URL (default: IPSE_DATABASE_URL, else ipse.db in IPSE_HOME).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def recall_command(item_id: str, session: str | None, store: str | None, as_json: bool) -> None:
    """Print a removed tool call and its result exactly as they were (one JSON line each).

    \b
    Examples:
      ipse recall toolu_01A2b3C4d5
      ipse recall call_00_rTMxF5EBqc --session sha256-3f2a... --json
    """

    from ipse.archive import open_archive

    archive = open_archive(store, create=False)
    try:
        found = archive.recall(item_id, session)
    finally:
        archive.close()
    if as_json:
        emit_json(
            {
                **found.item.to_json(),
                "call": jsonio.loads(found.call),
                "result": jsonio.loads(found.result) if found.result is not None else None,
            }
        )
        return
    lines = [found.call] + ([found.result] if found.result is not None else [])
    if sys.stdout.isatty():
        for line in lines:
            click.echo(clean(line.decode("utf-8", "replace")))
        return
    stdout = sys.stdout.buffer
    for line in lines:
        stdout.write(line + b"\n")
    stdout.flush()


@click.group("archive")
def archive_group() -> None:
    """What handoffs removed and archived.

    \b
    Examples:
      ipse archive list
      ipse archive list 4d5611e5-241a-462a-8d15-5122611a9569 --json
    """


@archive_group.command("list")
@click.argument("session", required=False)
@click.option("--store", help="Store URL (default: IPSE_DATABASE_URL, else ipse.db in IPSE_HOME).")
@click.option(
    "--show-values",
    is_flag=True,
    help="Show argument previews as text (default: their length and a short hash).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def list_command(session: str | None, store: str | None, show_values: bool, as_json: bool) -> None:
    """List the items a session archived (tool, argument preview, size); without SESSION, sessions.

    Previews of arguments and thinking may hold secrets: they are shown as a length and a
    short hash unless --show-values is given (`ipse recall ID` prints an item whole).

    \b
    Examples:
      ipse archive list
      ipse archive list 4d5611e5-241a-462a-8d15-5122611a9569
    """

    from ipse.archive import open_archive
    from ipse.errors import InputError

    archive = open_archive(store, create=False)
    try:
        if session is None:
            sessions = archive.sessions()
            if as_json:
                emit_json({"sessions": [{"session": s, "items": n} for s, n in sessions]})
                return
            rows = [[name, str(count)] for name, count in sessions]
            columns = [("session", "left"), ("items", "right")]
            print_table(console(), "archived sessions", columns, rows)
            return
        items = archive.items(session)
    finally:
        archive.close()
    if not items:
        raise InputError(f"no archived items for session {session!r}")
    if as_json:
        emit_json({"session": session, "items": [_item_json(i, show_values) for i in items]})
        return
    columns = [(c, "right" if c == "bytes" else "left") for c in ("id", "kind", "tool", "preview")]
    columns.append(("bytes", "right"))
    rows = [
        [
            item.id,
            item.kind,
            item.tool,
            item.preview if show_values else _hidden(item.preview),
            f"{item.size:,}",
        ]
        for item in items
    ]
    print_table(console(), f"archived from {session}", columns, rows)


def _hidden(preview: str) -> str:
    return fingerprint(preview) if preview else ""


def _item_json(item: Any, show_values: bool) -> dict[str, Any]:
    document: dict[str, Any] = item.to_json()
    if not show_values:
        document["preview"] = _hidden(document["preview"])
    return document
