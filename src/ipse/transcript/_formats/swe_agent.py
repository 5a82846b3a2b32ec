"""SWE-agent ``.traj`` files and mini-swe-agent trajectories, read as Chat Completions.

Both keep the model's conversation as OpenAI-style chat messages with fields of their own
around them. The reader rebuilds the messages the agent sends (chat roles, chat fields only) so
a written body is one the Chat Completions API accepts; the rest stays in ``Message.meta``.

SWE-agent 1.1.0 (checked: SWE-agent/SWE-agent at 3ea751c, ``sweagent/types.py``,
``sweagent/agent/agents.py``, ``models.py``): a JSON object with ``trajectory`` (the steps:
``action``, ``observation``, ``response``, ``thought``, ``state``, ``query``,
``execution_time``, ``extra_info``), ``history`` (``HistoryItem``: ``role`` system, user,
assistant or tool; ``content`` a string or a list of parts; ``message_type`` system_prompt,
demonstration, observation, action, thought, user, assistant; optional ``agent``,
``is_demo``, ``thought``, ``action``, ``tool_calls``, ``tool_call_ids`` (one id per tool
message), ``tags``, ``cache_control``, ``thinking_blocks``), ``info`` (``model_stats``,
``exit_status``, ``submission``, ``swe_agent_version``, ...), ``replay_config`` (a JSON string
of the run config; the model is ``agent.model.name``) and ``environment``. A retry agent adds
``attempts`` and copies the chosen attempt to the top level. Demonstrations
(``trajectories/demonstrations/*.traj``) hold only ``history``. Messages are rebuilt as SWE-agent's
``_history_to_messages`` does: a ``tool`` item gets ``tool_call_id`` from ``tool_call_ids[0]``,
an item with ``tool_calls`` keeps them. The history is the full one; history processors that
elide old observations when sending are not replayed.

Text actions (SWE-agent 0.7, and 1.x's ``thought_action`` parser): no function calls; the
assistant item holds its reply with ``thought`` (the words) and ``action`` (the command), and
the environment's answer comes back as the next ``user`` item. Such an action is read as the
agent's words plus a tool call (id ``action-<item>``, named by the command's first word, the
whole command in ``{"action": ...}``) and the answer as its tool result, so a handoff removes
both; the task statement and other user items stay the human's text, a demonstration
(``is_demo``, ``message_type: demonstration``) the harness's. Written back, these are Chat
Completions ``tool_calls`` and ``tool`` messages.

mini-swe-agent (``trajectory_format`` ``mini-swe-agent-1``, ``mini-swe-agent-1.1``; seen in
a 1.1 trajectory of SWE-agent/mini-swe-agent forks): ``{info, messages, trajectory_format,
instance_id}``; each message is a litellm message dict plus ``extra`` (``actions``,
``raw_output``, ``exit_status``, ...), ``function_call``, ``provider_specific_fields``, and
tool calls carry a streaming ``index``. The last message may have ``role: "exit"`` (the
submission): it is no chat message and is kept in ``Conversation.meta["exit"]``. The model is
``info.config.model.model_name``.

Kept per message: only ``role``, ``content`` (its parts without the ``cache_control`` that
SWE-agent's cache history processor sets), ``name``, ``tool_calls`` (``id``, ``type``,
``function`` with ``name`` and ``arguments``), ``tool_call_id``. Thinking blocks and
reasoning fields are not sent back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ipse import jsonio
from ipse._names import Names
from ipse.errors import InputError
from ipse.transcript._formats import openai_chat
from ipse.transcript._model import Conversation, Message, Origin, Text

CHAT_ROLES = Names({"system", "developer", "user", "assistant", "tool"})
_CHAT_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id")


def looks_like_swe_agent(document: Mapping[str, Any]) -> bool:
    """A ``.traj`` object: ``history`` with ``trajectory`` steps, or (a demonstration) a
    ``history`` of items that carry SWE-agent's ``message_type``."""
    history = document.get("history")
    if not isinstance(history, list):
        return False
    if isinstance(document.get("trajectory"), list):
        return True
    head = history[:5]
    return bool(head) and all(isinstance(h, Mapping) and "message_type" in h for h in head)


def looks_like_mini_swe_agent(document: Mapping[str, Any]) -> bool:
    kind = document.get("trajectory_format")
    return isinstance(kind, str) and kind.startswith("mini-swe-agent")


def chat_message(item: Mapping[str, Any]) -> dict[str, Any]:
    """A message with chat fields only, tool calls in the request's shape."""
    out = {k: item[k] for k in _CHAT_KEYS if k in item and item[k] is not None}
    content = out.get("content")
    if isinstance(content, list):
        out["content"] = [_chat_part(part) for part in content]
    calls = out.get("tool_calls")
    if isinstance(calls, list):
        out["tool_calls"] = [_chat_call(c) for c in calls]
        if not out["tool_calls"]:
            del out["tool_calls"]
    if "content" not in out:
        out["content"] = None if out.get("tool_calls") else ""
    return out


def _chat_part(part: Any) -> Any:
    """A content part without the ``cache_control`` SWE-agent's history processors add."""
    if isinstance(part, Mapping) and "cache_control" in part:
        return {k: v for k, v in part.items() if k != "cache_control"}
    return part


def _chat_call(call: Any) -> Any:
    if not isinstance(call, Mapping):
        return call
    function = call.get("function")
    out: dict[str, Any] = {"id": call.get("id"), "type": call.get("type") or "function"}
    if isinstance(function, Mapping):
        out["function"] = {
            "name": function.get("name"),
            "arguments": function.get("arguments"),
        }
    else:
        out["function"] = function
    return out


def read_swe_agent(document: Any, *, source: str) -> Conversation:
    """A SWE-agent ``.traj`` object as a Chat Completions conversation."""
    if not isinstance(document, Mapping) or not isinstance(document.get("history"), list):
        raise InputError("a SWE-agent trajectory needs a 'history' list", path=source)
    messages: list[dict[str, Any]] = []
    metas: list[dict[str, Any]] = []
    pending: str | None = None  # the call id of a text action whose observation comes next
    for index, item in enumerate(document["history"]):
        if not isinstance(item, Mapping):
            raise InputError(
                "a history item must be an object", path=source, position=f"item {index}"
            )
        role = item.get("role")
        demo = bool(item.get("is_demo")) or item.get("message_type") == "demonstration"
        acted = role == "assistant" and not demo and _text_action(item) is not None
        messages.append(_history_message(item, index, pending if not demo else None, acted))
        pending = f"action-{index}" if acted else None
        if role not in CHAT_ROLES:
            raise InputError(
                f"a history item with role {role!r}", path=source, position=f"item {index}"
            )
        kept = ("agent", "message_type", "is_demo", "thought", "action")
        metas.append({"index": index, **{k: item[k] for k in kept if k in item}})
    model = _swe_agent_model(document)
    info = document.get("info")
    extra = {"info": info} if isinstance(info, Mapping) else {}
    conversation = _conversation(messages, metas, model, source, "swe-agent", extra)
    return replace(conversation, messages=tuple(_demo_as_harness(m) for m in conversation.messages))


def _history_message(
    item: Mapping[str, Any], index: int, pending: str | None, acted: bool
) -> dict[str, Any]:
    """One history item as a chat message: a tool's answer, the observation of the text action
    before it (``pending``, a user item), a text action made a call (``acted``), or as it is."""
    role = item.get("role")
    if role == "tool":
        ids = item.get("tool_call_ids")
        call_id = ids[0] if isinstance(ids, list) and ids else item.get("tool_call_id")
        return chat_message(
            {"role": "tool", "content": item.get("content"), "tool_call_id": call_id}
        )
    if role == "user" and pending is not None:
        return chat_message(
            {"role": "tool", "content": item.get("content"), "tool_call_id": pending}
        )
    if acted:
        return _action_message(item, f"action-{index}")
    return chat_message(item)


def _text_action(item: Mapping[str, Any]) -> str | None:
    """The command of an assistant item that acted in text (no function call), else None."""
    action = item.get("action")
    if not isinstance(action, str) or not action.strip() or item.get("tool_calls"):
        return None
    return action


def _action_message(item: Mapping[str, Any], call_id: str) -> dict[str, Any]:
    """A text action as the agent's words and a call: the words are its ``thought`` (the
    reply without the command) when recorded, the call is named by the command's first word
    and holds the whole command, so a handoff removes the command and keeps the words."""
    action = _text_action(item) or ""
    thought = item.get("thought")
    words = thought if isinstance(thought, str) else item.get("content")
    call = {
        "id": call_id,
        "type": "function",
        "function": {
            "name": action.split(maxsplit=1)[0],
            "arguments": jsonio.dumps({"action": action}).decode(),
        },
    }
    return chat_message({"role": "assistant", "content": words, "tool_calls": [call]})


def _demo_as_harness(message: Message) -> Message:
    """A demonstration's text is the harness's (an example it shows), not the human's."""
    if not (message.meta.get("is_demo") or message.meta.get("message_type") == "demonstration"):
        return message
    blocks = tuple(
        replace(b, origin=Origin.HARNESS) if isinstance(b, Text) and b.origin is Origin.HUMAN
        else b
        for b in message.blocks
    )  # fmt: skip
    return replace(message, blocks=blocks)


def _swe_agent_model(document: Mapping[str, Any]) -> str | None:
    config = document.get("replay_config")
    if isinstance(config, str):
        try:
            config = jsonio.loads(config)
        except jsonio.JSONDecodeError:
            return None
    agent = config.get("agent") if isinstance(config, Mapping) else None
    model = agent.get("model") if isinstance(agent, Mapping) else None
    name = model.get("name") if isinstance(model, Mapping) else None
    return name if isinstance(name, str) else None


def read_mini_swe_agent(document: Any, *, source: str) -> Conversation:
    """A mini-swe-agent trajectory as a Chat Completions conversation (its exit record aside)."""
    if not isinstance(document, Mapping) or not isinstance(document.get("messages"), list):
        raise InputError("a mini-swe-agent trajectory needs a 'messages' list", path=source)
    messages: list[dict[str, Any]] = []
    metas: list[dict[str, Any]] = []
    extra: dict[str, Any] = {}
    for index, item in enumerate(document["messages"]):
        if not isinstance(item, Mapping):
            raise InputError(
                "a message must be an object", path=source, position=f"message {index}"
            )
        role = item.get("role")
        if role not in CHAT_ROLES:
            extra.setdefault("not_messages", []).append({"index": index, "role": role})
            if role == "exit":
                extra["exit"] = {k: v for k, v in item.items() if k != "role"}
            continue
        messages.append(chat_message(item))
        meta: dict[str, Any] = {"index": index}
        if "extra" in item:
            meta["extra"] = item["extra"]
        metas.append(meta)
    info = document.get("info")
    config = info.get("config") if isinstance(info, Mapping) else None
    model_config = config.get("model") if isinstance(config, Mapping) else None
    name = model_config.get("model_name") if isinstance(model_config, Mapping) else None
    if isinstance(info, Mapping):
        extra["info"] = info
    return _conversation(
        messages, metas, name if isinstance(name, str) else None, source, "mini-swe-agent", extra
    )


def _conversation(
    messages: list[dict[str, Any]],
    metas: list[dict[str, Any]],
    model: str | None,
    source: str,
    fmt: str,
    extra: Mapping[str, Any],
) -> Conversation:
    body: dict[str, Any] = {"model": model} if model else {}
    body["messages"] = messages
    read = openai_chat.read_body(body, source=source)
    system_count = int(read.meta.get("system_messages", 0))
    rebuilt = tuple(
        replace(m, meta={**m.meta, **meta})
        for m, meta in zip(read.messages, metas[system_count:], strict=True)
    )
    return replace(
        read,
        messages=rebuilt,
        raw=None,
        meta={**read.meta, **extra, "format": fmt, "path": source},
    )


def read_trajectory(path: str | Path, document: Any, fmt: str) -> Conversation:
    """Either kind of trajectory, by format name."""
    if fmt == "swe-agent":
        return read_swe_agent(document, source=str(path))
    return read_mini_swe_agent(document, source=str(path))


__all__ = [
    "CHAT_ROLES",
    "chat_message",
    "looks_like_mini_swe_agent",
    "looks_like_swe_agent",
    "read_mini_swe_agent",
    "read_swe_agent",
    "read_trajectory",
]
