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
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.journey._world import (
    PROXY_URL,
    SAVED,
    Seams,
    differences,
    every_command_reads,
    failed_exchanges,
    find_numbers,
    first_difference,
    handoff_finds,
    health,
    integers,
    ipse_argv,
    json_out,
    poll,
    proxy_log,
    proxy_port,
    record_handoffs,
    run,
    shows_handoff,
    snapshot,
    stop_proxy,
    user_env,
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
APPROVE = 'mcp_servers.ipse.tools.micro_handoff.approval_mode="approve"'


@dataclass
class Result:
    seams: Seams
    requests: list[dict[str, Any]]
    seconds: dict[str, float]


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
    seams = Seams()
    home, project, ipse_home = root / "home", root / "project", root / "ipse-home"
    codex_home = home / ".codex"
    record = root / "exchanges.jsonl"
    for folder in (home, project, ipse_home, codex_home):
        folder.mkdir(parents=True)
    (project / "notes.txt").write_text(NOTES_FILE)
    (project / "AGENTS.md").write_bytes(AGENTS_MD)
    (codex_home / "config.toml").write_bytes(CONFIG)
    before = snapshot(project)
    env = user_env(home, ipse_home, CODEX_HOME=str(codex_home), OPENAI_API_KEY="sk-journey-0000")
    seconds: dict[str, float] = {}
    with proxy_port(), openai_upstream(model) as upstream:
        try:
            _journey(
                seams, project, codex_home, ipse_home, record, env, codex, upstream, before, seconds
            )
        finally:
            stop_proxy(env, project, ipse_home)
        requests = list(upstream.received)
    return Result(seams, requests, seconds)


def _journey(
    seams: Seams,
    project: Path,
    codex_home: Path,
    ipse_home: Path,
    record: Path,
    env: dict[str, str],
    codex: str,
    upstream: Any,
    before: dict[str, bytes],
    seconds: dict[str, float],
) -> None:
    started = time.monotonic()
    installed = run(
        ipse_argv("install", "--agent", "codex", "--proxy"), cwd=project, env=env, timeout=60
    )
    seams.require(
        installed.returncode == 0,
        "install: `ipse install --agent codex --proxy` failed",
        installed.stderr,
    )
    said = installed.stdout + installed.stderr
    running = health()
    seams.check(
        running is not None or ("ipse proxy start" in said and "OPENAI_API_KEY" in said),
        "install: `--proxy` neither started the proxy nor told the user to start it (and which "
        "credential variable the provider entry reads)",
        said[-600:],
    )
    if running is not None:  # install started one with its defaults: the user restarts it
        stop_proxy(env, project, ipse_home)
    # the upstream and the record, as the README's proxy section gives them
    started_proxy = run(
        ipse_argv("proxy", "start", "--openai-upstream", upstream.url, "--record", str(record)),
        cwd=project,
        env=env,
        timeout=60,
    )
    seams.require(
        started_proxy.returncode == 0, "proxy: `ipse proxy start` failed", started_proxy.stderr
    )
    seconds["install"] = time.monotonic() - started

    session = None
    for n, prompt in enumerate(PROMPTS):
        started = time.monotonic()
        # the user lets the checkpoint tool run (`codex exec` asks no questions: an MCP call
        # that needs approval fails), as a Claude Code user passes --allowedTools
        argv = [codex, "exec", "--skip-git-repo-check", "-c", APPROVE]
        argv += ["resume", session, prompt] if session else [prompt]
        done = run(argv, cwd=project, env=env, timeout=TURN_TIMEOUT)
        seconds[f"turn {n + 1}"] = time.monotonic() - started
        seams.require(
            done.returncode == 0,
            f"turn {n + 1}: `codex exec` did not answer through the proxy (exit {done.returncode})",
            f"{done.stdout[-600:]} {done.stderr[-1200:]}",
        )
        found = re.search(r"session id: (\S+)", done.stderr + done.stdout)
        session = session or (found.group(1) if found else None)
        seams.require(session, f"turn {n + 1}: Codex printed no session id", done.stderr[-600:])
    settled = poll(
        lambda: (
            (h := health()) is not None
            and h.get("pending_bookkeeping") == 0
            and h.get("inflight") == 0
        ),
        20.0,
    )
    seams.check(settled, "proxy: its bookkeeping did not settle within 20 s", health())
    failed = failed_exchanges(proxy_log(ipse_home))
    seams.check(
        not failed,
        "proxy: exchanges failed (an upstream error, or an upstream the user did not configure)",
        failed,
    )

    turns = [b for b in upstream.bodies("/responses") if PROMPTS[0] in json.dumps(b.get("input"))]
    seams.require(
        len(turns) >= 5,
        "wire: the upstream did not get the five requests of the three turns",
        len(turns),
    )
    _tools_from_the_start(seams, turns)
    output = _checkpoint_output(turns)
    called = seams.check(
        output and "Script error" not in output,
        "MCP: the checkpoint call failed in Codex's `exec` tool (ipse's server was not "
        "connected when the model called it)",
        output[:400],
    )
    log = proxy_log(ipse_home)
    if called:
        applied = _handed_off(seams, turns, log)
    else:
        applied = False
        seams.skip("proxy: the request after the checkpoint is handed off", "no checkpoint")
    every_command_reads(seams, record, project, env, ("inspect", "lint"))
    if called:
        rollouts = [
            path
            for path in sorted((codex_home / "sessions").rglob("rollout-*.jsonl"))
            if PROMPTS[0] in path.read_text(errors="replace")
        ]
        handoff_finds(
            seams, rollouts[-1] if rollouts else None, CHECKPOINT_ID, project, env, "Codex"
        )
    _measurements(seams, project, env, record, log, output, applied, called)
    _recall(seams, project, env, applied, called)

    started = time.monotonic()
    stop_proxy(env, project, ipse_home)
    removed = run(ipse_argv("uninstall", "--agent", "codex"), cwd=project, env=env, timeout=60)
    seams.check(
        removed.returncode == 0, "uninstall: `ipse uninstall --agent codex` failed", removed.stderr
    )
    changed = differences(before, snapshot(project))
    config = (codex_home / "config.toml").read_bytes()
    if config != CONFIG:
        changed.append(f"changed config.toml: {CONFIG!r} -> {config[:300]!r}")
    seams.check(
        not changed,
        "uninstall: the files did not come back byte for byte (CRLF "
        "AGENTS.md and config.toml with a comment among them)",
        changed,
    )
    seconds["report, recall, uninstall"] = time.monotonic() - started


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


def _handed_off(seams: Seams, turns: list[dict[str, Any]], log: str) -> bool:
    answered = [n for n, t in enumerate(turns) if CHECKPOINT_ID in _calls(t)[1]]
    seams.require(answered, "MCP: no request carries the output of the checkpoint call")
    first = answered[0]
    before, after = turns[first - 1], turns[first]
    calls, outputs = _calls(after)
    applied = seams.check(
        READ_ID not in calls and READ_ID not in outputs and CHECKPOINT_ID in calls,
        "proxy: the request after the checkpoint (`await tools.mcp__ipse__micro_handoff(...)` "
        "inside Codex's `exec` tool) was not handed off: the read is still there",
        f"calls {calls}, outputs {outputs}; the proxy's log: "
        + " | ".join(
            sorted(
                {
                    ln[ln.find("handoff skipped") :]
                    for ln in log.splitlines()
                    if "handoff skipped" in ln
                }
            )
        ),
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


def _measurements(
    seams: Seams,
    project: Path,
    env: dict[str, str],
    record: Path,
    log: str,
    output: str,
    applied: bool,
    called: bool,
) -> None:
    """The record reads; with a handoff, report and prefix show it and quote one saving; one
    session key for the checkpoint notes and what the handoff removed."""
    logged = [m.groups() for m in SAVED.finditer(log)]
    log_tokens = {int(t) for _, t, _ in logged if t is not None}
    drops = re.findall(r'next_request_drops\\*"\s*:\s*\{[^}]*?\\*"tokens\\*"\s*:\s*(\d+)', output)
    mcp_tokens = {int(t) for t in drops}
    if called:
        seams.check(
            mcp_tokens,
            "MCP: the checkpoint's result does not say what the next request drops, in tokens",
            output[:600],
        )
    else:
        seams.skip("MCP: the checkpoint's result says what the next request drops", "no call")
    if applied:
        seams.check(logged, "proxy log: no line says what the handoff saved", log[-800:])
        seams.check(
            log_tokens and log_tokens == mcp_tokens,
            "one measurement: the proxy log and the MCP result quote different savings",
            f"log {sorted(log_tokens)}, MCP {sorted(mcp_tokens)}",
        )
    if applied:
        log_bytes = {int(b) for _, _, b in logged}
        recorded = {h.get("removed_bytes") for h in record_handoffs(record)}
        seams.check(
            log_bytes and log_bytes == recorded,
            "one measurement: the proxy log and its record quote different byte savings",
            f"log {sorted(log_bytes)}, record removed_bytes {sorted(recorded, key=str)}",
        )
    for command in ("report", "prefix"):
        argv = [command, str(record), "--json"]
        if command == "report":
            argv += ["-o", str(record.with_suffix(".html"))]
        done = run(ipse_argv(*argv), cwd=project, env=env, timeout=120)
        document = json_out(done)
        if not seams.check(
            done.returncode == 0 and document is not None,
            f"{command}: cannot read the proxy's own record",
            done.stderr[-600:],
        ):
            continue
        if not applied:
            seams.skip(f"{command}: shows the handoff and quotes its saving", "no handoff")
            continue
        numbers = integers(document)
        seams.check(
            shows_handoff(document, CHECKPOINT_ID),
            f"{command}: does not show the handoff the proxy made (at {CHECKPOINT_ID})",
        )
        seams.check(
            log_tokens and log_tokens <= numbers,
            f"one measurement: `ipse {command}` does not quote the saving of the proxy log",
            f"log {sorted(log_tokens)}; {command} {sorted(n for n in numbers if n > 100)[:20]}",
        )


def _recall(seams: Seams, project: Path, env: dict[str, str], applied: bool, called: bool) -> None:
    """One session key for the checkpoint's notes and what the handoff removed; ``ipse recall``
    gives back the file content the handoff removed."""
    if not (called and applied):
        seams.skip("one session key for the notes and what the handoff removed", "no handoff")
    else:
        listed = run(ipse_argv("archive", "list", "--json"), cwd=project, env=env, timeout=60)
        sessions = [s for _, s in find_numbers(json_out(listed), ("session",))]
        seams.check(
            listed.returncode == 0 and len(sessions) == 1,
            "one session key: the checkpoint's notes and what the handoff removed are not filed "
            "under one session (proxy, MCP server and CLI key it differently, or the MCP server "
            "wrote to another ipse home)",
            listed.stdout[:600] + listed.stderr[-300:],
        )
    if not applied:
        seams.skip("recall: `ipse recall` returns the removed file content", "no handoff")
        return
    done = run(ipse_argv("recall", READ_ID), cwd=project, env=env, timeout=60)
    seams.check(
        done.returncode == 0 and "run 059: parser 12.5 MB/s" in done.stdout,
        "recall: `ipse recall` does not return the removed file content",
        f"exit {done.returncode}: {done.stderr[-400:]} {done.stdout[:300]}",
    )


__all__ = ["PROXY_URL", "Result", "journey"]
