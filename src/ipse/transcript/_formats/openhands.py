"""OpenHands event lists (a saved or downloaded trajectory), read only.

Checked against All-Hands-AI/OpenHands 0.62.0 (156d068, ``openhands/events/serialization/
event.py``, ``openhands/core/schema/{action,observation}.py``, ``openhands/events/tool.py``,
``openhands/server/routes/trajectory.py``, ``frontend/src/hooks/
use-conversation-name-context-menu.ts``). Two shapes: a JSON array of events (what
``save_trajectory_path`` writes, and the UI's "Export conversation",
``trajectory-<id>.json``) and ``{"trajectory": [...]}`` (the
``/api/conversations/{id}/trajectory`` answer). Each event has ``id``, ``timestamp``,
``source`` (``user``, ``agent``, ``environment``), ``message``, optional ``cause`` (the id of
the action an observation answers), ``tool_call_metadata`` (``function_name``,
``tool_call_id``, ``model_response``, ``total_calls_in_response``) and ``llm_metrics``; an
action has ``action`` and ``args``, an observation ``observation``, ``content`` and
``extras``.

Mapping onto the model:

* ``action: "system"``: the system prompt (``args.content``).
* ``action: "message"``: authored text, the human's from ``source: "user"``, the agent's from
  ``source: "agent"``; ``args.content``.
* any other action by the agent (``run``, ``read``, ``edit``, ``write``, ``run_ipython``,
  ``browse_interactive``, ``call_tool_mcp``, ``think``, ``finish``, ``delegate``,
  ``task_tracking``, ...): a tool call, named by ``tool_call_metadata.function_name`` with its
  ``tool_call_id`` when recorded, else by the action name with ``event-<id>``; its ``args`` are
  the input, or rather the arguments the model sent when ``model_response`` holds the call
  (``args`` carry harness additions such as ``translated_ipython_code``); ``args.thought`` is
  the agent's text before the call. Calls from one model response
  (same ``model_response.id``) share one assistant message.
* an observation whose ``cause`` (or ``tool_call_metadata.tool_call_id``) is such a call: its
  result (``content``; ``error`` and ``user_rejected`` observations are errors).
* other observations with content (``error`` with no cause, ``recall`` workspace context):
  harness text in a user turn. Bookkeeping events (``change_agent_state``,
  ``agent_state_changed``, ``null``, ``recall`` actions, ``condensation`` and the like) are not
  messages; their counts go to ``Conversation.meta["skipped"]``.

OpenHands 1.x (checked: OpenHands/software-agent-sdk 1.43.1 at 611629e,
``openhands/sdk/event/``): events carry ``kind`` (the class name), ``id``, ``timestamp``,
``source``. ``SystemPromptEvent`` (``system_prompt``, ``dynamic_context``: text content) is
the system prompt; ``MessageEvent`` (``llm_message``: ``role``, ``content`` parts,
``reasoning_content``, ``thinking_blocks``; ``extended_content`` harness text) authored text
by ``source``; ``ActionEvent`` (``thought`` parts, ``tool_call``: ``id``, ``name``,
``arguments``; ``llm_response_id`` groups parallel calls) a call; ``ObservationEvent``
(``tool_call_id``, ``observation``: ``content`` parts, ``is_error``),
``UserRejectObservation`` (``rejection_reason``) and ``AgentErrorEvent`` (``error``) its
result; every other kind (state updates, condensations, pauses, hook runs) is skipped and
counted. Read from a JSON array of events, ``{"events": [...]}``, or a persisted conversation
folder (its ``events/event-NNNNN-<id>.json`` files in order; the model from
``base_state.json``'s ``agent.llm.model``).

Tested on generated cases of both generations and on real 0.x trajectories (recorded in
January and February 2025 for OpenHands' replay tests, with Claude 3.5 Sonnet and GPT-4o;
``examples/openhands/``).

The conversation is read only: OpenHands builds its requests from these events with its own
prompts, condensers and tool schemas, none of which the events record, so ipse does not write
one back (`ipse.transcript.write` says which formats it can write).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ipse import jsonio
from ipse._names import Names
from ipse.errors import InputError
from ipse.transcript._jsonl import parse_json, read_text_bytes
from ipse.transcript._model import (
    Block,
    Conversation,
    Message,
    Origin,
    Other,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
)

_NOT_MESSAGES = Names(
    {
        "change_agent_state",
        "agent_state_changed",
        "null",
        "pause",
        "resume",
        "stop",
        "start",
        "recall",
        "condensation",
        "condensation_request",
        "loop_recovery",
        "loop_detection",
        "reject",
        "push",
        "send_pr",
    }
)
_ERROR_OBSERVATIONS = Names({"error", "user_rejected"})


def looks_like_openhands(items: Sequence[Any]) -> bool:
    """Whether a JSON array is a list of OpenHands events (either generation)."""
    head = [i for i in items[:20] if isinstance(i, Mapping)]
    return (
        bool(head)
        and len(head) == len(items[:20])
        and all(_is_v0(e) or _is_v1(e) for e in head)
        and any(_is_v0(e) or e.get("kind") in _V1_CONVERSATION for e in head)
    )


def _is_v0(event: Mapping[str, Any]) -> bool:
    return (
        "kind" not in event
        and ("action" in event or "observation" in event)
        and ("source" in event or "id" in event)
    )


def _is_v1(event: Mapping[str, Any]) -> bool:
    return isinstance(event.get("kind"), str) and "source" in event and "id" in event


_EVENT_FILE = re.compile(r"event-(\d+)-[^/]*\.json")


def event_files(folder: Path) -> list[Path]:
    """The ``event-NNNNN-<id>.json`` files of a 1.x conversation folder (or of its ``events/``),
    in order; empty when there are none."""
    where = folder / "events" if (folder / "events").is_dir() else folder
    found = [(m, f) for f in where.glob("event-*.json") if (m := _EVENT_FILE.fullmatch(f.name))]
    return [f for m, f in sorted(found, key=lambda pair: int(pair[0].group(1)))]


def read_folder(folder: Path) -> Conversation:
    """A 1.x conversation folder: its event files, and the model of ``base_state.json``."""
    events = [parse_json(read_text_bytes(f), f) for f in event_files(folder)]
    conversation = read_events(folder, events)
    if conversation.model is None:
        for state in (folder / "base_state.json", folder.parent / "base_state.json"):
            model = _state_model(state) if state.is_file() else None
            if model:
                return replace(conversation, settings={**conversation.settings, "model": model})
    return conversation


def _state_model(path: Path) -> str | None:
    try:
        state = parse_json(read_text_bytes(path), path)
    except InputError:
        return None
    agent = state.get("agent") if isinstance(state, Mapping) else None
    llm = agent.get("llm") if isinstance(agent, Mapping) else None
    model = llm.get("model") if isinstance(llm, Mapping) else None
    return model if isinstance(model, str) else None


def events_of(document: Any) -> list[Any] | None:
    """The events of either shape, or None."""
    if isinstance(document, list):
        return document
    if not isinstance(document, Mapping):
        return None
    events = document.get("trajectory", document.get("events"))
    return events if isinstance(events, list) else None


class _Builder:
    def __init__(self) -> None:
        self.messages: list[tuple[str, list[Block], dict[str, Any]]] = []
        self.system: list[Text] = []
        self.calls: dict[Any, str] = {}  # event id -> call id
        self.response: Any = None  # the model response the open assistant message came from
        self.skipped: Counter[str] = Counter()
        self.model: str | None = None  # the last model_response's model

    def add(self, role: str, blocks: list[Block], meta: dict[str, Any]) -> None:
        self.messages.append((role, blocks, meta))
        self.response = None

    def event(self, event: Mapping[str, Any], position: int) -> None:
        meta = {"index": position, "event_id": event.get("id"), "timestamp": event.get("timestamp")}
        if _is_v1(event):
            self._v1(event, meta)
        elif "action" in event:
            self._action(event, meta)
        else:
            self._observation(event, meta)

    def _action(self, event: Mapping[str, Any], meta: dict[str, Any]) -> None:
        kind = str(event.get("action"))
        given = event.get("args")
        args: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
        source = event.get("source")
        if kind == "system":
            self.system.append(Text(_text(args.get("content")), Origin.SYSTEM))
        elif kind == "message":
            content = _text(args.get("content"))
            if source == "agent":
                self.add("assistant", [Text(content, Origin.AGENT)], meta)
            else:
                self.add("user", [Text(content, Origin.HUMAN)], meta)
        elif kind in _NOT_MESSAGES or source != "agent":
            self.skipped[f"action:{kind}"] += 1
        else:
            self._call(event, kind, args, meta)

    def _call(
        self, event: Mapping[str, Any], kind: str, args: Mapping[str, Any], meta: dict[str, Any]
    ) -> None:
        tool = event.get("tool_call_metadata")
        tool = tool if isinstance(tool, Mapping) else {}
        call_id = str(tool.get("tool_call_id") or f"event-{event.get('id')}")
        name = str(tool.get("function_name") or kind)
        response = tool.get("model_response")
        response_id = response.get("id") if isinstance(response, Mapping) else None
        if isinstance(response, Mapping) and isinstance(response.get("model"), str):
            self.model = response["model"]
        event_id = event.get("id")
        if isinstance(event_id, int | str):  # (an id of another kind names no event)
            self.calls[event_id] = call_id
        blocks: list[Block] = []
        thought = args.get("thought")
        if isinstance(thought, str) and thought:
            blocks.append(Text(thought, Origin.AGENT))
        blocks.append(_recorded_call(response, call_id, name, args))
        if response_id is not None and self.response == response_id:
            index = max(i for i, m in enumerate(self.messages) if m[0] == "assistant")
            self.messages[index][1].extend(b for b in blocks if isinstance(b, ToolCall))
            return
        self.add("assistant", blocks, {**meta, "action": kind})
        self.response = response_id

    def _observation(self, event: Mapping[str, Any], meta: dict[str, Any]) -> None:
        kind = str(event.get("observation"))
        content = _text(event.get("content"))
        tool = event.get("tool_call_metadata")
        cause = event.get("cause")
        call_id = self.calls.get(cause) if isinstance(cause, int | str) else None
        if call_id is None and isinstance(tool, Mapping) and tool.get("tool_call_id"):
            call_id = str(tool["tool_call_id"])
            if call_id not in self.calls.values():
                call_id = None
        if call_id is not None:
            response = self.response
            self.messages.append(
                (
                    "tool",
                    [ToolResult(call_id, content, is_error=kind in _ERROR_OBSERVATIONS)],
                    {**meta, "observation": kind},
                )
            )
            self.response = response  # later calls of the same response join its message
        elif (kind in _NOT_MESSAGES and kind != "recall") or not content:
            self.skipped[f"observation:{kind}"] += 1
        else:
            self.add("user", [Text(content, Origin.HARNESS)], {**meta, "observation": kind})

    # --------------------------------------------------------------- OpenHands 1.x (the SDK)

    def _v1(self, event: Mapping[str, Any], meta: dict[str, Any]) -> None:
        kind = str(event["kind"])
        if kind == "SystemPromptEvent":
            for key in ("system_prompt", "dynamic_context"):
                text = _content_text([event.get(key)])
                if text:
                    self.system.append(Text(text, Origin.SYSTEM))
        elif kind == "MessageEvent":
            self._v1_message(event, meta)
        elif kind == "ActionEvent":
            self._v1_action(event, meta)
        elif kind in ("ObservationEvent", "UserRejectObservation", "AgentErrorEvent"):
            observation = event.get("observation")
            observation = observation if isinstance(observation, Mapping) else {}
            if kind == "ObservationEvent":
                text = _content_text(observation.get("content"))
                is_error = observation.get("is_error") is True
            else:
                text = _text(event.get("rejection_reason", event.get("error")))
                is_error = True
            call_id = str(event.get("tool_call_id", ""))
            response = self.response
            self.messages.append(
                ("tool", [ToolResult(call_id, text, is_error=is_error)], {**meta, "kind": kind})
            )
            self.response = response
        else:
            self.skipped[kind] += 1

    def _v1_message(self, event: Mapping[str, Any], meta: dict[str, Any]) -> None:
        message = event.get("llm_message")
        message = message if isinstance(message, Mapping) else {}
        agent = event.get("source") == "agent" or message.get("role") == "assistant"
        blocks: list[Block] = []
        if agent:
            blocks.extend(_thinking(message))
        for part in _list(message.get("content")):
            blocks.extend(_v1_part(part, Origin.AGENT if agent else Origin.HUMAN))
        for part in _list(event.get("extended_content")):
            blocks.extend(_v1_part(part, Origin.HARNESS))
        self.add("assistant" if agent else "user", blocks, {**meta, "kind": "MessageEvent"})

    def _v1_action(self, event: Mapping[str, Any], meta: dict[str, Any]) -> None:
        call = event.get("tool_call")
        call = call if isinstance(call, Mapping) else {}
        call_id = str(call.get("id") or event.get("tool_call_id") or f"event-{event.get('id')}")
        name = str(call.get("name") or event.get("tool_name") or "")
        arguments = call.get("arguments")
        parsed: Any = None
        if isinstance(arguments, str):
            try:
                parsed = jsonio.loads(arguments) if arguments else {}
            except jsonio.JSONDecodeError:
                parsed = None
        tool_call = ToolCall(
            call_id, name, parsed, arguments if isinstance(arguments, str) else None
        )
        response_id = event.get("llm_response_id")
        if response_id is not None and self.response == response_id:
            index = max(i for i, m in enumerate(self.messages) if m[0] == "assistant")
            self.messages[index][1].append(tool_call)
            return
        blocks: list[Block] = list(_thinking(event))
        for part in _list(event.get("thought")):
            blocks.extend(_v1_part(part, Origin.AGENT))
        blocks.append(tool_call)
        self.add("assistant", blocks, {**meta, "kind": "ActionEvent"})
        self.response = response_id


_V1_CONVERSATION = frozenset(
    {"SystemPromptEvent", "MessageEvent", "ActionEvent", "ObservationEvent"}
)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _content_text(parts: Any) -> str:
    return "\n".join(
        str(p["text"])
        for p in _list(parts)
        if isinstance(p, Mapping) and isinstance(p.get("text"), str)
    )


def _v1_part(part: Any, origin: Origin) -> list[Block]:
    if isinstance(part, Mapping) and isinstance(part.get("text"), str):
        return [Text(part["text"], origin)]
    if isinstance(part, Mapping):
        return [Other(str(part.get("type", "unknown")), raw=part)]
    return []


def _thinking(holder: Mapping[str, Any]) -> list[Block]:
    blocks: list[Block] = []
    for block in _list(holder.get("thinking_blocks")):
        if isinstance(block, Mapping) and isinstance(block.get("thinking"), str):
            blocks.append(Thinking(block["thinking"], block.get("signature")))
        elif isinstance(block, Mapping):
            blocks.append(Thinking("", redacted=True))
    reasoning = holder.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        blocks.append(Thinking(reasoning))
    return blocks


def _recorded_call(response: Any, call_id: str, name: str, args: Mapping[str, Any]) -> ToolCall:
    """The call as the model sent it (its arguments in ``model_response``), else the action's
    ``args`` without ``thought``."""
    choices = response.get("choices") if isinstance(response, Mapping) else None
    for choice in choices if isinstance(choices, list) else []:
        message = choice.get("message") if isinstance(choice, Mapping) else None
        calls = message.get("tool_calls") if isinstance(message, Mapping) else None
        for call in calls if isinstance(calls, list) else []:
            function = call.get("function") if isinstance(call, Mapping) else None
            if call.get("id") != call_id or not isinstance(function, Mapping):
                continue
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                try:
                    return ToolCall(call_id, name, jsonio.loads(arguments or "{}"), arguments)
                except jsonio.JSONDecodeError:
                    return ToolCall(call_id, name, None, arguments)
    rest = {k: v for k, v in args.items() if k != "thought"}
    return ToolCall(call_id, name, rest, jsonio.dumps(rest).decode())


def _text(value: Any) -> str:
    return (
        value if isinstance(value, str) else "" if value is None else jsonio.dumps(value).decode()
    )


def read_events(path: str | Path, document: Any) -> Conversation:
    """An OpenHands event list (either shape) as a read-only conversation."""
    p = Path(path)
    events = events_of(document)
    if events is None:
        raise InputError("an OpenHands trajectory is a list of events", path=p)
    builder = _Builder()
    for position, event in enumerate(events):
        if not isinstance(event, Mapping) or not (_is_v0(event) or _is_v1(event)):
            raise InputError(
                "an event needs 'action' or 'observation' (OpenHands 0.x), or 'kind', 'id' and "
                "'source' (1.x)",
                path=p,
                position=f"event {position}",
            )
        builder.event(event, position)
    messages = tuple(
        Message(role, tuple(blocks), "string" if role == "tool" else "blocks", meta=meta)
        for role, blocks, meta in builder.messages
    )
    return Conversation(
        messages=messages,
        system=tuple(builder.system),
        settings={"model": builder.model} if builder.model else {},
        dialect="openai-chat",
        system_form="blocks" if builder.system else "none",
        meta={
            "format": "openhands",
            "path": str(p),
            "read_only": True,
            "skipped": dict(builder.skipped),
        },
    )


__all__ = ["events_of", "looks_like_openhands", "read_events"]
