"""Readiness: did the agent narrate its work, so that stripping its tools keeps what it knew?

A handoff keeps the agent's words and drops its tool traffic. What the agent learnt survives only
if it wrote it down: its intent before a call, the outcome after. Narration coverage is the share
of removed tool calls with agent text before them in the same assistant message; authored tokens
per removed call is the agent's text in the stripped part divided by those calls. Both thin means
the handoff will forget. `narration_prompt` is the system-prompt section that makes an agent
narrate (shipped as ``narration_prompt.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from ipse.handoff._report import HandoffReport
from ipse.transcript import Conversation, Text, ToolCall
from ipse.transcript._shared import Origin, TokenTally

MIN_COVERAGE = 0.5  # below this share of narrated calls, warn
MIN_TOKENS_PER_CALL = 15.0  # below this many agent tokens per removed call, warn


@dataclass(frozen=True, slots=True)
class Narration:
    """Narration of the stripped part: covered calls, agent tokens per call, and a warning."""

    calls: int
    narrated: int
    agent_tokens: int

    @property
    def coverage(self) -> float:
        return round(self.narrated / self.calls, 4) if self.calls else 1.0

    @property
    def tokens_per_call(self) -> float:
        return round(self.agent_tokens / self.calls, 1) if self.calls else 0.0

    @property
    def warning(self) -> str | None:
        if not self.calls:
            return None
        if self.coverage < MIN_COVERAGE or self.tokens_per_call < MIN_TOKENS_PER_CALL:
            return (
                f"thin narration: {self.coverage:.0%} of removed calls had agent text before "
                f"them, {self.tokens_per_call:g} agent tokens per removed call; the handoff may "
                "forget what the tools showed (see `ipse micro-handoff prompt`)"
            )
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "removed_calls": self.calls,
            "narrated_calls": self.narrated,
            "coverage": self.coverage,
            "agent_tokens": self.agent_tokens,
            "agent_tokens_per_call": self.tokens_per_call,
            "warning": self.warning,
        }


def narration(conversation: Conversation, report: HandoffReport, tally: TokenTally) -> Narration:
    """Narration coverage of the part `strip` rewrote."""
    removed = {r.id for r in report.removed if r.kind == "tool"}
    calls = narrated = tokens = 0
    for message in conversation.messages[: report.cut]:
        if message.role != "assistant":
            continue
        spoken = False
        for block in message.blocks:
            if isinstance(block, Text) and block.origin is Origin.AGENT:
                tokens += tally.count(block.text)
                spoken = spoken or bool(block.text.strip())
            elif isinstance(block, ToolCall) and block.id in removed:
                calls += 1
                narrated += spoken
    return Narration(calls, narrated, tokens)


@cache
def narration_prompt() -> str:
    """The system-prompt section that makes an agent narrate its tool use."""
    from importlib import resources  # (on use: a handoff that does not print it does not pay)

    return (resources.files("ipse.handoff") / "narration_prompt.md").read_text("utf-8")


__all__ = ["MIN_COVERAGE", "MIN_TOKENS_PER_CALL", "Narration", "narration", "narration_prompt"]
