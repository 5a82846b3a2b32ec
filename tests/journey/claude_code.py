"""A Claude Code user's first hour with ipse, as one function: install, three turns through the
proxy with a checkpoint, the report, recall, uninstall. `journey` returns the seams it checked;
the test and ``bench/journey.py`` run it.

The model is a scripted upstream that answers as the Anthropic Messages API does (streamed
events, tool calls as ``input_json_delta``), choosing each reply from the request it gets: the
first prompt makes it read ``notes.txt`` with Claude Code's Read tool, the second makes it call
``mcp__ipse__micro_handoff`` with notes, the third makes it answer. Claude Code runs as a user
has it after install: not ``--bare``, the project's ``.mcp.json``, ``CLAUDE.md`` and
``.claude/settings.json`` (the SessionStart hook that starts the proxy) in force.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.journey._world import (
    Broken,
    Seams,
    World,
    differences,
    every_command_reads,
    find_numbers,
    first_difference,
    handoff_finds,
    json_out,
    one_session,
    recalls,
    run,
    same_saving,
    skipped_handoffs,
    snapshot,
)
from tests.support.anthropic_upstream import Reply, anthropic_upstream

CHECKPOINT = "mcp__ipse__micro_handoff"
READ_ID = "toolu_journey_read_01"
CHECKPOINT_ID = "toolu_journey_checkpoint_01"
PROMPTS = (
    "Read notes.txt and tell me what the parser measured.",
    "Save a checkpoint of what we know.",
    "What should we do next?",
)
SAID = {
    "read": "I will read notes.txt to find the parser's measurement.",
    "answer": "notes.txt says the parser reads 12.5 MB/s on the 1 GB corpus (measured).",
    "checkpoint": "Saving a checkpoint: the measurement is known, the tokenizer is open.",
    "saved": "Checkpoint saved.",
    "next": "Next: write the tokenizer, then measure it the same way.",
}
NOTES = {
    "done": ["read notes.txt: the parser reads 12.5 MB/s on the 1 GB corpus"],
    "open": ["write the tokenizer"],
    "claims": [{"claim": "parser 12.5 MB/s", "status": "measured", "evidence": "notes.txt"}],
}
# the file the model reads: large enough that removing it is a saving worth quoting
NOTES_FILE = "".join(
    f"run {n:03d}: parser 12.5 MB/s on corpus shard {n} (wall 80 s, rss 41 MB)\n" for n in range(60)
)
CLAUDE_MD = b"# Project rules\r\n\r\nKeep answers short.\r\n"
SETTINGS = b'{\r\n  "permissions": {\r\n    "allow": [\r\n      "Read"\r\n    ]\r\n  }\r\n}\r\n'
TURN_TIMEOUT = 150.0


@dataclass
class Result:
    world: World
    requests: list[dict[str, Any]]


def model(project: Path) -> Any:
    """The scripted model: a reply chosen from the conversation it is sent."""

    def reply(body: dict[str, Any]) -> Reply:
        text = json.dumps(body.get("messages", []))
        if PROMPTS[2] in text:
            return SAID["next"]
        if PROMPTS[1] in text:
            if CHECKPOINT_ID in text:
                return SAID["saved"]
            return {
                "text": SAID["checkpoint"],
                "tool_use": {"id": CHECKPOINT_ID, "name": CHECKPOINT, "input": NOTES},
            }
        if PROMPTS[0] in text:
            if READ_ID in text:
                return SAID["answer"]
            return {
                "text": SAID["read"],
                "tool_use": {
                    "id": READ_ID,
                    "name": "Read",
                    "input": {"file_path": str(project / "notes.txt")},
                },
            }
        return "OK."  # anything else Claude Code asks on the side

    return reply


def journey(
    root: Path,
    claude: str,
    tool_search: bool = True,
    env: dict[str, str] | None = None,
    resume: str = "--resume",
) -> Result:
    """Run the whole journey in ``root`` (empty); the seams it checked, failures included.

    ``tool_search``: Claude Code as it comes, whose tool search defers MCP tools behind its
    ToolSearch tool (names listed in a system message) unless a server's entry says
    ``alwaysLoad``, as ipse's does (its tools then come with their schemas in ``tools``); False:
    ``ENABLE_TOOL_SEARCH=false``, which puts every server's tools in ``tools``. Either way what
    the first request offers stays the same through the session. ``env``: more of the
    user's environment (``bench/journey.py --slow-mcp`` slows the MCP server's start with it).
    ``resume``: how the second and third turns go on with the first one's session, ``--resume
    ID`` or ``--continue`` (Claude Code starts its MCP server under a new session id for either,
    then switches to the one it continues)."""
    settings = {} if tool_search else {"ENABLE_TOOL_SEARCH": "false"}
    world = World.create(
        root,
        ANTHROPIC_API_KEY="sk-ant-journey-0000",
        # no telemetry or self-update (CI has a network): neither touches the seams checked
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        **settings,
        **(env or {}),
    )
    project = world.project
    (project / "notes.txt").write_text(NOTES_FILE)
    (project / "CLAUDE.md").write_bytes(CLAUDE_MD)
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_bytes(SETTINGS)
    before = snapshot(project)
    with anthropic_upstream(model(project)) as upstream:
        try:
            with world.phase("install"):
                installed = _install(world, upstream.url)
            session = _three_turns(world, claude, upstream.url, resume)
            world.settled()
            with world.phase("report, recall"):
                _check(world, upstream, session)
            with world.phase("uninstall"):
                _uninstall(world, installed, before)
        except Broken:
            pass  # the seam that broke is in world.seams, with what the journey saw
        finally:
            world.stop_proxy()
        requests = list(upstream.received)
    return Result(world, requests)


def _install(world: World, upstream: str) -> bytes:
    """``ipse install --agent claude-code --proxy`` with the proxy's port, upstream and record,
    as the README's install section gives them; the settings as install wrote them."""
    argv = ["install", "--agent", "claude-code", "--proxy", "--port", str(world.port)]
    argv += ["--anthropic-upstream", upstream, "--record", str(world.record)]
    installed = world.ipse(*argv, timeout=60)
    world.seams.require(
        installed.returncode == 0,
        f"install: `ipse {' '.join(argv[:5])} ...` failed",
        installed.stderr,
    )
    settings = world.project / ".claude" / "settings.json"
    written = settings.read_bytes()
    value = json.loads(written)
    commands = [
        hook.get("command", "")
        for group in value.get("hooks", {}).get("SessionStart", [])
        for hook in group.get("hooks", [])
    ]
    world.seams.require(
        any("proxy start" in c and str(world.record) in c for c in commands),
        "install: no SessionStart hook runs `ipse proxy start` with the record",
        commands,
    )
    return written


def _three_turns(world: World, claude: str, upstream: str, resume: str) -> str | None:
    """Three ``claude -p`` turns of one session (the later two going on with ``resume``: the
    session's id after ``--resume``, or ``--continue``); its id."""
    session = None
    for n, prompt in enumerate(PROMPTS):
        argv = [claude, "-p", prompt, "--output-format", "json", "--allowedTools", CHECKPOINT]
        if session is not None:
            argv += [resume, session] if resume == "--resume" else [resume]
        with world.phase(f"turn {n + 1}"):
            done = run(argv, cwd=world.project, env=world.env, timeout=TURN_TIMEOUT)
        out = json_out(done)
        world.seams.require(
            done.returncode == 0 and isinstance(out, dict) and not out.get("is_error"),
            f"turn {n + 1}: `claude -p` did not answer through the proxy (exit {done.returncode})",
            f"{done.stdout[-800:]} {done.stderr[-800:]} proxy log: {world.log()[-800:]}",
        )
        said = out.get("session_id") if isinstance(out, dict) else None
        world.seams.check(
            session is None or said == session,
            f"turn {n + 1}: `claude -p {resume}` went on in another session",
            f"{said} after {session}",
        )
        session = session or said
        if n == 0:
            _started_by_the_hook(world, upstream)
        if n == 2:
            world.seams.check(
                out.get("result") == SAID["next"],
                "turn 3: the answer is not the model's",
                out.get("result"),
            )
    return session


def _check(world: World, upstream: Any, session: str | None) -> None:
    """What went over the wire, and what the commands make of the proxy's record."""
    turns = _conversation(upstream.messages_requests())
    world.seams.require(
        len(turns) >= 5,
        "wire: the upstream did not get the five requests of the three turns",
        [len(t.get("messages", [])) for t in turns],
    )
    _tools_from_the_start(world.seams, turns)
    applied = _handed_off(world, turns)
    every_command_reads(world)
    projects = world.home / ".claude" / "projects"
    sessions = sorted(projects.glob(f"*/{session}.jsonl")) if session else []
    handoff_finds(world, sessions[-1] if sessions else None, CHECKPOINT_ID, "Claude Code")
    mcp_result = _checkpoint_result(turns)
    same_saving(world, CHECKPOINT_ID, _mcp_tokens(mcp_result), applied, mcp_result=mcp_result)
    if applied:
        one_session(world, f"session:{session}", READ_ID)
        recalls(world, READ_ID, "run 059: parser 12.5 MB/s")
    else:
        world.seams.skip("one session key for the notes and what the handoff removed", "no handoff")
        world.seams.skip("recall: `ipse recall` returns the removed file content", "no handoff")


def _uninstall(world: World, installed: bytes, before: dict[str, bytes]) -> None:
    """``ipse uninstall`` gives every file of the project back byte for byte."""
    world.seams.check(
        (world.project / ".claude" / "settings.json").read_bytes() == installed,
        "uninstall: the session changed the settings install wrote",
    )
    world.stop_proxy()
    removed = world.ipse("uninstall", "--agent", "claude-code", timeout=60)
    world.seams.check(
        removed.returncode == 0,
        "uninstall: `ipse uninstall --agent claude-code` failed",
        removed.stderr,
    )
    changed = differences(before, snapshot(world.project))
    world.seams.check(
        not changed,
        "uninstall: the project's files did not come back byte for byte "
        "(CRLF CLAUDE.md and .claude/settings.json among them)",
        changed,
    )


def _started_by_the_hook(world: World, upstream: str) -> None:
    """After the first turn the proxy answers: the one the hook started, with its upstream."""
    found = world.health()
    world.seams.require(
        found is not None,
        f"hook: no proxy answers at {world.url} after the first turn (the SessionStart hook did "
        "not start it)",
        world.log()[-800:],
    )
    assert found is not None
    pid_file = world.ipse_home / f"proxy-{world.port}.pid"
    pid = pid_file.read_text().strip() if pid_file.exists() else None
    world.seams.check(
        pid == str(found.get("pid")),
        "hook: the proxy that answers is not the one the hook started (the pid file in the "
        "journey's IPSE_HOME)",
        f"health pid {found.get('pid')}, pid file {pid}",
    )
    world.seams.check(
        found.get("upstreams", {}).get("anthropic") == upstream,
        "hook: the proxy does not use the upstream its hook was given",
        found.get("upstreams"),
    )


def _conversation(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The requests of the journey's conversation (not Claude Code's side requests)."""
    return [r for r in requests if PROMPTS[0] in json.dumps(r.get("messages", []))]


def _tool_names(body: dict[str, Any]) -> list[str]:
    return [str(t.get("name")) for t in body.get("tools", []) if isinstance(t, dict)]


DEFERRED = re.compile(r"deferred tools are now available via ToolSearch[^\n]*\n((?:[^\n]+\n)+)")


def _deferred(body: dict[str, Any]) -> list[str]:
    """The tools a request lists as deferred behind ToolSearch (in a system message or the
    system prompt), by name."""
    parts: list[Any] = [body.get("system")]
    parts += [m.get("content") for m in body.get("messages", []) if m.get("role") == "system"]
    texts = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        for block in part if isinstance(part, list) else []:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                texts.append(block["text"])
    found = DEFERRED.search("\n".join(texts))
    return found.group(1).split() if found else []


def _tools_from_the_start(seams: Seams, turns: list[dict[str, Any]]) -> None:
    names = _tool_names(turns[0]) + _deferred(turns[0])
    seams.check(
        CHECKPOINT in names,
        "MCP: the first request did not carry ipse's tools (the "
        "server was not connected when Claude Code sent it)",
        names,
    )
    first = json.dumps(turns[0].get("tools"))
    changed = [n for n, t in enumerate(turns) if json.dumps(t.get("tools")) != first]
    seams.check(
        not changed,
        "MCP: the tools array changed during the session (the prompt cache breaks at tools)",
        [(n, sorted(set(_tool_names(turns[n])) ^ set(_tool_names(turns[0])))) for n in changed],
    )
    deferred = [n for n, t in enumerate(turns) if _deferred(t) != _deferred(turns[0])]
    seams.check(
        not deferred,
        "MCP: the deferred tools listed changed during the session (the prompt cache breaks there)",
        [(n, sorted(set(_deferred(turns[n])) ^ set(_deferred(turns[0])))) for n in deferred],
    )


def _blocks(body: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [
        b
        for m in body.get("messages", [])
        if isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == kind
    ]


def _authored(body: dict[str, Any]) -> list[str]:
    """The texts of user and assistant messages (what a handoff keeps)."""
    texts = []
    for message in body.get("messages", []):
        if message.get("role") not in ("user", "assistant"):
            continue
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "text":
                texts.append(block["text"])
    return texts


def _normal(messages: list[dict[str, Any]]) -> str:
    """Messages as the cache renders them: ``cache_control`` (Claude Code moves its breakpoint
    to the newest message each request) left out, a string the same as one text block."""

    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            out = {k: clean(v) for k, v in value.items() if k != "cache_control"}
            if isinstance(out.get("content"), str) and "role" in out:
                out["content"] = [{"type": "text", "text": out["content"]}]
            return out
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    return json.dumps(clean(messages), ensure_ascii=False)


def _handed_off(world: World, turns: list[dict[str, Any]]) -> bool:
    """The request after the checkpoint lost the tool traffic before it and kept every authored
    text; the next request shares its prefix. Whether the handoff was made."""
    seams = world.seams
    answered = [
        n
        for n, t in enumerate(turns)
        if any(b.get("tool_use_id") == CHECKPOINT_ID for b in _blocks(t, "tool_result"))
    ]
    seams.require(
        answered,
        "MCP: no request carries the result of the checkpoint call",
        [_tool_names(t)[:3] for t in turns],
    )
    first = answered[0]
    before, after = turns[first - 1], turns[first]
    calls = [b.get("id") for b in _blocks(after, "tool_use")]
    results = [b.get("tool_use_id") for b in _blocks(after, "tool_result")]
    applied = seams.check(
        calls == [CHECKPOINT_ID] and results == [CHECKPOINT_ID],
        "proxy: the request after the checkpoint was not handed off (the Read call and its "
        "result are still there)",
        f"calls {calls}, results {results}; the proxy's log: {skipped_handoffs(world.log())}",
    )
    kept = "\n".join(_authored(after))
    lost = [t[:80] for t in _authored(before) if t not in kept]
    lost += [
        t
        for t in (PROMPTS[0], SAID["read"], SAID["answer"], PROMPTS[1], SAID["checkpoint"])
        if t not in kept
    ]
    seams.check(not lost, "proxy: the handoff lost authored text", lost)
    later = [t for t in turns[first + 1 :] if PROMPTS[2] in json.dumps(t.get("messages"))]
    seams.require(later, "wire: no request of the third turn reached the upstream")
    head = _normal(after["messages"])
    shared = _normal(later[0]["messages"][: len(after["messages"])])
    seams.check(
        shared == head,
        "proxy: the request after the handed-off one does not share its prefix byte for byte",
        first_difference(head, shared),
    )
    return applied


def _checkpoint_result(turns: list[dict[str, Any]]) -> str:
    for turn in turns:
        for block in _blocks(turn, "tool_result"):
            if block.get("tool_use_id") == CHECKPOINT_ID:
                inner = block.get("content")
                if isinstance(inner, list):
                    return "".join(str(b.get("text", "")) for b in inner if isinstance(b, dict))
                return str(inner)
    return ""


_TOKEN_KEYS = ("tokens_saved", "saved_tokens", "removed_tokens", "tokens")


def _mcp_tokens(mcp_result: str) -> set[int]:
    """The tokens the checkpoint's MCP result says the next request drops."""
    try:
        result = json.loads(mcp_result)
    except ValueError:
        return set()
    drops = result.get("next_request_drops") if isinstance(result, dict) else None
    keys = ("tokens", "tokens_saved", "saved_tokens", "removed_tokens")
    return {v for _, v in find_numbers(drops, keys) if isinstance(v, int)}


__all__ = ["Broken", "Result", "journey"]
