"""ipse as a compactor of the field's conformance kit (``compaction-conformance-kit``), with the
recall channel the kit does not have.

The kit hands a compactor a list of turns (``role``: system, user, assistant or tool; ``text``)
and reads the text it returns. `IpseCompactor` turns them into a conversation (a tool turn is a
tool call and its result), runs the micro-handoff (`ipse.handoff.strip` at the end), and returns
what stays: every system, user and assistant word, byte for byte. What it removed, the tool
turns, goes to its archive: `recall` finds removed text by a search string, as ``ipse recall``
does in a real archive. ipse does not summarise, so it does not fit a character budget smaller
than the authored text; the kit reports that round as over budget, honestly.

The kit is an optional extra (``pip install 'ipse[conformance]'``): it is imported on the first
compaction only.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from ipse.errors import MissingExtra
from ipse.handoff import strip
from ipse.probe._timeline import block_text
from ipse.transcript import Conversation, Text, ToolCall, ToolResult
from ipse.transcript._shared import codec

TOOL = "tool_output"  # the name tool turns are called under
START = "(start)"  # the user turn put first where the kit's turns open otherwise


class IpseCompactor:
    """A compactor for ``compaction_kit``: the micro-handoff, with an archive to recall from."""

    name = "ipse-micro-handoff"

    def __init__(self) -> None:
        self.archive: dict[str, str] = {}  # removed call id -> its call and result text

    def compact(
        self, turns: Sequence[Any], round_num: int = 1, budget_chars: int | None = None
    ) -> Any:
        """One round: the kit's ``CompactedContext`` of the handoff (``budget_chars`` is not
        fitted: ipse keeps every authored word)."""
        try:
            kit = importlib.import_module("compaction_kit.compacted")
        except ImportError as exc:
            raise MissingExtra("conformance", "compaction-conformance-kit") from exc
        return kit.CompactedContext(
            text=self.handoff(turns, round_num), compactor_name=self.name, round_num=round_num
        )

    def handoff(self, turns: Sequence[Any], round_num: int = 1) -> str:
        """The text the agent sees after the handoff of ``turns``."""
        system = [t.text for t in turns if t.role == "system"]
        messages = _messages(turns, round_num)
        if not messages:
            return "\n".join(system)
        body: dict[str, Any] = {"model": "any", "messages": messages}
        if system:
            body["system"] = "\n".join(system)
        conversation = codec("anthropic").read_body(body)
        output, report = strip(conversation, "end")
        self._keep(conversation, {r.id for r in report.removed})
        lines = [f"[system] {s}" for s in system]
        lines += [
            f"[{message.role}] {block.text}"
            for message in output.messages
            for block in message.blocks
            if isinstance(block, Text) and block.text != START
        ]
        return "\n".join(lines)

    def _keep(self, conversation: Conversation, removed: set[str]) -> None:
        """Archive the text of each removed call and its result under the call's id."""
        for _, _, block in conversation.blocks():
            key = block.id if isinstance(block, ToolCall) else None
            if isinstance(block, ToolResult):
                key = block.call_id
            if key is not None and key in removed:
                self.archive[key] = (self.archive.get(key, "") + "\n" + block_text(block)).strip()

    def recall(self, query: str) -> list[str]:
        """The archived texts holding ``query`` (case-insensitive), oldest first."""
        needle = query.lower()
        return [text for text in self.archive.values() if needle in text.lower()]


def _messages(turns: Sequence[Any], round_num: int) -> list[dict[str, Any]]:
    """The kit's turns as Anthropic messages (a tool turn: a call of `TOOL` and its result),
    opening with the user's turn the API asks for."""
    messages: list[dict[str, Any]] = []
    for number, turn in enumerate(turns):
        if turn.role == "tool":
            call_id = f"r{round_num}-t{number}"
            _add(
                messages,
                "assistant",
                {"type": "tool_use", "id": call_id, "name": TOOL, "input": {}},
            )
            _add(
                messages,
                "user",
                {"type": "tool_result", "tool_use_id": call_id, "content": turn.text},
            )
        elif turn.role != "system":
            role = "assistant" if turn.role == "assistant" else "user"
            _add(messages, role, {"type": "text", "text": turn.text})
    if messages and messages[0]["role"] != "user":
        messages.insert(0, {"role": "user", "content": [{"type": "text", "text": START}]})
    return messages


def _add(messages: list[dict[str, Any]], role: str, block: dict[str, Any]) -> None:
    if messages and messages[-1]["role"] == role:
        messages[-1]["content"].append(block)
    else:
        messages.append({"role": role, "content": [block]})


__all__ = ["IpseCompactor"]
