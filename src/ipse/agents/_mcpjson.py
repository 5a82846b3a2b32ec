"""ipse's entry in a JSON config's ``mcpServers`` (Claude Code's ``.mcp.json`` and
``.claude.json``, Gemini CLI's ``settings.json``, which it reads as JSON with comments).

Install sets ``mcpServers.ipse`` keeping every other byte (`ipse.agents._jsonedit`); a missing
file becomes an object, a blank one keeps its blank text before it; an ``ipse`` entry that is
not ipse's own is refused. Uninstall removes the entry when it is ipse's (by content), the
``mcpServers`` object when install created it (or when no marker says otherwise and it is left
empty), and the file when install created it and nothing else is left.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ipse.agents import _jsonedit as jsonedit
from ipse.agents._commands import SERVER, is_ipse_server
from ipse.agents._files import Edit, blank, blank_again, is_empty_object, json_text, parsed, read
from ipse.errors import InputError


def server_of(text: str | None, comments: bool = False) -> Any:
    """The ``mcpServers.ipse`` entry in a JSON config's text, or None."""
    document = parsed(text, comments)
    servers = document.get("mcpServers") if isinstance(document, dict) else None
    return servers.get(SERVER) if isinstance(servers, dict) else None


def add_entry(
    path: Path, entry: dict[str, Any], attrs: dict[str, str], comments: bool = False
) -> Edit:
    """The config with ipse's entry set, recording what install created in ``attrs``."""
    old = read(path)
    if old is None:
        attrs["config"] = "new"
        if not path.parent.exists():
            attrs["dir"] = "new"
    elif blank(old):
        attrs["config"] = "blank"
    text = json_text(path, old, comments)
    theirs = server_of(text, comments)
    if theirs is not None and not is_ipse_server(theirs):
        raise InputError(
            f"already has mcpServers.{SERVER} (not ipse's own); remove or rename it", path=path
        )
    new, created = jsonedit.set_member(text, ["mcpServers"], SERVER, entry, comments=comments)
    if "mcpServers" in created:
        attrs["servers"] = "new"
    return Edit(path, old, new)


def remove_entry(path: Path, attrs: dict[str, str], marked: bool, comments: bool = False) -> Edit:
    """The config without ipse's entry (its ``new`` None when install created the file and
    nothing else is left)."""
    old = read(path)
    if old is None or blank(old):
        return Edit(path, old, old)
    jsonedit.parse(old, path, comments=comments)
    if not is_ipse_server(server_of(old, comments)):
        return Edit(path, old, old)
    created = ["mcpServers"] if attrs.get("servers") == "new" or not marked else []
    new = jsonedit.remove_member(old, ["mcpServers"], SERVER, created, comments=comments)
    if attrs.get("config") == "new" and is_empty_object(new, comments):
        return Edit(path, old, None)
    return Edit(path, old, blank_again(new, attrs.get("config") == "blank", comments))


__all__ = ["add_entry", "remove_entry", "server_of"]
