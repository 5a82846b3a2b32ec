"""``ipse state``: the state directory's commands (a thin front end over `ipse.statedir`).

Every command works on ``./state`` or ``--dir PATH`` (or ``$IPSE_STATE_DIR``); every reporting
command takes ``--json``. The hook modes (``--hook claude-code``) stay silent and succeed when
there is no state folder, so an installed hook never breaks a session in another project.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ipse import jsonio
from ipse.agents import AGENTS as AGENT_NAMES
from ipse.cli._output import clean, console, emit_json, warn
from ipse.errors import CheckFailed, InputError, UsageError

F = TypeVar("F", bound=Callable[..., Any])

HOOKS = click.Choice(["claude-code"])


def _dir_option(func: F) -> F:
    option = click.option(
        "--dir",
        "folder",
        type=click.Path(path_type=Path, file_okay=False),
        default=Path("state"),
        envvar="IPSE_STATE_DIR",
        show_default=True,
        help="The state folder.",
    )
    return option(func)


def _json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")(func)


def _utf8(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Refuse an argument that is not valid UTF-8 (the OS hands its bytes over as lone
    surrogates): state files are UTF-8 text, so it could only fail later, half-written."""
    for text in value if isinstance(value, tuple) else (value,):
        if isinstance(text, str):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InputError(
                    f"{param.human_readable_name}: not valid UTF-8 (byte {exc.start + 1})"
                ) from None
    return value


def _say(text: str) -> None:
    console().print(text, markup=False, soft_wrap=True)


def _record_json(record: Any) -> dict[str, Any]:
    return dict(record.data)


@click.group("state")
def state_group() -> None:
    """The state directory: goal, invariants, next step, WAL, receipts, canary, hooks.

    \b
    Examples:
      ipse state init --goal "Port the parser to Rust" --done "all tests pass"
      ipse state invariant "No regex-based lexer" --reason "too slow on 1 MB inputs"
      ipse state next "Write the tokenizer for string literals"
      ipse state resume --budget 2000
      ipse state verify
    """


@state_group.command("init")
@click.option("--goal", required=True, callback=_utf8, help="What the task is.")
@click.option("--done", default=None, callback=_utf8, help="What counts as done.")
@_dir_option
@_json_option
def init_command(goal: str, done: str | None, folder: Path, as_json: bool) -> None:
    """Create the state folder: 00_goal.md, 10_invariants.md, 99_next.md and .wal.

    The goal is written once: a second init is refused, and a later edit is caught by verify.

    \b
    Example:
      ipse state init --goal "Add OAuth login" --done "the e2e login test passes"
    """
    from ipse.statedir import init

    record = init(folder, goal, done)
    if as_json:
        emit_json({"folder": str(folder), "record": _record_json(record)})
    else:
        _say(f"initialised {folder}/ (00_goal.md, 10_invariants.md, 99_next.md, .wal)")


@state_group.command("invariant")
@click.argument("text", required=False, callback=_utf8)
@click.option("--reason", callback=_utf8, help="Why (the reason is kept with it).")
@click.option(
    "--explain",
    metavar="REASON",
    callback=_utf8,
    help="Instead of adding one, vouch for text added to 10_invariants.md by hand.",
)
@_dir_option
@_json_option
def invariant_command(
    text: str | None, reason: str | None, explain: str | None, folder: Path, as_json: bool
) -> None:
    """Append a decision or a rejected approach, with its reason, to 10_invariants.md.

    The file is append-only: verify catches any rewrite of earlier lines, and flags text added
    by hand until `--explain` vouches for it.

    \b
    Example:
      ipse state invariant "Do not mock the database" --reason "mocks hid a migration bug"
      ipse state invariant --explain "copied the list from the design review"
    """
    from ipse.statedir import add_invariant
    from ipse.statedir import explain as vouch

    if explain is not None:
        if text is not None or reason is not None:
            raise UsageError("--explain takes no TEXT and no --reason")
        record = vouch(folder, explain)
        done = f"vouched for {folder}/10_invariants.md as it stands (WAL line {record.seq})"
    else:
        if text is None or reason is None:
            raise UsageError("give TEXT and --reason (or --explain REASON)")
        record = add_invariant(folder, text, reason)
        done = f"appended to {folder}/10_invariants.md (WAL line {record.seq})"
    if as_json:
        emit_json(_record_json(record))
    else:
        _say(done)


@state_group.command("next")
@click.argument("text", callback=_utf8)
@_dir_option
@_json_option
def next_command(text: str, folder: Path, as_json: bool) -> None:
    """Set the next step (the program counter): log it, then replace 99_next.md atomically.

    \b
    Example:
      ipse state next "Run the migration against a copy of production"
    """
    from ipse.statedir import set_next

    record = set_next(folder, text)
    if as_json:
        emit_json(_record_json(record))
    else:
        _say(f"next step set (WAL line {record.seq})")


_HOOK_INPUT_LIMIT = 1 << 20  # a hook's JSON payload is a few hundred bytes


def _hook_trigger() -> str:
    if sys.stdin is None or sys.stdin.isatty():
        return ""
    try:
        # bounded read and bounded depth: a hook never hangs, fills memory or fails the agent
        data = jsonio.loads(sys.stdin.buffer.read(_HOOK_INPUT_LIMIT) or b"{}")
    except (ValueError, OSError):
        return ""
    if not isinstance(data, dict):
        return ""
    event = data.get("hook_event_name") or ""
    trigger = data.get("trigger") or data.get("source") or ""
    return f" ({event} {trigger})".replace(" )", ")") if event or trigger else ""


@state_group.command("checkpoint")
@click.argument("message", callback=_utf8)
@click.option("--hook", type=HOOKS, default=None, help="Run as an agent hook (reads its stdin).")
@_dir_option
@_json_option
def checkpoint_command(message: str, hook: str | None, folder: Path, as_json: bool) -> None:
    """Log one state transition as a WAL line.

    \b
    Examples:
      ipse state checkpoint "tokenizer done; all unit tests pass"
      ipse state checkpoint --hook claude-code "context compaction"   (a PreCompact hook)
    """
    from ipse.statedir import log_transition
    from ipse.statedir._shared import WAL

    if hook is not None:
        if not (folder / WAL).is_file():
            return
        message += _hook_trigger()
    record = log_transition(folder, message)
    if as_json:
        emit_json(_record_json(record))
    elif hook is None:
        _say(f"checkpoint logged (WAL line {record.seq})")


@state_group.command("resume")
@click.option(
    "--budget", type=click.IntRange(min=1), default=None, help="Keep within this many tokens."
)
@click.option("--hook", type=HOOKS, default=None, help="Print what this agent's hook expects.")
@_dir_option
@_json_option
def resume_command(budget: int | None, hook: str | None, folder: Path, as_json: bool) -> None:
    """Print the state files in reading order, then the last WAL entry.

    When 99_next.md is missing, torn, or does not match its last WAL record, the WAL's
    recorded next step is printed instead, with a note. Reads the WAL from its end.

    \b
    Examples:
      ipse state resume
      ipse state resume --budget 1500
      ipse state resume --hook claude-code     (a SessionStart hook)
    """
    from ipse.statedir import resume

    if hook is not None and not folder.is_dir():
        return
    view = resume(folder)
    count = None
    if budget is not None:
        from ipse._tokens import default_counter

        count = default_counter().count
    text = view.text(budget, count)
    if hook is not None:
        from ipse.statedir._shared import hook_json

        click.echo(hook_json(text))
    elif as_json:
        document = view.to_json()
        document["text"] = text
        emit_json(document)
    else:
        for line in view.warnings:
            warn(line)
        click.echo(clean(text), nl=False)


@state_group.command("stamp")
@click.argument("claim", callback=_utf8)
@click.option(
    "--artifact",
    "artifacts",
    multiple=True,
    required=True,
    type=click.Path(path_type=Path),
    help="A file the claim rests on (repeat for more).",
)
@click.option("--git", "use_git", is_flag=True, help="Also bind to git HEAD and dirtiness.")
@_dir_option
@_json_option
def stamp_command(
    claim: str, artifacts: tuple[Path, ...], use_git: bool, folder: Path, as_json: bool
) -> None:
    """Make a receipt binding a claim to the sha256 of each artifact (and git HEAD).

    \b
    Example:
      ipse state stamp "parser handles UTF-16" --artifact src/parse.rs --artifact out.log --git
    """
    from ipse.statedir import stamp

    receipt = stamp(folder, claim, list(artifacts), use_git)
    if as_json:
        emit_json(receipt)
    else:
        _say(f"receipt {receipt['id'][:12]} for {len(receipt['artifacts'])} artifact(s)")


@state_group.command("verify")
@_dir_option
@_json_option
def verify_command(folder: Path, as_json: bool) -> None:
    """Re-check the goal latch, the append-only invariants, the next step, every receipt.

    Prints each violation; exits 1 when there is any.

    \b
    Example:
      ipse state verify --json
    """
    from ipse.statedir import verify_state

    report = verify_state(folder)
    if as_json:
        emit_json(report.to_json())
    else:
        for line in report.violations:
            _say(f"violation: {line}")
        for line in report.warnings:
            _say(f"warning: {line}")
        if report.ok:
            _say(f"{folder}/: verified, no violations")
    if not report.ok:
        raise CheckFailed(f"{len(report.violations)} violation(s) in {folder}/")


@state_group.command("rotate")
@_dir_option
@_json_option
def rotate_command(folder: Path, as_json: bool) -> None:
    """Start a new WAL carrying what verification needs; keep the old one beside it.

    \b
    Example:
      ipse state rotate
    """
    from ipse.statedir import rotate

    name, record = rotate(folder)
    if as_json:
        emit_json({"previous": name, "record": _record_json(record)})
    else:
        _say(f"new WAL started; the old one is kept as {folder}/{name}")


@state_group.command("canary")
@click.option("--agent", "command", required=True, help="The agent command (a shell line).")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1),
    default=600.0,
    show_default=True,
    help="Seconds before the agent is stopped (and the check fails).",
)
@_dir_option
@_json_option
def canary_command(command: str, timeout: float, folder: Path, as_json: bool) -> None:
    """Check that an agent really reads the state: plant a token, ask, judge.

    The prompt reaches the agent on stdin, in $IPSE_CANARY_PROMPT, and in place of {prompt}.

    \b
    Examples:
      ipse state canary --agent "claude -p"
      ipse state canary --agent "codex exec {prompt}"
    """
    from ipse.statedir._shared import canary

    result = canary(folder, command, timeout)
    if as_json:
        emit_json(result.to_json())
    else:
        _say(("passed: " if result.passed else "failed: ") + result.reason)
    if not result.passed:
        raise CheckFailed(f"canary failed: {result.reason}")


AGENTS = click.Choice([*AGENT_NAMES, "generic"])  # generic: the rule in AGENTS.md


def _root_option(func: F) -> F:
    option = click.option(
        "--root",
        type=click.Path(path_type=Path, file_okay=False, exists=True),
        default=Path("."),
        help="The project folder holding the agent files.",
    )
    return option(func)


@state_group.command("install")
@click.option("--agent", type=AGENTS, default="generic", show_default=True)
@_root_option
@_dir_option
@_json_option
def install_command(agent: str, root: Path, folder: Path, as_json: bool) -> None:
    """Write the startup rule into AGENTS.md, CLAUDE.md or GEMINI.md (a marked block).

    For Claude Code also merge SessionStart and PreCompact hooks into .claude/settings.json.
    Idempotent; the rest of each file is never touched.

    \b
    Examples:
      ipse state install --agent claude-code
      ipse state install --agent codex
    """
    from ipse.statedir import install

    changes = install(root, folder, agent)
    _report_changes(changes, as_json)


@state_group.command("uninstall")
@click.option("--agent", type=AGENTS, default=None, help="Only this agent's file (default: all).")
@_root_option
@_dir_option
@_json_option
def uninstall_command(agent: str | None, root: Path, folder: Path, as_json: bool) -> None:
    """Remove exactly what install added.

    \b
    Example:
      ipse state uninstall
    """
    from ipse.statedir import uninstall

    changes = uninstall(root, folder, agent)
    _report_changes(changes, as_json)


def _report_changes(changes: list[Any], as_json: bool) -> None:
    if as_json:
        emit_json({"changes": [{"path": c.path, "action": c.action} for c in changes]})
        return
    if not changes:
        _say("nothing to change")
    for change in changes:
        _say(f"{change.action}: {change.path}")
