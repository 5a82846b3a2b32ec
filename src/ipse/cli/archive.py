"""``ipse recall`` and ``ipse archive list``: find and give back what a handoff removed.

Both read the caller's own sessions unless told otherwise, by the rule every front end shares
(`ipse.archive.scope_for`): the session ``IPSE_SESSION`` or the agent CLI names in the
environment, else the sessions filed under the project of the working folder; ``--session``
names one, ``--scope all`` reads every session.

Archived arguments and thinking often hold secrets, so ``archive list`` shows each item's
argument preview as a length and short hash unless ``--show-values`` asks for the text;
``recall`` is the way to see an item whole, ``recall --grep`` shows a line of each match
(credentials masked). On a terminal, ``recall`` escapes control characters; piped, it writes
the exact bytes. Both only read: a store that does not exist is an error, never created."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from ipse import jsonio
from ipse._redact import fingerprint
from ipse.cli._output import clean, console, emit_json, print_table

_SCOPE = click.Choice(["session", "project", "all"])
_KIND = click.Choice(["read", "edit", "command", "other"])
_STORE_HELP = "Store URL (default: IPSE_DATABASE_URL, else ipse.db in IPSE_HOME)."


def _caller() -> Any:
    from ipse.archive._shared import cli_caller

    return cli_caller(os.environ, os.getcwd())


@click.command("recall")
@click.argument("item_id", required=False)
@click.option("--grep", "query", metavar="TEXT", help="Find items holding every word of TEXT.")
@click.option("--path", metavar="P", help="Find items that named P (a file or a folder above).")
@click.option("--kind", type=_KIND, help="Find items of this kind (what the call did).")
@click.option("--session", help="Look in this session (an agent CLI's id or session:<id>).")
@click.option("--scope", type=_SCOPE, help="Look in the session, the project, or all sessions.")
@click.option("--limit", type=click.IntRange(1, 100), default=10, show_default=True)
@click.option("--store", help=_STORE_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def recall_command(
    item_id: str | None,
    query: str | None,
    path: str | None,
    kind: str | None,
    session: str | None,
    scope: str | None,
    limit: int,
    store: str | None,
    as_json: bool,
) -> None:
    """Print a removed tool call and its result exactly as they were (one JSON line each), or,
    with --grep, --path or --kind, the best matches with their ids and a line of each.

    Without --session or --scope an id is looked up in this session (IPSE_SESSION, the
    agent CLI's session id), then in this project's sessions; a search reads this session, or
    without one this project's. An id may be given by its start (six characters or more, as
    the ledger shows it) when no other id there begins so.

    \b
    Examples:
      ipse recall toolu_01A2b3C4d5
      ipse recall call_00_rTMxF5EBqc --session f0a5c3d2-... --json
      ipse recall --grep "KeyError parse_config"
      ipse recall --path src/app/config.py --kind edit --scope project
      ipse recall --grep timeout --scope all --json
    """
    from ipse.archive import open_archive, recall_item, search_items
    from ipse.errors import UsageError

    searching = query is not None or path is not None or kind is not None
    if searching == (item_id is not None):
        raise UsageError("recall: give an ID, or --grep, --path or --kind to search")
    archive = open_archive(store, create=False)
    try:
        if item_id is None:
            searched = search_items(
                archive,
                _caller(),
                query=query,
                path=path,
                kind=kind,
                session=session,
                scope=scope,
                limit=limit,
            )
        else:
            found = recall_item(archive, _caller(), item_id, session=session, scope=scope)
    finally:
        archive.close()
    if item_id is None:
        _print_matches(searched, as_json)
    else:
        _print_item(found, as_json)


def _print_item(found: Any, as_json: bool) -> None:
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


def _print_matches(searched: Any, as_json: bool) -> None:
    found, scope = searched.found, searched.scope
    if as_json:
        emit_json(
            {
                "scope": scope.describe(),
                "method": found.method,
                "matches": [m.to_json() for m in found.matches],
            }
        )
        return
    out = console()
    if found.method == "scan":
        out.print("(this Python's SQLite has no FTS5: every item in scope was read)")
    if not found.matches:
        out.print(f"no match in {clean(scope.describe())}")
        return
    columns = [("id", "left"), ("session", "left"), ("kind", "left"), ("tool", "left")]
    columns.append(("found", "left"))
    rows = [
        [m.item.id, m.item.session, m.item.action, m.item.tool, m.excerpt] for m in found.matches
    ]
    print_table(out, f"in {scope.describe()} (`ipse recall ID` prints one whole)", columns, rows)


@click.group("archive")
def archive_group() -> None:
    """What handoffs removed and archived.

    \b
    Examples:
      ipse archive list
      ipse archive list 4d5611e5-241a-462a-8d15-5122611a9569 --json
      ipse archive list --scope all
    """


@archive_group.command("list")
@click.argument("session", required=False)
@click.option("--scope", type=_SCOPE, help="Without SESSION: the sessions of this scope.")
@click.option("--kind", type=_KIND, help="With SESSION: only items of this kind.")
@click.option("--store", help=_STORE_HELP)
@click.option(
    "--show-values",
    is_flag=True,
    help="Show argument previews as text (default: their length and a short hash).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def list_command(
    session: str | None,
    scope: str | None,
    kind: str | None,
    store: str | None,
    show_values: bool,
    as_json: bool,
) -> None:
    """List the items a session archived (tool, kind, argument preview, size); without SESSION,
    the sessions of this session's project (or --scope all: every session) with their counts.

    Previews of arguments and thinking may hold secrets: they are shown as a length and a
    short hash unless --show-values is given (`ipse recall ID` prints an item whole).

    \b
    Examples:
      ipse archive list
      ipse archive list --scope all --json
      ipse archive list 4d5611e5-241a-462a-8d15-5122611a9569
      ipse archive list session:4d5611e5-241a-462a-8d15-5122611a9569 --kind edit
    """

    from ipse.archive import open_archive
    from ipse.archive._shared import list_sessions
    from ipse.errors import InputError

    archive = open_archive(store, create=False)
    try:
        if session is None:
            sessions, where = list_sessions(archive, _caller(), scope=scope)
            everywhere = len(archive.sessions()) if where.name != "all" else len(sessions)
        else:
            items = archive.items(session)
    finally:
        archive.close()
    if session is None:
        _print_sessions(sessions, where, everywhere - len(sessions), as_json)
        return
    if kind is not None:
        items = [i for i in items if i.action == kind]
    if not items:
        raise InputError(f"no archived items for session {session!r}")
    if as_json:
        emit_json({"session": session, "items": [_item_json(i, show_values) for i in items]})
        return
    names = ("id", "kind", "tool", "preview", "bytes")
    columns = [(c, "right" if c == "bytes" else "left") for c in names]
    rows = [
        [
            item.id,
            item.action,
            item.tool,
            item.preview if show_values else _hidden(item.preview),
            f"{item.size:,}",
        ]
        for item in items
    ]
    print_table(console(), f"archived from {session}", columns, rows)


def _print_sessions(
    sessions: list[tuple[str, int]], where: Any, others: int, as_json: bool
) -> None:
    if as_json:
        emit_json(
            {
                "scope": where.describe(),
                "sessions": [{"session": s, "items": n} for s, n in sessions],
                "other_sessions": others,
            }
        )
        return
    out = console()
    rows = [[name, str(count)] for name, count in sessions]
    columns = [("session", "left"), ("items", "right")]
    print_table(out, f"archived sessions ({where.describe()})", columns, rows)
    if others:
        out.print(f"{others} more session(s) elsewhere in the archive: --scope all lists them")


def _hidden(preview: str) -> str:
    return fingerprint(preview) if preview else ""


def _item_json(item: Any, show_values: bool) -> dict[str, Any]:
    document: dict[str, Any] = item.to_json()
    if not show_values:
        document["preview"] = _hidden(document["preview"])
    return document
