"""A Gemini CLI user's first run of ipse headless, as one function: install, one ``gemini -p``
turn against a scripted Gemini API, uninstall.

The scripted model (`tests.support.gemini_upstream`) answers Gemini CLI's main requests (those
that offer tools) in order: a call of ``mcp_ipse_micro_handoff`` with notes; once its result is
back, a call of ``mcp_ipse_recall`` with the checkpoint id the result names; then a plain
answer. Gemini CLI's side requests (its model router's classifier, its next-speaker check) get
the JSON they ask for. No proxy serves Gemini's API: the handoff here is the checkpoint stored
by ipse's server and given back by ``recall`` in the same run.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.journey._world import World, differences, run, snapshot
from tests.support.gemini_upstream import Reply, gemini_upstream

MODEL = "gemini-2.5-flash"  # named, so the run does not depend on Gemini CLI's default routing
CHECKPOINT = "mcp_ipse_micro_handoff"
RECALL = "mcp_ipse_recall"
NOTES = {
    "done": ["measured the parser: 12.5 MB/s on the 1 GB corpus"],
    "open": ["write the tokenizer"],
}
SAID = "Checkpoint saved; the notes came back from recall."
PROMPT = "Save a checkpoint of what we know, then read it back."
GEMINI_MD = b"# Project\r\n\r\nRun `make test` before committing.\r\n"
SETTINGS = b'{\r\n  // mine\r\n  "ui": {"theme": "Default"}\r\n}\r\n'


def _answers(body: dict[str, Any]) -> list[Any]:
    """The function responses in a request, in order."""
    return [
        part["functionResponse"]
        for content in body.get("contents") or []
        for part in content.get("parts") or []
        if isinstance(part, dict) and "functionResponse" in part
    ]


def _side_request(body: dict[str, Any]) -> Reply | None:
    """The JSON a side request (no tools offered) asks for; None for a main request."""
    if body.get("tools"):
        return None
    asked = json.dumps(body.get("generationConfig") or {})
    if "complexity_score" in asked:
        return json.dumps({"complexity_reasoning": "a short task", "complexity_score": 10})
    if "next_speaker" in asked:
        return json.dumps({"reasoning": "the answer is complete", "next_speaker": "user"})
    return "{}"


def model(body: dict[str, Any]) -> Reply:
    side = _side_request(body)
    if side is not None:
        return side
    answers = _answers(body)
    if not answers:
        call = {"name": CHECKPOINT, "args": NOTES}
        return {"text": "Saving a checkpoint.", "function_call": call}
    if len(answers) == 1:
        found = re.search(r"Checkpoint (\S+) recorded", json.dumps(answers[0]))
        checkpoint = found.group(1) if found else "missing"
        return {"function_call": {"name": RECALL, "args": {"checkpoint": checkpoint}}}
    return SAID


@dataclass
class Result:
    world: World
    requests: list[dict[str, Any]] = field(default_factory=list)  # the main ones, in order


def _declared(body: dict[str, Any]) -> dict[str, Any]:
    return {
        d["name"]: d
        for tool in body.get("tools") or []
        for d in tool.get("functionDeclarations") or []
    }


def journey(root: Path, gemini: str) -> Result:
    world = World.create(root)
    project, home = world.project, world.home
    (project / "GEMINI.md").write_bytes(GEMINI_MD)
    (project / ".gemini").mkdir()
    (project / ".gemini" / "settings.json").write_bytes(SETTINGS)
    (home / ".gemini").mkdir()  # the user's Gemini CLI: an API key, and this folder trusted
    (home / ".gemini" / "settings.json").write_text(
        json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}})
    )
    trusted = {str(project.resolve()): "TRUST_FOLDER"}
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps(trusted))
    before = snapshot(project)
    with world.phase("install"):
        installed = world.ipse("install", "--agent", "gemini", "--json")
    world.seams.require(installed.returncode == 0, "install: refused", installed.stderr[-800:])
    notes = " ".join(json.loads(installed.stdout)["notes"])
    said = "the entry says trust" in notes
    world.seams.check(said, "install: does not say what it trusts", notes)
    result = Result(world)
    with gemini_upstream(model) as upstream, world.phase("gemini -p"):
        env = {**world.env, "GOOGLE_GEMINI_BASE_URL": upstream.url, "GEMINI_API_KEY": "k-test"}
        done = run([gemini, "-p", PROMPT, "-m", MODEL], cwd=project, env=env, timeout=300)
        result.requests = [b for b in upstream.generate_requests() if b.get("tools")]
    world.seams.check(done.returncode == 0, "gemini -p: failed", done.stderr[-1500:])
    _check(world, result.requests, done.stdout)
    _session_folder(world)
    with world.phase("uninstall"):
        gone = world.ipse("uninstall", "--agent", "gemini")
    world.seams.check(gone.returncode == 0, "uninstall: failed", gone.stderr[-800:])
    left = differences(before, snapshot(project))
    world.seams.check(not left, "uninstall: the project is not as it was", left)
    return result


def _session_folder(world: World) -> None:
    """The session folder ipse names for Gemini CLI (`ipse.agents`) holds this run's session."""
    script = (
        "from pathlib import Path; from ipse.agents._install import session_folder; "
        "folder = session_folder('gemini', Path.cwd()); "
        "print(sorted(p.name for p in folder.glob('session-*')) if folder else None)"
    )
    done = run([sys.executable, "-c", script], cwd=world.project, env=world.env, timeout=60)
    world.seams.check(
        done.stdout.startswith("['session-"),
        "sessions: the session folder ipse names for Gemini CLI holds no session of this run",
        done.stdout + done.stderr[-400:],
    )


def _check(world: World, requests: list[dict[str, Any]], stdout: str) -> None:
    seams = world.seams
    seams.require(requests, "gemini -p: no request reached the model")
    first = _declared(requests[0])
    checkpoint = first.get(CHECKPOINT, {})
    seams.check(
        "parameters" in checkpoint or "parametersJsonSchema" in checkpoint,
        "MCP: the first request did not offer ipse's checkpoint tool with its schema",
        sorted(first),
    )
    answers = [_answers(body) for body in requests]
    handed = answers[1][0] if len(answers) > 1 and answers[1] else {}
    seams.check(
        handed.get("name") == CHECKPOINT and "recorded" in json.dumps(handed),
        "handoff: the checkpoint call did not come back as recorded",
        json.dumps(handed)[:600],
    )
    recalled = json.dumps(answers[2][-1] if len(answers) > 2 and answers[2] else {})
    seams.check(
        all(fact in recalled for fact in (*NOTES["done"], *NOTES["open"])),
        "recall: the checkpoint's notes did not come back",
        recalled[:600],
    )
    seams.check(SAID in stdout, "gemini -p: the model's answer is not what it printed", stdout)
