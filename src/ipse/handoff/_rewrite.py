"""The handoff on the wire: rewrite one request body at its newest checkpoint call.

`rewrite_request(body, dialect)` finds the newest call of the checkpoint tool (``micro_handoff``
in any shape a harness delivers it: through an MCP server, a namespace, Codex's code-mode
``exec``; `ipse.handoff._recognise`) in the body's history, walking the raw items through the
codec, and hands off everything before it with the library's pipeline (`run`: strip, verify,
archive under the conversation's session, `ipse._sessions`; there is no second copy of any of
them here). Only what the handoff removes changes: every other item stays as the client sent
it. The output is a pure function of the body: the same history gives the same rewritten
prefix, byte for byte, on every later request of the conversation, so the provider's prompt
cache keeps hitting.

On models that bind a thinking block to the exact prefix before it (`binds_thinking`), the
thinking blocks of the kept turns are removed too: the prefix they were bound to no longer exists.

A proxy calls this on every request, so the work is done once per checkpoint: the rewritten
prefix is kept in a small cache keyed by a digest of the raw prefix it came from (plus the first
item after it, which decides where the cut settles). A later request whose history starts with
the same items reuses it and only splices its own new tail on, which costs a JSON dump and a hash
of the body instead of a full read, strip and verify.

A body the handoff cannot make valid is returned untouched (``body is None``) with the reason.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, replace
from typing import TYPE_CHECKING, Any

from ipse import jsonio
from ipse._sessions import CLAUDE_CODE_HEADER, filing_session, request_session
from ipse.errors import IpseError
from ipse.handoff._cut import results_by_call
from ipse.handoff._kept_thinking import binds_thinking, without_thinking
from ipse.handoff._lru import LruCache
from ipse.handoff._recognise import (
    CHECKPOINT_TOOLS,
    CODE_TOOLS,
    checkpoint_base,
    is_checkpoint_call,
    marked,
    may_need_output,
    raw_text,
    source_of,
)
from ipse.handoff._run import DEFAULT_MAX_TOKENS, Handoff, HandoffOptions, run
from ipse.handoff._strip import StripOptions
from ipse.transcript import Conversation, ToolCall
from ipse.transcript._shared import codec

if TYPE_CHECKING:
    from ipse.archive._shared import ArchiveSink
    from ipse.handoff._report import HandoffReport

_CACHE_SIZE = 32


@dataclass(frozen=True, slots=True)
class Rewrite:
    """The outcome of `rewrite_request`.

    ``body`` is the rewritten body (a new dict) or None when nothing was done, and then
    ``reason`` says why. ``anchor`` is the checkpoint call's id the cut was made at."""

    body: dict[str, Any] | None
    _: KW_ONLY
    anchor: str | None = None
    reason: str | None = None
    checkpoint_tool: str | None = None
    removed_calls: int = 0
    removed_thinking: int = 0  # before the cut
    kept_thinking_removed: int = 0  # from the kept turns (models that bind thinking)
    removed_bytes: int = 0  # the removed items' JSON
    merged: int = 0  # kept messages merged with a neighbour because the API wants alternation
    archived: int = 0
    session: str | None = None  # the session what was removed was archived under
    cached: bool = False  # the rewritten prefix came from the cache
    settled: bool = False  # the checkpoint call is answered: later requests keep this prefix
    invalid: bool = False  # the body had a checkpoint but the handoff could not make it valid
    marker: bool = False  # a marker at the cut says what was removed (and holds the ledger)

    @property
    def applied(self) -> bool:
        return self.body is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "applied": self.applied,
            "anchor": self.anchor,
            "reason": self.reason,
            "checkpoint_tool": self.checkpoint_tool,
            "removed_calls": self.removed_calls,
            "removed_thinking": self.removed_thinking,
            "kept_thinking_removed": self.kept_thinking_removed,
            "removed_bytes": self.removed_bytes,
            "merged": self.merged,
            "archived": self.archived,
            "session": self.session,
            "cached": self.cached,
            "settled": self.settled,
            "invalid": self.invalid,
            "marker": self.marker,
        }


@dataclass(frozen=True, slots=True)
class _Entry:
    """A rewritten prefix: the raw items it replaces (count and digest) and what replaces them."""

    consumed: int  # raw items of the input replaced by ``prefix``
    digest: bytes  # of those items plus the first item after them (when there was one)
    with_next: bool
    prefix: tuple[Any, ...]
    tool: str
    removed_calls: int
    removed_thinking: int
    removed_bytes: int
    merged: int = 0
    marker: bool = False


@dataclass(frozen=True, slots=True)
class _Failure:
    """A history the handoff could not make valid: later requests that only append to it are
    left untouched at once, without reading and stripping it again."""

    count: int  # raw items of the failed history
    digest: bytes
    reason: str
    tool: str
    # whether appending can no longer change the verdict: the items after the checkpoint call
    # decide the boundary (an empty rewritten part, the first kept role), so a failure with a
    # short tail is remembered only for the same history sent again (a retry, a count)
    settled: bool = False


_SETTLED_TAIL = 4  # items from the checkpoint call's on: its result, and the turns after it


_CACHE = LruCache(_CACHE_SIZE)
_FAILED = LruCache(_CACHE_SIZE)


def clear_cache() -> None:
    """Forget every cached rewritten prefix, the autopilot's cuts too (tests and benchmarks
    measure the cold path; a failed archive makes the next request rewrite from scratch)."""
    _CACHE.clear()
    _FAILED.clear()
    from ipse.handoff._autopilot_body import clear_autopilot_cache

    clear_autopilot_cache()


def rewrite_request(
    body: Mapping[str, Any],
    dialect: str,
    *,
    anchor: str | None = None,
    tool_names: Sequence[str] = CHECKPOINT_TOOLS,
    archive: ArchiveSink | None = None,
    session: str = "proxy",
    source: str = "proxy",
    strip_options: StripOptions | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    use_cache: bool = True,
    budget: int | None = None,
) -> Rewrite:
    """Hand off ``body`` at its newest checkpoint call; see the module docstring.

    ``anchor`` is the checkpoint call id a caller stored for this conversation (a hint that
    makes the cache lookup cheaper; the newest checkpoint call in the body always wins).
    ``archive`` gets what was removed, the first time a prefix is rewritten: under the session
    the checkpoint's answer names, unless both it and ``session`` are a harness's session ids
    (then ``session``, the request's own: `ipse._sessions.filing_session`); else ``session``.
    ``budget`` holds the rewritten part to that many tokens (`HandoffOptions.budget`; the
    checkpoint call's own ``budget`` argument wins).
    """
    dialect_codec = codec(dialect)
    key_name = dialect_codec.history_key
    raw = body.get(key_name)
    if not isinstance(raw, list) or not raw:
        return Rewrite(None, reason="the body has no message history")
    # An invalid request (a result without its call) goes on untouched, never repaired here.
    opts = replace(strip_options or StripOptions(), drop_orphans=False)
    opts_key = _options_key(opts, max_tokens, budget)
    if use_cache and anchor is not None:
        hit = _from_cache(body, raw, dialect, key_name, anchor, tool_names, opts_key, max_tokens)
        if hit is not None:
            return hit
    found = _newest_checkpoint(raw, dialect, tool_names)
    if found is None:
        return Rewrite(None, reason="no checkpoint call in the history")
    call_id, tool, base, at_item = found
    if use_cache:
        hit = _from_cache(body, raw, dialect, key_name, call_id, tool_names, opts_key, max_tokens)
        if hit is not None:
            return hit
        failed = _known_failure(raw, dialect, call_id, opts_key)
        if failed is not None:
            return Rewrite(
                None, anchor=call_id, checkpoint_tool=tool, reason=failed.reason, invalid=True
            )
    if archive is not None:
        # the checkpoint's answer names the session it was recorded under: what this handoff
        # removes goes there too, unless the request names a harness session of its own
        # (`filing_session`)
        session = filing_session(session, _recorded(raw, dialect, call_id))
    try:
        conversation = dialect_codec.read_body(body)
        handoff = run(
            conversation,
            HandoffOptions(
                at="checkpoint",
                strip=_with_tool(opts, base),
                max_tokens=max_tokens,
                budget=budget,
            ),
            session=session,
            archive=archive,
            source=source,
        )
    except IpseError as exc:
        reason = f"left untouched: {exc}"
        if use_cache:
            settled = len(raw) - at_item >= _SETTLED_TAIL
            failure = _Failure(len(raw), _digest(raw, len(raw) - 1), reason, tool, settled)
            _FAILED.put((dialect, call_id, opts_key), failure)
        return Rewrite(None, anchor=call_id, checkpoint_tool=tool, reason=reason, invalid=True)
    return _rewritten(
        body, raw, dialect, conversation, handoff, (call_id, tool, opts_key), max_tokens, use_cache
    )


def _options_key(options: StripOptions, max_tokens: int, budget: int | None) -> str:
    """What besides the history decides a rewrite's bytes (part of its cache key)."""
    return repr(
        (options.join_texts, options.promote_thinking, options.breadcrumbs, max_tokens, budget)
    )


def _known_failure(raw: list[Any], dialect: str, call_id: str, opts_key: str) -> _Failure | None:
    """The remembered failure of this history, when the body only appends to it (or, for a
    failure whose verdict a tail could still change, sends it again as it was)."""
    failed: _Failure | None = _FAILED.get((dialect, call_id, opts_key))
    if (
        failed is not None
        and (failed.count == len(raw) or failed.settled)
        and failed.count <= len(raw)
        and _digest(raw, failed.count - 1) == failed.digest
    ):
        return failed
    return None


def _rewritten(
    body: Mapping[str, Any],
    raw: list[Any],
    dialect: str,
    conversation: Conversation,
    handoff: Handoff,
    checkpoint: tuple[str, str, str],
    max_tokens: int,
    use_cache: bool,
) -> Rewrite:
    """The handoff as a rewrite of ``body``: its new prefix spliced before the raw tail (and
    cached for the requests that append, once the checkpoint call is answered), or, where the
    tail was re-written, the pipeline's whole body. ``checkpoint``: the call id, the tool's
    name and the options' cache key."""
    call_id, tool, opts_key = checkpoint
    dialect_codec = codec(dialect)
    key_name = dialect_codec.history_key
    report = handoff.report
    written = dialect_codec.write_body(handoff.after)[key_name]
    tail_count = _tail_items(conversation, report.cut, dialect)
    consumed = len(raw) - tail_count
    split = len(written) - tail_count
    entry = _entry(raw, consumed, written[:split], tool, report)
    tail_is_raw = split >= 0 and all(
        a is b for a, b in zip(written[split:], raw[consumed:], strict=True)
    )
    # A checkpoint call still waiting for its result cuts before it; once answered the cut moves
    # after it, so only a prefix that holds the answered call is reused.
    settled = report.checkpoint_id in report.kept_calls
    if use_cache and tail_is_raw and settled:
        _CACHE.put((dialect, call_id, opts_key), entry)
    if tail_is_raw:
        spliced = _spliced(
            body, raw, key_name, dialect, entry, call_id, max_tokens, cached=False, settled=settled
        )
        return replace(spliced, archived=handoff.archived, session=handoff.session)
    # The tail was re-written (it should not be): give the pipeline's body as it is.
    out = dialect_codec.write_body(handoff.after)
    return Rewrite(
        out,
        anchor=call_id,
        checkpoint_tool=tool,
        removed_calls=entry.removed_calls,
        removed_thinking=entry.removed_thinking,
        removed_bytes=entry.removed_bytes,
        merged=entry.merged,
        archived=handoff.archived,
        session=handoff.session,
        settled=settled,
        marker=entry.marker,
    )


def _entry(
    raw: list[Any], consumed: int, prefix: list[Any], tool: str, report: HandoffReport
) -> _Entry:
    """The cache entry of a rewritten prefix: the ``consumed`` raw items it replaces and what
    the handoff removed from them."""
    removed_bytes = sum(
        len(jsonio.dumps(r.call or {})) + (len(jsonio.dumps(r.result)) if r.result else 0)
        for r in report.removed
    )
    return _Entry(
        consumed=consumed,
        digest=_digest(raw, consumed),
        with_next=consumed < len(raw),
        prefix=tuple(prefix),
        tool=tool,
        removed_calls=report.removed_calls,
        removed_thinking=report.removed_thinking,
        removed_bytes=removed_bytes,
        merged=report.merged_messages,
        marker=report.marker is not None,
    )


def _with_tool(options: StripOptions, tool: str) -> StripOptions:
    return StripOptions(
        checkpoint_tool=tool,
        join_texts=options.join_texts,
        promote_thinking=options.promote_thinking,
        breadcrumbs=options.breadcrumbs,
        breadcrumb_width=options.breadcrumb_width,
        drop_orphans=options.drop_orphans,
    )


def _from_cache(
    body: Mapping[str, Any],
    raw: list[Any],
    dialect: str,
    key_name: str,
    anchor: str,
    tool_names: Sequence[str],
    opts_key: str,
    max_tokens: int,
) -> Rewrite | None:
    entry = _CACHE.get((dialect, anchor, opts_key))
    if entry is None or entry.consumed > len(raw):
        return None
    if entry.with_next != (entry.consumed < len(raw)):
        return None
    if _digest(raw, entry.consumed) != entry.digest:
        return None
    newer = _newest_checkpoint(raw[entry.consumed :], dialect, tool_names)
    if newer is not None and newer[0] != anchor:
        return None
    return _spliced(
        body, raw, key_name, dialect, entry, anchor, max_tokens, cached=True, settled=True
    )


def _spliced(
    body: Mapping[str, Any],
    raw: list[Any],
    key_name: str,
    dialect: str,
    entry: _Entry,
    anchor: str,
    max_tokens: int,
    *,
    cached: bool,
    settled: bool,
) -> Rewrite:
    tail = raw[entry.consumed :]
    dropped = 0
    prefix: Sequence[Any] = entry.prefix
    if codec(dialect).thinking_binds and binds_thinking(body.get("model")):
        if prefix:
            [last, *tail], dropped = without_thinking(tail, prefix[-1])
            prefix = (*prefix[:-1], last)
        else:
            tail, dropped = without_thinking(tail)
    out = dict(body)
    out[key_name] = [*prefix, *tail]
    if codec(dialect).needs_max_tokens and "max_tokens" not in out:
        out["max_tokens"] = max_tokens
    return Rewrite(
        out,
        anchor=anchor,
        checkpoint_tool=entry.tool,
        removed_calls=entry.removed_calls,
        removed_thinking=entry.removed_thinking,
        kept_thinking_removed=dropped,
        removed_bytes=entry.removed_bytes,
        merged=entry.merged,
        cached=cached,
        settled=settled,
        marker=entry.marker,
    )


def _digest(raw: Sequence[Any], consumed: int) -> bytes:
    part = raw[: consumed + 1]
    # sha256 runs on the CPU's SHA instructions where they exist: twice blake2b's speed on a
    # megabyte (bench/proxy.py), and this hash is on every proxied request's path
    return hashlib.sha256(jsonio.dumps(list(part))).digest()


def _tail_items(conversation: Conversation, cut: int, dialect: str) -> int:
    """The raw history items the messages from ``cut`` on were read from."""
    items_of = codec(dialect).raw_items
    return sum(items_of(m) for m in conversation.messages[cut:])


# ------------------------------------------------------------------------ finding the checkpoint


def _newest_checkpoint(
    raw: Sequence[Any], dialect: str, tool_names: Sequence[str]
) -> tuple[str, str, str, int] | None:
    """(call id, tool name as called, checkpoint tool it calls, index of the item holding the
    call) of the newest checkpoint call, in any shape `checkpoint_base` recognises; a call known
    only by its answer (``tools[name](...)`` in a code tool) counts once it is answered."""
    dialect_codec = codec(dialect)
    newest: tuple[str, str, str, int] | None = None
    pending: dict[str, tuple[str, int]] = {}
    for call in dialect_codec.raw_calls(raw):
        code = source_of(call.input) if call.name in CODE_TOOLS else None
        base = checkpoint_base(call.name, tool_names, namespace=call.namespace, code=code)
        if base is not None:
            if newest is None or call.at >= newest[3]:
                newest = (call.id, call.name, base, call.at)
        elif may_need_output(call.name, call.namespace):
            pending[call.id] = (call.name, call.at)
    if pending:
        for result in dialect_codec.raw_results(raw):
            found = pending.get(result.call_id)
            if found is None or (newest is not None and found[1] < newest[3]):
                continue
            base = checkpoint_base(found[0], tool_names, output=raw_text(result.output))
            if base is not None:
                newest = (result.call_id, found[0], base, found[1])
    return newest


SESSION_HEADER = CLAUDE_CODE_HEADER


def conversation_key(headers: Mapping[str, str], body: Mapping[str, Any], dialect: str) -> str:
    """The key of the conversation a request belongs to: the harness's session (`request_session`:
    Claude Code's ``x-claude-code-session-id``, Codex's ``session-id``, ...) as every part of ipse
    keys it (``session:<id>``); else a Responses body's ``prompt_cache_key``; else a hash of the
    system prompt and the first user message (stable across the conversation's requests,
    different between conversations)."""
    found = request_session(headers, body)
    if found is not None:
        return found
    cache_key = body.get("prompt_cache_key")
    if (
        isinstance(cache_key, str)
        and cache_key
        and cache_key.isprintable()
        and len(cache_key) <= 200
    ):
        return f"cache-key:{cache_key}"
    dialect_codec = codec(dialect)
    history = body.get(dialect_codec.history_key)
    items = history if isinstance(history, list) else [history]
    system = dialect_codec.raw_front(body)
    first = next(
        (m for m in items if isinstance(m, Mapping) and m.get("role") == "user"),
        items[0] if items else None,
    )
    digest = hashlib.sha256(jsonio.dumps([system, first])).hexdigest()[:32]
    return f"hash:{digest}"


def _recorded(raw: Sequence[Any], dialect: str, call_id: str) -> str | None:
    """The session the checkpoint call ``call_id`` was recorded under, as its answer says."""
    for result in codec(dialect).raw_results(raw):
        if result.call_id == call_id:
            said = marked(raw_text(result.output))
            return said[1] if said is not None else None
    return None


def checkpoint_calls(
    conversation: Conversation, tool_names: Sequence[str] = CHECKPOINT_TOOLS
) -> list[ToolCall]:
    """The checkpoint calls of a conversation, in order, in any shape a harness delivers them
    (`ipse.handoff._recognise`)."""
    results = results_by_call(conversation.messages)
    return [
        b
        for m in conversation.messages
        for b in m.blocks
        if isinstance(b, ToolCall) and is_checkpoint_call(b, tool_names, results.get(b.id))
    ]


__all__ = [
    "CHECKPOINT_TOOLS",
    "SESSION_HEADER",
    "Rewrite",
    "binds_thinking",
    "checkpoint_calls",
    "clear_cache",
    "conversation_key",
    "rewrite_request",
]
