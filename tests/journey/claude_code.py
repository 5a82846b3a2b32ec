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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.journey._world import (
    PROXY_URL,
    SAVED,
    Broken,
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
    seams: Seams
    requests: list[dict[str, Any]]
    seconds: dict[str, float]


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


def journey(root: Path, claude: str) -> Result:
    """Run the whole journey in ``root`` (empty); the seams it checked, failures included."""
    seams = Seams()
    home, project, ipse_home = root / "home", root / "project", root / "ipse-home"
    record = root / "exchanges.jsonl"
    for folder in (home, project, ipse_home):
        folder.mkdir(parents=True)
    (project / "notes.txt").write_text(NOTES_FILE)
    (project / "CLAUDE.md").write_bytes(CLAUDE_MD)
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_bytes(SETTINGS)
    before = snapshot(project)
    env = user_env(
        home,
        ipse_home,
        ANTHROPIC_API_KEY="sk-ant-journey-0000",
        # no telemetry or self-update (CI has a network): neither touches the seams checked
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        # MCP tools in `tools` with their schemas (Claude Code's default defers them behind its
        # ToolSearch tool, which then changes `tools` itself): a change there is then ipse's
        ENABLE_TOOL_SEARCH="false",
    )
    seconds: dict[str, float] = {}
    with proxy_port(), anthropic_upstream(model(project)) as upstream:
        try:
            _journey(seams, project, ipse_home, record, env, claude, upstream, before, seconds)
        finally:
            stop_proxy(env, project, ipse_home)
        requests = list(upstream.received)
    return Result(seams, requests, seconds)


def _journey(
    seams: Seams,
    project: Path,
    ipse_home: Path,
    record: Path,
    env: dict[str, str],
    claude: str,
    upstream: Any,
    before: dict[str, bytes],
    seconds: dict[str, float],
) -> None:
    import time

    started = time.monotonic()
    installed = run(
        ipse_argv("install", "--agent", "claude-code", "--proxy"), cwd=project, env=env, timeout=60
    )
    seams.require(
        installed.returncode == 0,
        "install: `ipse install --agent claude-code --proxy` failed",
        installed.stderr,
    )
    settings = project / ".claude" / "settings.json"
    installed_settings = settings.read_bytes()
    _point_the_hook(seams, settings, upstream.url, record)
    seconds["install"] = time.monotonic() - started

    # ------------------------------------------------------------------ three turns
    session = None
    outputs = []
    for n, prompt in enumerate(PROMPTS):
        started = time.monotonic()
        argv = [claude, "-p", prompt, "--output-format", "json", "--allowedTools", CHECKPOINT]
        if session is not None:
            argv += ["--resume", session]
        done = run(argv, cwd=project, env=env, timeout=TURN_TIMEOUT)
        seconds[f"turn {n + 1}"] = time.monotonic() - started
        out = json_out(done)
        seams.require(
            done.returncode == 0 and isinstance(out, dict) and not out.get("is_error"),
            f"turn {n + 1}: `claude -p` did not answer through the proxy (exit {done.returncode})",
            f"{done.stdout[-800:]} {done.stderr[-800:]} proxy log: {proxy_log(ipse_home)[-800:]}",
        )
        session = session or out.get("session_id")
        outputs.append(out)
        if n == 0:
            _started_by_the_hook(seams, ipse_home, upstream.url)
    seams.check(
        outputs[2].get("result") == SAID["next"],
        "turn 3: the answer is not the model's",
        outputs[2].get("result"),
    )
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

    # ------------------------------------------------------------------ on the wire
    turns = _conversation(upstream.messages_requests())
    seams.require(
        len(turns) >= 5,
        "wire: the upstream did not get the five requests of the three turns",
        [len(t.get("messages", [])) for t in turns],
    )
    _tools_from_the_start(seams, turns)
    log = proxy_log(ipse_home)
    applied = _handed_off(seams, turns, log)
    mcp_result = _checkpoint_result(turns)

    # ------------------------------------------------------------------ the record
    every_command_reads(seams, record, project, env, ("inspect", "lint"))
    sessions = sorted((project.parent / "home" / ".claude" / "projects").glob(f"*/{session}.jsonl"))
    handoff_finds(
        seams, sessions[-1] if sessions else None, CHECKPOINT_ID, project, env, "Claude Code"
    )
    _report_and_prefix(seams, project, env, record, log, mcp_result, applied)
    if applied:
        _recall(seams, project, env)
    else:
        seams.skip("recall: `ipse recall` returns the removed file content", "no handoff")

    # ------------------------------------------------------------------ uninstall
    started = time.monotonic()
    settings.write_bytes(installed_settings)  # the hook as install wrote it
    stop_proxy(env, project, ipse_home)
    removed = run(
        ipse_argv("uninstall", "--agent", "claude-code"), cwd=project, env=env, timeout=60
    )
    seams.check(
        removed.returncode == 0,
        "uninstall: `ipse uninstall --agent claude-code` failed",
        removed.stderr,
    )
    changed = differences(before, snapshot(project))
    seams.check(
        not changed,
        "uninstall: the project's files did not come back byte for byte "
        "(CRLF CLAUDE.md and .claude/settings.json among them)",
        changed,
    )
    seconds["report, recall, uninstall"] = time.monotonic() - started


def _point_the_hook(seams: Seams, settings: Path, upstream: str, record: Path) -> None:
    """Give the proxy that the installed SessionStart hook starts its upstream and its record:
    ``ipse proxy start`` takes the options of ``ipse proxy`` (``--anthropic-upstream``,
    ``--record``), as the README's proxy section documents; install has no option for them, so
    the user adds them to the hook's command. (The journey restores the hook as install wrote it
    before uninstall.)"""
    text = settings.read_text(encoding="utf-8")
    value = json.loads(text)
    commands = [
        hook.get("command", "")
        for group in value.get("hooks", {}).get("SessionStart", [])
        for hook in group.get("hooks", [])
    ]
    starts = [c for c in commands if "proxy start" in c]
    seams.require(starts, "install: no SessionStart hook runs `ipse proxy start`", commands)
    old = json.dumps(starts[0])[1:-1]
    new = json.dumps(f"{starts[0]} --anthropic-upstream {upstream} --record {record}")[1:-1]
    seams.require(text.count(old) == 1, "install: the hook's command is not a plain JSON string")
    settings.write_text(text.replace(old, new), encoding="utf-8")


def _started_by_the_hook(seams: Seams, ipse_home: Path, upstream: str) -> None:
    found = health()
    pid_file = ipse_home / "proxy-8765.pid"
    seams.require(
        found is not None,
        "hook: no proxy answers at " + PROXY_URL + " after the "
        "first turn (the SessionStart hook did not start it)",
        proxy_log(ipse_home)[-800:],
    )
    assert found is not None
    seams.check(
        pid_file.exists() and pid_file.read_text().strip() == str(found.get("pid")),
        "hook: the proxy that answers is not the one the hook started (pid file in the "
        "journey's IPSE_HOME)",
        f"health pid {found.get('pid')}, pid file {pid_file.exists() and pid_file.read_text()}",
    )
    seams.check(
        found.get("upstreams", {}).get("anthropic") == upstream,
        "hook: the proxy does not use the upstream its hook was given",
        found.get("upstreams"),
    )


def _conversation(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The requests of the journey's conversation (not Claude Code's side requests)."""
    return [r for r in requests if PROMPTS[0] in json.dumps(r.get("messages", []))]


def _tool_names(body: dict[str, Any]) -> list[str]:
    return [str(t.get("name")) for t in body.get("tools", []) if isinstance(t, dict)]


def _tools_from_the_start(seams: Seams, turns: list[dict[str, Any]]) -> None:
    names = _tool_names(turns[0])
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
        [(n, sorted(set(_tool_names(turns[n])) ^ set(names))) for n in changed],
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


def _handed_off(seams: Seams, turns: list[dict[str, Any]], log: str) -> bool:
    """The request after the checkpoint lost the tool traffic before it and kept every authored
    text; the next request shares its prefix. Whether the handoff was made."""
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
        f"calls {calls}, results {results}; the proxy's log: "
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


def _report_and_prefix(
    seams: Seams,
    project: Path,
    env: dict[str, str],
    record: Path,
    log: str,
    mcp_result: str,
    applied: bool,
) -> None:
    """``ipse report`` and ``ipse prefix`` read the proxy's record, show the handoff, and quote
    the saving the proxy log and the checkpoint's MCP result quote."""
    logged = [m.groups() for m in SAVED.finditer(log) if m.group(1) == CHECKPOINT_ID]
    log_tokens = {int(t) for _, t, _ in logged if t is not None}
    if applied:
        seams.check(logged, "proxy log: no line says what the handoff saved", log[-800:])
        seams.check(
            len(log_tokens) <= 1,
            "proxy log: the same handoff saved a different amount from one request to the next",
            logged,
        )
    try:
        mcp = json.loads(mcp_result)
    except ValueError:
        mcp = None
    drops = mcp.get("next_request_drops") if isinstance(mcp, dict) else None
    mcp_tokens = {v for _, v in find_numbers(drops, _TOKEN_KEYS) if isinstance(v, int)}
    seams.check(
        mcp_tokens,
        "MCP: the checkpoint's result does not say what the next request drops, in tokens",
        mcp_result[:600],
    )
    if applied:
        seams.check(
            log_tokens and mcp_tokens and log_tokens == mcp_tokens,
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
        text = json.dumps(document)
        seams.check(
            shows_handoff(document, CHECKPOINT_ID),
            f"{command}: does not show the handoff the proxy made (at {CHECKPOINT_ID})",
            text[:600],
        )
        numbers = integers(document)
        seams.check(
            log_tokens and log_tokens <= numbers,
            f"one measurement: `ipse {command}` does not quote the saving of the proxy log",
            f"log {sorted(log_tokens)}; {command} {sorted(n for n in numbers if n > 100)[:20]}",
        )


def _recall(seams: Seams, project: Path, env: dict[str, str]) -> None:
    """``ipse recall`` gives back the file content the handoff removed."""
    done = run(ipse_argv("recall", READ_ID), cwd=project, env=env, timeout=60)
    seams.check(
        done.returncode == 0 and "run 059: parser 12.5 MB/s" in done.stdout,
        "recall: `ipse recall` does not return the removed file content",
        f"exit {done.returncode}: {done.stderr[-400:]} {done.stdout[:300]}",
    )


__all__ = ["Broken", "Result", "journey"]
