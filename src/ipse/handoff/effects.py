"""What a tool call did, read from its input: the knowledge the handoff's ledger is made of.

Shared with the measurement above the handoff (`ipse.probe` finds a session's facts with it):
`artifacts` (files created, edited, deleted, moved; commits and branches), `read_paths` (the
files a call reads), `command_of` and `first_line` (the shell command a call runs),
`workdir_of` (where it ran), `exit_status` (what its result says of it), `strings` (every
string of a call's input). The rules are in `ipse.handoff._effects`.
"""

from __future__ import annotations

from ipse.handoff._effects import (
    PATH_KEYS,
    Artifact,
    artifacts,
    command_of,
    exit_status,
    first_line,
    read_path,
    read_paths,
    shell_artifacts,
    strings,
    workdir_of,
)

__all__ = [
    "PATH_KEYS",
    "Artifact",
    "artifacts",
    "command_of",
    "exit_status",
    "first_line",
    "read_path",
    "read_paths",
    "shell_artifacts",
    "strings",
    "workdir_of",
]
