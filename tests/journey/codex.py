"""A Codex CLI user's first hour with ipse, as one function: install, three ``codex exec``
turns through the proxy with a checkpoint, the report, recall, uninstall.

Codex runs with its default model, which gets MCP tools as deferred tool namespaces (a developer
message lists ``mcp__ipse``) and calls every tool through its JavaScript ``exec`` tool: the
scripted upstream (the Responses API, streamed) answers with a ``custom_tool_call`` named
``exec`` whose input is ``await tools.exec_command(...)`` to read ``notes.txt``, then one whose
input is ``await tools.mcp__ipse__micro_handoff({...})``, then a plain answer.
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
    first_difference,
    handoff_finds,
    one_session,
    recalls,
    run,
    same_saving,
    skipped_handoffs,
    snapshot,
)
from tests.support.openai_upstream import Reply, openai_upstream

READ_ID = "call_journey_read_01"
CHECKPOINT_ID = "call_journey_checkpoint_01"
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
READ_CODE = 'const r = await tools.exec_command({cmd: "cat notes.txt"});\ntext(r.output);\n'
CHECKPOINT_CODE = (
    f"const r = await tools.mcp__ipse__micro_handoff({json.dumps(NOTES)});\n"
    "text(JSON.stringify(r));\n"
)
NOTES_FILE = "".join(
    f"run {n:03d}: parser 12.5 MB/s on corpus shard {n} (wall 80 s, rss 41 MB)\n" for n in range(60)
)
AGENTS_MD = b"# Project rules\r\n\r\nKeep answers short.\r\n"
CONFIG = (
    b'# my Codex settings\r\nmodel_reasoning_effort = "low"\r\n\r\n'
    b"[tui]\r\nnotifications = true\r\n"
)
TURN_TIMEOUT = 150.0


@dataclass
class Result:
    world: World
    requests: list[dict[str, Any]]


def model(body: dict[str, Any]) -> Reply:
    """The scripted model: a reply chosen from the conversation it is sent."""
    text = json.dumps(body.get("input", []))
    if PROMPTS[2] in text:
        return SAID["next"]
    if PROMPTS[1] in text:
        if CHECKPOINT_ID in text:
            return SAID["saved"]
        return {
            "text": SAID["checkpoint"],
            "custom_tool_call": {"id": CHECKPOINT_ID, "name": "exec", "input": CHECKPOINT_CODE},
        }
    if PROMPTS[0] in text:
        if READ_ID in text:
            return SAID["answer"]
        return {
            "text": SAID["read"],
            "custom_tool_call": {"id": READ_ID, "name": "exec", "input": READ_CODE},
        }
    return "OK."


def journey(root: Path, codex: str) -> Result:
    """Run the whole journey in ``root`` (empty); the seams it checked, failures included."""
    codex_home = root / "home" / ".codex"
    world = World.create(root, CODEX_HOME=str(codex_home), OPENAI_API_KEY="sk-journey-0000")
    codex_home.mkdir()
    (world.project / "notes.txt").write_text(NOTES_FILE)
    (world.project / "AGENTS.md").write_bytes(AGENTS_MD)
    (codex_home / "config.toml").write_bytes(CONFIG)
    before = snapshot(world.project)
    with openai_upstream(model) as upstream:
        try:
            with world.phase("install"):
                _install(world, upstream.url)
            session = _three_turns(world, codex)
            world.settled()
            with world.phase("report, recall"):
                _check(world, upstream, codex_home, session)
            with world.phase("uninstall"):
                _uninstall(world, codex_home, before)
        except Broken:
            pass  # the seam that broke is in world.seams, with what the journey saw
        finally:
            world.stop_proxy()
        requests = list(upstream.received)
    return Result(world, requests)


def _install(world: World, upstream: str) -> None:
    """``ipse install --agent codex --proxy`` with the upstream and the record; then the proxy
    started with exactly the command install printed (install starts none itself)."""
    argv = ["install", "--agent", "codex", "--proxy", "--port", str(world.port)]
    argv += ["--openai-upstream", upstream]
    argv += ["--record", str(world.record)]
    installed = world.ipse(*argv, timeout=60)
    world.seams.require(
        installed.returncode == 0,
        "install: `ipse install --agent codex --proxy ...` failed",
        installed.stderr,
    )
    said = installed.stdout + installed.stderr
    printed = re.findall(r"`([^`]*\bproxy start\b[^`]*)`", said)
    world.seams.require(
        len(set(printed)) == 1 and "OPENAI_API_KEY" in said,
        "install: `--proxy` did not print one command that starts the proxy (and which "
        "credential variable the provider entry reads)",
        said[-600:],
    )
    world.seams.require(
        world.health() is None,
        "install: a proxy answers before the user started one",
        world.health(),
    )
    started = run(["sh", "-c", printed[0]], cwd=world.project, env=world.env, timeout=60)
    world.seams.require(
        started.returncode == 0,
        f"proxy: the printed command failed: {printed[0]}",
        started.stderr,
    )
    running = world.health() or {}
    world.seams.check(
        running.get("upstreams", {}).get("openai") == upstream,
        "proxy: the printed command does not start the proxy with the upstream given to install",
        running.get("upstreams"),
    )


def _three_turns(world: World, codex: str) -> str:
    """Three ``codex exec`` turns of one session; its id."""
    session = ""
    for n, prompt in enumerate(PROMPTS):
        argv = [codex, "exec", "--skip-git-repo-check"]
        argv += ["resume", session, prompt] if session else [prompt]
        with world.phase(f"turn {n + 1}"):
            done = run(argv, cwd=world.project, env=world.env, timeout=TURN_TIMEOUT)
        world.seams.require(
            done.returncode == 0,
            f"turn {n + 1}: `codex exec` did not answer through the proxy (exit {done.returncode})",
            f"{done.stdout[-600:]} {done.stderr[-1200:]}",
        )
        found = re.search(r"session id: (\S+)", done.stderr + done.stdout)
        session = session or (found.group(1) if found else "")
        world.seams.require(session, f"turn {n + 1}: Codex printed no session id", done.stderr)
    return session


def _check(world: World, upstream: Any, codex_home: Path, session: str) -> None:
    """What went over the wire, and what the commands make of the proxy's record."""
    seams = world.seams
    turns = [b for b in upstream.bodies("/responses") if PROMPTS[0] in json.dumps(b.get("input"))]
    seams.require(
        len(turns) >= 5, "wire: the upstream did not get the five requests of the three turns"
    )
    _tools_from_the_start(seams, turns)
    output = _checkpoint_output(turns)
    called = seams.check(
        output and "Script error" not in output,
        "MCP: the checkpoint call failed in Codex's `exec` tool (ipse's server was not "
        "connected when the model called it)",
        output[:400],
    )
    applied = called and _handed_off(world, turns)
    if not called:
        seams.skip("proxy: the request after the checkpoint is handed off", "no checkpoint")
    every_command_reads(world)
    if called:
        rollouts = [
            path
            for path in sorted((codex_home / "sessions").rglob("rollout-*.jsonl"))
            if session in path.name or PROMPTS[0] in path.read_text(errors="replace")
        ]
        handoff_finds(world, rollouts[-1] if rollouts else None, CHECKPOINT_ID, "Codex")
    drops = re.findall(r'next_request_drops\\*"\s*:\s*\{[^}]*?\\*"tokens\\*"\s*:\s*(\d+)', output)
    same_saving(world, CHECKPOINT_ID, {int(t) for t in drops}, applied, called, output)
    if not (called and applied):
        seams.skip("one session key for the notes and what the handoff removed", "no handoff")
        seams.skip("recall: `ipse recall` returns the removed file content", "no handoff")
        return
    one_session(world)
    recalls(world, READ_ID, "run 059: parser 12.5 MB/s")


def _uninstall(world: World, codex_home: Path, before: dict[str, bytes]) -> None:
    """``ipse uninstall`` gives the project's files and Codex's config back byte for byte."""
    world.stop_proxy()
    removed = world.ipse("uninstall", "--agent", "codex", timeout=60)
    world.seams.check(
        removed.returncode == 0, "uninstall: `ipse uninstall --agent codex` failed", removed.stderr
    )
    changed = differences(before, snapshot(world.project))
    config = (codex_home / "config.toml").read_bytes()
    if config != CONFIG:
        changed.append(f"changed config.toml: {CONFIG!r} -> {config[:300]!r}")
    world.seams.check(
        not changed,
        "uninstall: the files did not come back byte for byte (CRLF AGENTS.md and config.toml "
        "with a comment among them)",
        changed,
    )


def _tool_surface(body: dict[str, Any]) -> str:
    """What a request offers the model as tools: ``tools``, the ``additional_tools`` items and
    the developer text that lists deferred tool namespaces."""
    parts: list[Any] = [body.get("tools")]
    for item in body.get("input", []):
        if item.get("type") == "additional_tools":
            parts.append(item.get("tools"))
        for block in item.get("content", []) if isinstance(item.get("content"), list) else []:
            text = block.get("text", "") if isinstance(block, dict) else ""
            if "<tools>" in text:
                parts.append(text[text.index("<tools>") :])
    return json.dumps(parts)


def _tools_from_the_start(seams: Seams, turns: list[dict[str, Any]]) -> None:
    first = _tool_surface(turns[0])
    seams.check(
        "mcp__ipse" in first,
        "MCP: the first request did not offer ipse's tools (the "
        "server was not connected when Codex sent it)",
        first[:300],
    )
    changed = [n for n, t in enumerate(turns) if _tool_surface(t) != first]
    seams.check(
        not changed,
        "MCP: the tools offered changed during the session",
        [(n, _tool_surface(turns[n])[-300:]) for n in changed],
    )
    said = [
        n
        for n, t in enumerate(turns)
        if re.search(
            r"mcp__ipse[^\"]*\b(Added|Removed)\b|\b(Added|Removed)\b[^\"]*mcp__ipse",
            json.dumps(t.get("input")),
        )
    ]
    seams.check(not said, "MCP: Codex announced ipse's tools added or removed mid-session", said)


def _calls(body: dict[str, Any]) -> tuple[list[str], list[str]]:
    items = body.get("input", [])
    calls = [str(i.get("call_id")) for i in items if str(i.get("type", "")).endswith("_call")]
    outputs = [str(i.get("call_id")) for i in items if str(i.get("type", "")).endswith("_output")]
    return calls, outputs


def _authored(body: dict[str, Any]) -> list[str]:
    texts = []
    for item in body.get("input", []):
        if item.get("type", "message") != "message" or item.get("role") not in (
            "user",
            "assistant",
        ):
            continue
        content = item.get("content")
        if isinstance(content, str):
            texts.append(content)
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") in ("input_text", "output_text"):
                texts.append(block["text"])
    return texts


def _handed_off(world: World, turns: list[dict[str, Any]]) -> bool:
    """The request after the checkpoint lost the read and kept every authored text and every
    untouched item as Codex wrote it; the next request shares its prefix. Whether the handoff
    was made."""
    seams = world.seams
    answered = [n for n, t in enumerate(turns) if CHECKPOINT_ID in _calls(t)[1]]
    seams.require(answered, "MCP: no request carries the output of the checkpoint call")
    first = answered[0]
    before, after = turns[first - 1], turns[first]
    calls, outputs = _calls(after)
    applied = seams.check(
        READ_ID not in calls and READ_ID not in outputs and CHECKPOINT_ID in calls,
        "proxy: the request after the checkpoint (`await tools.mcp__ipse__micro_handoff(...)` "
        "inside Codex's `exec` tool) was not handed off: the read is still there",
        f"calls {calls}, outputs {outputs}; the proxy's log: {skipped_handoffs(world.log())}",
    )
    kept = "\n".join(_authored(after))
    lost = [t[:80] for t in _authored(before) if t not in kept]
    seams.check(not lost, "proxy: the handoff lost authored text", lost)
    untouched = [
        i
        for i in before.get("input", [])
        if i.get("type") == "message" and i not in after.get("input", [])
    ]
    seams.check(
        not untouched,
        "proxy: the handoff changed messages it had no reason to touch (parts joined, messages "
        "merged or ids dropped)",
        [json.dumps(i)[:200] for i in untouched],
    )
    later = [t for t in turns[first + 1 :] if PROMPTS[2] in json.dumps(t.get("input"))]
    seams.require(later, "wire: no request of the third turn reached the upstream")
    head = json.dumps(after["input"])
    shared = json.dumps(later[0]["input"][: len(after["input"])])
    seams.check(
        shared == head,
        "proxy: the request after the handed-off one does not share its prefix byte for byte",
        first_difference(head, shared),
    )
    return applied


def _checkpoint_output(turns: list[dict[str, Any]]) -> str:
    for turn in turns:
        for item in turn.get("input", []):
            if item.get("call_id") == CHECKPOINT_ID and str(item.get("type")).endswith("_output"):
                return json.dumps(item.get("output"))
    return ""


__all__ = ["Result", "journey"]
