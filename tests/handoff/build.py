"""Small builders of request bodies for the handoff tests (Anthropic and OpenAI chat shapes)."""

from __future__ import annotations

from typing import Any

from ipse.transcript._formats import anthropic, openai_chat
from ipse.transcript._model import Conversation

IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def call(call_id: str, name: str = "Bash", **arguments: Any) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": call_id,
        "name": name,
        "input": arguments or {"command": "ls"},
    }


def result(call_id: str, content: Any = "ok") -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content}


def thinking(value: str = "hmm") -> dict[str, Any]:
    return {"type": "thinking", "thinking": value, "signature": "sig"}


def user(*blocks: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def anthropic_conv(*messages: dict[str, Any], **settings: Any) -> Conversation:
    return anthropic.read_body({"model": "claude-x", **settings, "messages": list(messages)})


def oa_call(
    call_id: str, name: str = "bash", arguments: str = '{"command": "ls"}'
) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def oa_assistant(content: str | None, *calls: dict[str, Any], **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content, **extra}
    if calls:
        message["tool_calls"] = list(calls)
    return message


def oa_tool(call_id: str, content: str = "ok") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def oa_user(content: str) -> dict[str, Any]:
    return {"role": "user", "content": content}


def openai_conv(*messages: dict[str, Any]) -> Conversation:
    body = {"model": "gpt-x", "messages": [{"role": "system", "content": "be brief"}, *messages]}
    return openai_chat.read_body(body)
