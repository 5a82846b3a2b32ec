"""Rendering helpers shared by the commands: one JSON document for ``--json``, rich otherwise,
and a progress bar that shows only on a terminal."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

import click

from ipse import jsonio

T = TypeVar("T")


def emit_json(document: Any) -> None:
    """Print one JSON document to stdout (indented, keys in insertion order)."""
    data = jsonio.dumps(document, option=jsonio.OPT_INDENT_2 | jsonio.OPT_NON_STR_KEYS)
    click.echo(data.decode("utf-8"))


def console(stderr: bool = False) -> Any:
    """A rich console for human output."""
    from rich.console import Console

    return Console(stderr=stderr, highlight=False)


def progress(items: Iterable[T], label: str, total: int | None = None) -> Iterator[T]:
    """Iterate with a progress bar on a terminal (stderr); silently when piped."""
    if not sys.stderr.isatty():
        yield from items
        return
    from rich.progress import track

    yield from track(items, description=label, total=total, console=console(stderr=True))


def warn(message: str) -> None:
    """One warning line on stderr."""
    click.echo(f"ipse: warning: {message}", err=True)
