"""The handoff pipeline: the one call every front end (CLI, proxy, MCP server, adapters) makes.

`run` does, in this order and never in another: strip at the cut, give an Anthropic body the
``max_tokens`` the API requires, verify that every authored word is still there (a loss raises
`CheckFailed`; there is no way to skip it), write the body through the caller's ``write``, and
only then archive what was removed. A ``write`` that raises leaves the archive untouched, so an
archive entry always has an output beside it.

The measurements (tokens, narration coverage, the policy's decision) are computed on demand by
`Handoff.document`, because counting tokens costs far more than the rewrite itself and a proxy on
the hot path does not need them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ipse.errors import CheckFailed
from ipse.handoff._cut import CHECKPOINT_TOOL, At
from ipse.handoff._measure import body_bytes, handoff_document
from ipse.handoff._narration import Narration, narration
from ipse.handoff._policy import cached_share, decide
from ipse.handoff._report import HandoffReport
from ipse.handoff._strip import StripOptions, strip
from ipse.handoff._verify import Verdict, verify
from ipse.transcript import Conversation, codec, ensure_writable

if TYPE_CHECKING:
    from ipse.archive import ArchiveSink

DEFAULT_MAX_TOKENS = 8192


@dataclass(frozen=True, slots=True, kw_only=True)
class HandoffOptions:
    """Where to cut and how to strip; ``max_tokens`` is given to Anthropic bodies without one."""

    at: At = None
    strip: StripOptions = field(default_factory=StripOptions)
    max_tokens: int = DEFAULT_MAX_TOKENS
    model: str | None = None  # the body's model when the input records none (or to replace it)

    @property
    def checkpoint_tool(self) -> str:
        return self.strip.checkpoint_tool


@dataclass(frozen=True, kw_only=True)
class Handoff:
    """A verified handoff: the conversation before and after, what was removed, the body."""

    before: Conversation
    after: Conversation
    report: HandoffReport
    verdict: Verdict
    body: bytes
    session: str
    archived: int
    checkpoint_tool: str = CHECKPOINT_TOOL

    @cached_property
    def _tally(self) -> Any:
        from ipse.tokens import default_counter
        from ipse.transcript import TokenTally

        return TokenTally(default_counter())

    @cached_property
    def narration(self) -> Narration:
        """How well the agent narrated the removed calls (counts tokens: not free)."""
        return narration(self.before, self.report, self._tally)

    def document(self) -> dict[str, Any]:
        """The measurement (``ipse handoff --json``): counts, tokens, bytes, narration, policy."""
        doc = handoff_document(
            self.before,
            self.after,
            self.report,
            self.verdict,
            self.narration,
            self._tally,
            self.archived,
        )
        doc["session"] = self.session
        share = cached_share(self.before)
        doc["policy"] = decide(
            self.before,
            tokens_now=doc["before"]["tokens"],
            tokens_after=doc["after"]["tokens"],
            cached_share=1.0 if share is None else share,
            checkpoint_tool=self.checkpoint_tool,
        ).to_json()
        return doc


def run(
    conversation: Conversation,
    options: HandoffOptions | None = None,
    *,
    session: str,
    write: Callable[[bytes], object] | None = None,
    archive: ArchiveSink | None = None,
    source: str = "",
) -> Handoff:
    """Hand off ``conversation``: strip, verify, write the body, then archive what was removed.

    ``write`` receives the body's bytes (compact JSON in the input's dialect); ``archive``, when
    given, gets the removed items under ``session`` after ``write`` returned. Raises
    `CheckFailed` when authored text would be lost and `InputError` subclasses for input the
    handoff cannot make valid; in both cases nothing is written or archived.
    """
    opts = options or HandoffOptions()
    ensure_writable(conversation)  # before any work: a read-only input names what can be written
    codec(conversation.dialect)  # a dialect no codec writes is a usage error, before any work
    after, report = strip(conversation, opts.at, opts.strip)
    after = _with_max_tokens(after, opts.max_tokens)
    if opts.model:
        after = replace(after, settings={**after.settings, "model": opts.model})
    verdict = verify(conversation, after, at=report.cut)
    if not verdict.ok:
        first = verdict.lost[0] if verdict.lost else "the untouched part changed"
        raise CheckFailed(f"the handoff lost authored text: {first}")
    body = body_bytes(after)
    if write is not None:
        write(body)
    archived = 0
    if archive is not None and report.removed:
        archived = archive.put(session, report.removed, source)
    return Handoff(
        before=conversation,
        after=after,
        report=report,
        verdict=verdict,
        body=body,
        session=session,
        archived=archived,
        checkpoint_tool=opts.checkpoint_tool,
    )


def _with_max_tokens(conversation: Conversation, max_tokens: int) -> Conversation:
    if not codec(conversation.dialect).needs_max_tokens or "max_tokens" in conversation.settings:
        return conversation
    return replace(conversation, settings={**conversation.settings, "max_tokens": max_tokens})


__all__ = ["DEFAULT_MAX_TOKENS", "Handoff", "HandoffOptions", "run"]
