"""The handoff pipeline: the one call every front end (CLI, proxy, MCP server, adapters) makes.

`run` does, in this order and never in another: strip at the cut (under a budget, moving the
oldest agent narration out as one page: `ipse.handoff._budget`), mark the cut with what was
removed and the ledger of it (`ipse.handoff._marker`), give an Anthropic body the
``max_tokens`` the API requires, verify that every authored word is still there, in the
context or in the page (a loss raises `CheckFailed`; there is no way to skip it), write the
body through the caller's ``write``, and only then archive what was removed and the page. A
``write`` that raises leaves the archive untouched, so an archive entry always has an output
beside it.

The measurements (tokens, narration coverage, the policy's decision) are computed on demand by
`Handoff.document`, because counting tokens costs far more than the rewrite itself and a proxy on
the hot path does not need them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ipse.errors import CheckFailed, UsageError
from ipse.handoff._budget import Fit, candidates, fit, page_item, shrink_ledger
from ipse.handoff._cut import CHECKPOINT_TOOL, At
from ipse.handoff._ledger import DEFAULT_LEDGER_TOKENS
from ipse.handoff._marker import Marked, mark
from ipse.handoff._measure import body_bytes, handoff_document
from ipse.handoff._narration import Narration, narration
from ipse.handoff._policy import cached_share, decide
from ipse.handoff._report import HandoffReport
from ipse.handoff._strip import StripOptions, strip
from ipse.handoff._verify import Verdict, verify
from ipse.transcript import Conversation, ToolCall
from ipse.transcript._shared import codec, ensure_writable

if TYPE_CHECKING:
    from ipse._tokens import TokenCounter
    from ipse.archive._shared import ArchiveSink
    from ipse.transcript._shared import TokenTally

DEFAULT_MAX_TOKENS = 8192
BUDGET_ARGUMENT = "budget"  # the checkpoint call's argument that sets the budget of its cut


@dataclass(frozen=True, slots=True, kw_only=True)
class HandoffOptions:
    """Where to cut and how to strip; ``max_tokens`` is given to Anthropic bodies without one.

    ``budget``: hold the rewritten part to this many tokens by moving the oldest agent
    narration to the archive (a checkpoint call's own ``budget`` argument wins); None keeps
    every authored word in the context. ``ledger_tokens``: the cap of the ledger the marker
    carries. ``counter``: the tokenizer both are counted with (default o200k_base)."""

    at: At = None
    strip: StripOptions = field(default_factory=StripOptions)
    max_tokens: int = DEFAULT_MAX_TOKENS
    model: str | None = None  # the body's model when the input records none (or to replace it)
    budget: int | None = None
    ledger_tokens: int = DEFAULT_LEDGER_TOKENS
    counter: TokenCounter | None = None

    def __post_init__(self) -> None:
        if self.budget is not None and self.budget < 1:
            raise UsageError(f"budget: a number of tokens above 0, got {self.budget}")
        if self.ledger_tokens < 0:
            raise UsageError(f"ledger tokens: 0 or more, got {self.ledger_tokens}")

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
    marked: Marked | None = None  # the marker and the ledger it carries
    fitted: Fit | None = None  # the budget's outcome, when there was one
    budget: int | None = None
    tally: Any = None  # the token tally the handoff counted with

    @cached_property
    def _tally(self) -> Any:
        if self.tally is not None:
            return self.tally
        return _tally(None)

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
        doc.update(self._marked_document())
        share = cached_share(self.before)
        doc["policy"] = decide(
            self.before,
            tokens_now=doc["before"]["tokens"],
            tokens_after=doc["after"]["tokens"],
            cached_share=1.0 if share is None else share,
            checkpoint_tool=self.checkpoint_tool,
        ).to_json()
        return doc

    def _marked_document(self) -> dict[str, Any]:
        """The ledger, the marker and the budget, as ``--json`` shows them."""
        marked = self.marked
        ledger = None
        if marked is not None and marked.ledger is not None and marked.rendered is not None:
            ledger = {**marked.ledger.to_json(), **marked.rendered.to_json()}
        marker = None
        if self.report.marker is not None and marked is not None and marked.placed is not None:
            marker = {
                "message": marked.placed.index,
                "tokens": self._tally.count(self.report.marker),
                "text": self.report.marker,
            }
        budget = None
        if self.budget is not None and self.fitted is not None:
            page = self.report.page
            budget = {
                "tokens": self.budget,
                "met": self.fitted.met,
                "rewritten_tokens": self.fitted.tokens,
                "paged": None if page is None else {**_page_summary(page.call), "id": page.id},
            }
        return {"ledger": ledger, "marker": marker, "budget": budget}


def run(
    conversation: Conversation,
    options: HandoffOptions | None = None,
    *,
    session: str,
    write: Callable[[bytes], object] | None = None,
    archive: ArchiveSink | None = None,
    source: str = "",
    recallable: bool | None = None,
) -> Handoff:
    """Hand off ``conversation``: strip, mark, verify, write the body, then archive what was
    removed (and the paged narration).

    ``write`` receives the body's bytes (compact JSON in the input's dialect); ``archive``, when
    given, gets the removed items under ``session`` after ``write`` returned. ``recallable``
    says whether the marker may promise ``recall`` (default: whether ``archive`` is given).
    Raises `CheckFailed` when authored text would be lost and `InputError` subclasses for input
    the handoff cannot make valid; in both cases nothing is written or archived.
    """
    opts = options or HandoffOptions()
    ensure_writable(conversation)  # before any work: a read-only input names what can be written
    codec(conversation.dialect)  # a dialect no codec writes is a usage error, before any work
    tally = _tally(opts.counter)
    recall = archive is not None if recallable is None else recallable
    marked, fitted, budget = _handed(conversation, opts, tally, session, recall)
    report = marked.report
    after = _with_max_tokens(marked.after, opts.max_tokens)
    if opts.model:
        after = replace(after, settings={**after.settings, "model": opts.model})
    inserted = () if marked.placed is None else (marked.placed.block,)
    verdict = verify(conversation, after, at=report.cut, inserted=inserted, page=report.page)
    if not verdict.ok:
        first = verdict.lost[0] if verdict.lost else "the untouched part changed"
        raise CheckFailed(f"the handoff lost authored text: {first}")
    body = body_bytes(after)
    if write is not None:
        write(body)
    archived = 0
    if archive is not None and report.archived_items:
        archived = archive.put(session, report.archived_items, source)
    return Handoff(
        before=conversation,
        after=after,
        report=report,
        verdict=verdict,
        body=body,
        session=session,
        archived=archived,
        checkpoint_tool=opts.checkpoint_tool,
        marked=marked,
        fitted=fitted,
        budget=budget,
        tally=tally,
    )


def _tally(counter: TokenCounter | None) -> TokenTally:
    from ipse.transcript._shared import TokenTally

    if counter is None:
        from ipse._tokens import default_counter

        counter = default_counter()
    return TokenTally(counter)


def _handed(
    conversation: Conversation,
    opts: HandoffOptions,
    tally: TokenTally,
    session: str,
    recallable: bool,
) -> tuple[Marked, Fit | None, int | None]:
    """The stripped and marked conversation; under a budget, the fewest oldest agent messages
    moved out that make the rewritten part fit it."""

    def stripped(page: tuple[int, ...]) -> tuple[Conversation, HandoffReport]:
        after, report = strip(conversation, opts.at, opts.strip, page=page)
        if report.paged:
            tokens = sum(tally.count(t) for _, texts in report.paged for t in texts)
            report = replace(report, page=page_item(report.paged, tokens))
        return after, report

    def marked(parts: tuple[Conversation, HandoffReport], cap: int) -> Marked:
        after, report = parts
        return mark(
            conversation,
            after,
            report,
            cap=cap,
            count=tally.count,
            session=session,
            recallable=recallable,
        )

    first = marked(stripped(()), opts.ledger_tokens)
    budget = called_budget(conversation, first.report) or opts.budget
    if budget is None:
        return first, None, None

    def counted(page: tuple[int, ...], cap: int = opts.ledger_tokens) -> tuple[int, Marked]:
        done = first if not page and cap == opts.ledger_tokens else marked(stripped(page), cap)
        part = tally.fresh()
        part.add_messages(done.after.messages[: done.report.rewritten_out])
        return part.total, done

    narration = candidates(conversation.messages[: first.report.cut], tally.count)
    fitted = fit(budget, narration, counted)
    if not fitted.met and fitted.result.rendered is not None:
        fitted = shrink_ledger(budget, fitted, fitted.result.rendered.tokens, counted)
    return fitted.result, fitted, budget


def called_budget(conversation: Conversation, report: HandoffReport) -> int | None:
    """The budget the checkpoint call the cut was made at asks for (its ``budget``)."""
    if report.checkpoint_id is None or report.cut_kind != "checkpoint":
        return None
    for message in conversation.messages[: report.cut]:
        for block in message.blocks:
            if isinstance(block, ToolCall) and block.id == report.checkpoint_id:
                data = block.input if isinstance(block.input, Mapping) else {}
                value = data.get(BUDGET_ARGUMENT)
                if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                    return value
    return None


def _page_summary(call: Mapping[str, Any] | None) -> dict[str, Any]:
    call = call or {}
    return {k: call.get(k) for k in ("first_message", "last_message", "tokens")}


def _with_max_tokens(conversation: Conversation, max_tokens: int) -> Conversation:
    if not codec(conversation.dialect).needs_max_tokens or "max_tokens" in conversation.settings:
        return conversation
    return replace(conversation, settings={**conversation.settings, "max_tokens": max_tokens})


__all__ = [
    "BUDGET_ARGUMENT",
    "DEFAULT_MAX_TOKENS",
    "Handoff",
    "HandoffOptions",
    "called_budget",
    "run",
]
