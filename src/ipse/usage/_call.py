"""One billed call: when, which model, whose session, and the tokens it was billed for.

Every reader of ``ipse usage`` (Claude Code sessions and their sub-agents, Codex rollouts,
Gemini CLI sessions, the ipse proxy's record) turns what it reads into `Call`\\ s; the tally
(`ipse.usage._tally`) sums them. ``key`` is the call's identity across files: the response id
and the request id where the record has them (``msg_...:req_...``: the same in a session
file, a sub-agent's file, a resumed session's copy and the proxy's record of that call), an
identity of the reader's own where it has none (a rollout's call, a Gemini message), empty
where the record says nothing that identifies the call (it is then counted where it is read).
The tokens are `ipse.prefix.billed_tokens`'s: one rule for what a call was billed for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Call:
    """One billed call."""

    key: str  # identity across files ("" when the record has none)
    time: float  # Unix seconds, when the response was recorded
    model: str
    provider: str  # anthropic, openai, google: whose prices
    source: str  # the agent CLI that made it (claude-code, codex, gemini) or "proxy"
    project: str
    session: str
    agent: str  # "" for the main conversation, else the sub-agent's name
    input: int  # uncached input
    write_5m: int
    write_1h: int
    read: int
    output: int

    def row(self) -> tuple[Any, ...]:
        """The call as a tuple of its fields, in order (how the index stores it)."""
        return (self.key, self.time, self.model, self.provider, self.source, self.project,
                self.session, self.agent, self.input, self.write_5m, self.write_1h, self.read,
                self.output)  # fmt: skip

    @property
    def tokens(self) -> int:
        return self.input + self.write_5m + self.write_1h + self.read + self.output

    @property
    def context(self) -> int:
        """The input tokens the call sent (its context, less what it wrote back)."""
        return self.input + self.write_5m + self.write_1h + self.read


def counted(kept: Call, other: Call) -> Call:
    """Of two records of one call, the one that counts: the one with the most output (a
    streamed response's records each carry the output counted so far), the earlier on a tie
    (the first file read where both are copies)."""
    if other.output > kept.output:
        return other
    return kept


__all__ = ["Call", "counted"]
