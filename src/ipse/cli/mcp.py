"""``ipse mcp``: serve the checkpoint, recall, state and twin tools over MCP (stdio or HTTP)."""

from __future__ import annotations

from pathlib import Path

import click

from ipse.cli._output import warn

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


@click.command("mcp")
@click.option("--http", "port", type=click.IntRange(1, 65535), help="Serve streamable HTTP.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address for --http.")
@click.option(
    "--state-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("state"),
    envvar="IPSE_STATE_DIR",
    show_default=True,
    help="The state folder of the state_* tools.",
)
@click.option("--store", "store_url", metavar="URL", help="Twin store URL (twin_* tools).")
@click.option("--twin", help="The twin the twin_* tools act on.")
@click.option(
    "--twin-config",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The twin's TOML (role and policies).",
)
@click.option("--archive", "archive_url", metavar="URL", help="Archive URL (default store).")
@click.option("--session", help="Session the checkpoints are stored under.")
def mcp_command(
    port: int | None,
    host: str,
    state_dir: Path,
    store_url: str | None,
    twin: str | None,
    twin_config: Path | None,
    archive_url: str | None,
    session: str | None,
) -> None:
    """Serve ipse's tools to an agent over MCP (stdio; streamable HTTP with --http PORT).

    Tools: micro_handoff, recall, state_resume, state_next, state_invariant,
    state_checkpoint; with --twin also twin_show, twin_<transition>, twin_rehydrate.
    Over stdio ipse answers by itself (8 MiB at most a message); --http needs ipse[mcp].

    \b
    Examples:
      ipse mcp
      ipse mcp --http 8766 --twin acme-ada --store sqlite:///twins.db
      ipse install --agent claude-code      (registers this server)
    """
    from ipse.mcp import Settings
    from ipse.mcp._shared import default_session, serve_http, serve_stdio

    if port is not None:
        from ipse.mcp._shared import require_sdk

        require_sdk()  # a missing extra is one line before anything starts
    settings = Settings(
        session=session or default_session(),
        state_dir=state_dir,
        archive_url=archive_url,
        store_url=store_url,
        twin=twin,
        twin_config=twin_config,
    )
    if port is None:
        serve_stdio(settings)
        return
    if host not in _LOOPBACK:
        warn(f"serving on {host}: every tool (state, archive, twins) is open to that network")
    serve_http(settings, host, port)
