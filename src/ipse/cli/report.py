"""``ipse report``: write one offline HTML page of a session's, log's or proxy record's tokens."""

from __future__ import annotations

import shlex
import sys
import webbrowser
from pathlib import Path

import click

from ipse.cli._output import console, emit_json, progress, terminal_progress, warn
from ipse.transcript import FORMATS


@click.command("report")
@click.argument("input_path", metavar="INPUT", type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("report.html"),
    show_default=True,
    help="Where to write the page.",
)
@click.option(
    "--open",
    "open_page",
    is_flag=True,
    help="Open the page in a browser afterwards (without one, say so on stderr).",
)
@click.option("--format", "fmt", type=click.Choice(FORMATS), help="Name the input format.")
@click.option(
    "--provider",
    type=click.Choice(["anthropic", "openai", "vllm"]),
    help="Whose prompt cache to model (default: from the requests).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the numbers as one JSON document.")
def report_command(
    input_path: Path,
    output: Path,
    open_page: bool,
    fmt: str | None,
    provider: str | None,
    as_json: bool,
) -> None:
    """Write one self-contained HTML page: context size per request (the sawtooth, with
    compactions, handoffs and resets marked), what fills the context, the prompt cache per
    request with every lost reuse and its cost, and what a micro-handoff would save.

    INPUT is anything ipse reads: a Claude Code session, a log of HTTP exchanges (a folder, JSONL
    or HAR), or an `ipse proxy --record` file. The page needs no network: no scripts, fonts or
    styles are fetched, so it can be mailed or archived.

    \b
    Examples:
      ipse report ~/.claude/projects/p/4d5611e5.jsonl -o session.html --open
      ipse report captured-requests/ --json
    """
    from ipse.fileio import check_output
    from ipse.report import collect, write_report

    check_output(output)  # before the work: a missing folder is not made
    invoked = sys.argv[1:2] == ["report"]  # run as `ipse report ...`, not from a library call
    command = shlex.join(
        ["ipse", *sys.argv[1:]] if invoked else ["ipse", "report", str(input_path)]
    )
    with terminal_progress(quiet=as_json):
        data = collect(
            str(input_path),
            format=fmt,
            provider=provider,
            command=command,
            progress=lambda items: progress(items, "analysing"),
        )
    size = write_report(data, output)
    if not as_json:
        for line in data.warnings:
            warn(line)
    if as_json:
        emit_json({**data.to_json(), "output": str(output), "bytes": size})
    elif data.no_requests:
        console().print(
            f"wrote {output} ({size:,} bytes; a {data.format} file records no requests: the "
            "conversation is one point)",
            markup=False,
        )
    else:
        console().print(
            f"wrote {output} ({size:,} bytes, {len(data.points):,} requests)", markup=False
        )
    if open_page and not webbrowser.open(output.resolve().as_uri()):
        warn(f"no browser found to open the page: open {output.resolve()} yourself")
