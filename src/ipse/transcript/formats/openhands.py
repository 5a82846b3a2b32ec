"""OpenHands event lists (a saved or downloaded trajectory), read only.

Checked against All-Hands-AI/OpenHands 0.62.0 (156d068, ``openhands/events/serialization/
event.py``, ``openhands/core/schema/{action,observation}.py``, ``openhands/events/tool.py``,
``openhands/server/routes/trajectory.py``). Two shapes: a JSON array of events (what
``save_trajectory_path`` and the UI's "download trajectory" write) and ``{"trajectory": [...]}``
(the ``/api/conversations/{id}/trajectory`` answer). Each event has ``id``, ``timestamp``,
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
  the input; ``args.thought`` is the agent's text before the call. Calls from one model response
  (same ``model_response.id``) share one assistant message.
* an observation whose ``cause`` (or ``tool_call_metadata.tool_call_id``) is such a call: its
  result (``content``; ``error`` and ``user_rejected`` observations are errors).
* other observations with content (``error`` with no cause, ``recall`` workspace context):
  harness text in a user turn. Bookkeeping events (``change_agent_state``,
  ``agent_state_changed``, ``null``, ``recall`` actions, ``condensation`` and the like) are not
  messages; their counts go to ``Conversation.meta["skipped"]``.

The conversation is read only: OpenHands builds its requests from these events with its own
prompts, condensers and tool schemas, none of which the events record, so ipse does not write
one back (`ipse.transcript.write` says which formats it can write).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ipse import jsonio
from ipse.errors import InputError
from ipse.transcript._model import Block, Conversation, Message, Origin, Text, ToolCall, ToolResult

_NOT_MESSAGES = frozenset(
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
_ERROR_OBSERVATIONS = frozenset({"error", "user_rejected"})


def looks_like_openhands(items: Sequence[Any]) -> bool:
    """Whether a JSON array is a list of OpenHands events."""
    head = [i for i in items[:20] if isinstance(i, Mapping)]
    return (
        bool(head)
        and len(head) == len(items[:20])
        and all(
            ("action" in e or "observation" in e) and ("source" in e or "id" in e) for e in head
        )
    )


def events_of(document: Any) -> list[Any] | None:
    """The events of either shape, or None."""
    if isinstance(document, list):
        return document
    events = document.get("trajectory") if isinstance(document, Mapping) else None
    return events if isinstance(events, list) else None


class _Builder:
    def __init__(self) -> None:
        self.messages: list[tuple[str, list[Block], dict[str, Any]]] = []
        self.system: list[Text] = []
        self.calls: dict[Any, str] = {}  # event id -> call id
        self.response: Any = None  # the model response the open assistant message came from
        self.skipped: Counter[str] = Counter()

    def add(self, role: str, blocks: list[Block], meta: dict[str, Any]) -> None:
        self.messages.append((role, blocks, meta))
        self.response = None

    def event(self, event: Mapping[str, Any], position: int) -> None:
        meta = {"index": position, "event_id": event.get("id"), "timestamp": event.get("timestamp")}
        if "action" in event:
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
        self.calls[event.get("id")] = call_id
        blocks: list[Block] = []
        thought = args.get("thought")
        if isinstance(thought, str) and thought:
            blocks.append(Text(thought, Origin.AGENT))
        arguments = {k: v for k, v in args.items() if k != "thought"}
        blocks.append(ToolCall(call_id, name, arguments, jsonio.dumps(arguments).decode()))
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
        call_id = self.calls.get(event.get("cause"))
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
        if not isinstance(event, Mapping) or not ("action" in event or "observation" in event):
            raise InputError(
                "an event needs 'action' or 'observation'", path=p, position=f"event {position}"
            )
        builder.event(event, position)
    messages = tuple(
        Message(role, tuple(blocks), "string" if role == "tool" else "blocks", meta=meta)
        for role, blocks, meta in builder.messages
    )
    return Conversation(
        messages=messages,
        system=tuple(builder.system),
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
