"""``ipse verify``: prove a handoff kept every authored word and left the untouched part alone."""

from __future__ import annotations

from pathlib import Path

import click

from ipse.cli._output import console, emit_json, warn
from ipse.errors import CheckFailed
from ipse.handoff import verify
from ipse.handoff._shared import CHECKPOINT_TOOL
from ipse.transcript import FORMATS, load


@click.command("verify")
@click.argument("before", type=click.Path(path_type=Path))
@click.argument("after", type=click.Path(path_type=Path))
@click.option("--at", help="The cut the handoff used (checkpoint, now, or an index).")
@click.option(
    "--checkpoint-tool",
    default=CHECKPOINT_TOOL,
    show_default=True,
    help="The checkpoint tool's name (for --at checkpoint).",
)
@click.option("--format", "fmt", type=click.Choice(FORMATS), help="Format of BEFORE.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def verify_command(
    before: Path,
    after: Path,
    at: str | None,
    checkpoint_tool: str,
    fmt: str | None,
    as_json: bool,
) -> None:
    """Check AFTER keeps every authored text of BEFORE, in order, byte for byte.

    Exit 0 when nothing authored was lost or changed, 1 when something was, 2 on bad input.
    Without --at, the untouched part is the longest run of identical trailing messages.

    \b
    Examples:
      ipse verify session.jsonl stripped.json
      ipse verify request.json stripped.json --at checkpoint --json
    """
    sources = (load(before, fmt), load(after))
    for line in (w for source in sources for w in source.warnings):
        warn(line)
    old, new = (source.current() for source in sources)
    verdict = verify(old, new, at=at, checkpoint_tool=checkpoint_tool)
    if as_json:
        emit_json(verdict.to_json())
    else:
        out = console()
        status = "ok" if verdict.ok else "FAILED"
        out.print(
            f"{status}: {verdict.checked_texts - len(verdict.lost)}/{verdict.checked_texts} "
            f"authored texts found in order; {verdict.found_chars:,}/{verdict.authored_chars:,} "
            f"authored characters; untouched part ({verdict.tail_messages} messages) "
            f"{'identical' if verdict.tail_identical else 'CHANGED'}"
        )
        for lost in verdict.lost[:20]:
            out.print(f"lost: {lost}")
    if not verdict.ok:
        raise CheckFailed(
            f"{len(verdict.lost)} authored text(s) lost or changed"
            if verdict.lost
            else "the untouched part changed"
        )
