"""The before/after measurement of a handoff: counts, authored characters, tokens, bytes.

Tokens are the conversation's message tokens (system prompt and tool definitions do not change
in a handoff), counted with one `TokenTally`; bytes are the compact JSON of the request body as
written. Authored characters after the handoff are those `verify` found again, so the two
columns are equal exactly when nothing authored was lost.
"""

from __future__ import annotations

from typing import Any

from ipse import jsonio
from ipse.handoff._narration import Narration
from ipse.handoff._report import HandoffReport
from ipse.handoff._verify import Verdict, authored_chars
from ipse.transcript import Conversation, Text, Thinking, ToolCall, ToolResult, write
from ipse.transcript._shared import TokenTally

MEASURE_KEYS = (
    "messages",
    "text_blocks",
    "tool_calls",
    "tool_results",
    "thinking_blocks",
    "authored_chars",
    "tokens",
    "bytes",
)


def body_bytes(conversation: Conversation) -> bytes:
    """The request body as compact JSON (the bytes a handoff writes)."""
    return jsonio.dumps(write(conversation))


def measure(conversation: Conversation, tally: TokenTally) -> dict[str, int]:
    """Counts of one conversation, keyed as `MEASURE_KEYS`."""
    counts = dict.fromkeys(MEASURE_KEYS, 0)
    counts["messages"] = len(conversation.messages)
    for _, _, block in conversation.blocks():
        if isinstance(block, Text):
            counts["text_blocks"] += 1
        elif isinstance(block, ToolCall):
            counts["tool_calls"] += 1
        elif isinstance(block, ToolResult):
            counts["tool_results"] += 1
        elif isinstance(block, Thinking):
            counts["thinking_blocks"] += 1
    counts["authored_chars"] = authored_chars(conversation.messages)
    messages = tally.fresh()
    messages.add_messages(conversation.messages)
    counts["tokens"] = messages.total
    counts["bytes"] = len(body_bytes(conversation))
    return counts


def tokens_saved(before: Conversation, after: Conversation, tally: TokenTally | None = None) -> int:
    """The message tokens a handoff saved: ``tokens`` before minus after in `Handoff.document` (0 at
    least). The one count of a handoff's saving, wherever it is shown (``ipse handoff``, the
    proxy's log line and record)."""
    if tally is None:
        from ipse._tokens import default_counter

        tally = TokenTally(default_counter())
    old, new = tally.fresh(), tally.fresh()
    old.add_messages(before.messages)
    new.add_messages(after.messages)
    return max(0, old.total - new.total)


def saving(before: int, after: int) -> float:
    """The share saved, as a percentage rounded to one place."""
    return round(100.0 * (before - after) / before, 1) if before else 0.0


def handoff_document(
    before: Conversation,
    after: Conversation,
    report: HandoffReport,
    verdict: Verdict,
    narration: Narration,
    tally: TokenTally,
    archived: int,
) -> dict[str, Any]:
    """The ``--json`` document of ``ipse handoff``."""
    old = measure(before, tally)
    new = measure(after, tally)
    new["authored_chars"] = verdict.found_chars - verdict.paged_chars  # (in the context)
    return {
        "before": old,
        "after": new,
        "saved_tokens_pct": saving(old["tokens"], new["tokens"]),
        "saved_bytes_pct": saving(old["bytes"], new["bytes"]),
        "authored_preserved": verdict.ok and verdict.found_chars == old["authored_chars"],
        "narration_coverage": narration.coverage,
        "archived": archived,
        "cut": {
            "kind": report.cut_kind,
            "requested": report.requested_cut,
            "at": report.cut,
            "checkpoint_id": report.checkpoint_id,
            "untouched_messages": len(before.messages) - report.cut,
        },
        "removed": {"tool_calls": report.removed_calls, "thinking": report.removed_thinking},
        "costs": {
            "breadcrumb_tokens": sum(tally.count(x) for x in report.breadcrumbs),
            "promoted_thinking_tokens": sum(tally.count(x) for x in report.promoted),
        },
        "narration": narration.to_json(),
        "carried_problems": [str(p) for p in report.carried_problems],
    }


__all__ = ["MEASURE_KEYS", "body_bytes", "handoff_document", "measure", "saving", "tokens_saved"]
