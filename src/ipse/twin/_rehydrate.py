"""Rehydration: a twin's state rendered as the stable front of a fresh request.

Fixed order: the role from configuration (never from the snapshot), then who the twin is
talking to and the established facts, then the commitments, then the open loops with the
active one last, because it is what the twin acts on first. When a snapshot exists the text
says plainly that the conversation is mid-thread: no greeting, no re-introduction, no asking
again for established facts. No snapshot is a cold start: the clean role alone. The output is
a pure function of (role, state, time), so its bytes are deterministic and cacheable.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from ipse import jsonio
from ipse.errors import InputError
from ipse.twin._state import TwinState, utcnow

if TYPE_CHECKING:
    from ipse.twin._config import TwinConfig
    from ipse.twin._store import TwinStore

Format = Literal["anthropic", "openai", "text"]
FORMATS: tuple[str, ...] = ("anthropic", "openai", "text")


def render_context(state: TwinState, at: datetime | None = None) -> str:
    """The resumption text for a state (facts expired at ``at`` are left out)."""
    who = state.counterparty.account or "the counterparty"
    lines = [
        "# Resuming a conversation already in progress",
        "",
        f"This conversation with {who} is already under way; your context was reset, the "
        "conversation was not. Continue mid-thread: do not greet them, do not introduce "
        "yourself again, and do not ask again for anything under Established facts.",
        "",
        f"Talking with: {who}",
        "",
        "## Established facts",
    ]
    facts = state.live_facts(at or utcnow())
    lines += [f"- {f.text}" for f in facts] or ["- (none yet)"]
    lines += ["", "## Commitments (keep them)"]
    lines += [f"- {c}" for c in state.commitments] or ["- (none)"]
    lines += ["", "## Open loops (the last one is active: act on it first)"]
    waiting = [lp for lp in state.open_loops if lp.id != state.active_loop]
    active = state.loop(state.active_loop) if state.active_loop else None
    lines += [f"- {lp.text}" for lp in waiting]
    if active is not None:
        lines.append(f"- ACTIVE: {active.text}")
    if not state.open_loops:
        lines.append("- (none)")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Rehydration:
    """The request front for a twin: its role and, unless a cold start, the resumption text."""

    twin_id: str
    role: str
    context: str | None
    version: int | None = None
    state_hash: str | None = None

    @property
    def cold(self) -> bool:
        """True when the twin had no snapshot: the clean role alone."""
        return self.context is None

    def _front(self, dialect: str) -> dict[str, Any]:
        """The request prefix in a dialect's shape (``openai``: Chat Completions): the role,
        then the resumption text, as the dialect carries instructions."""
        from ipse.transcript._shared import codec

        texts = [self.role] if self.context is None else [self.role, self.context]
        return codec(dialect).front(texts)

    def anthropic(self) -> dict[str, Any]:
        """An Anthropic Messages request prefix: ``system`` blocks, cache breakpoint last."""
        return self._front("anthropic")

    def openai(self) -> dict[str, Any]:
        """An OpenAI Chat Completions request prefix: leading system messages."""
        return self._front("openai")

    def text(self) -> str:
        """Plain text: the role, a blank line, the resumption text."""
        if self.context is None:
            return self.role.rstrip("\n") + "\n"
        return self.role.rstrip("\n") + "\n\n" + self.context

    def render(self, fmt: str) -> dict[str, Any] | str:
        """The prefix in ``fmt`` (anthropic, openai or text)."""
        if fmt == "text":
            return self.text()
        if fmt in FORMATS:
            return self._front(fmt)
        raise InputError(f"format: unknown format {fmt!r} (use {', '.join(FORMATS)})")

    def to_bytes(self, fmt: str = "anthropic") -> bytes:
        """Deterministic bytes of the prefix (compact JSON, or the UTF-8 text)."""
        value = self.render(fmt)
        if isinstance(value, str):
            return value.encode("utf-8")
        return jsonio.dumps(value)


def rehydrate_state(
    state: TwinState | None,
    config: TwinConfig,
    *,
    twin_id: str,
    at: datetime | None = None,
    version: int | None = None,
    state_hash: str | None = None,
) -> Rehydration:
    """Rehydrate from a state in hand (None: cold start)."""
    context = None if state is None else render_context(state, at)
    return Rehydration(twin_id, config.role, context, version, state_hash)


def rehydrate(
    store: TwinStore, twin_id: str, config: TwinConfig, *, at: datetime | None = None
) -> Rehydration:
    """Load the twin's latest snapshot and render its request front (cold start if none)."""
    snapshot = store.latest(twin_id)
    if snapshot is None:
        return rehydrate_state(None, config, twin_id=twin_id, at=at)
    return rehydrate_state(
        snapshot.state,
        config,
        twin_id=twin_id,
        at=at,
        version=snapshot.version,
        state_hash=snapshot.state_hash,
    )
