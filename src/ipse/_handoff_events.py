"""A handoff is an event: the first request of a conversation cut at a checkpoint it was not cut
at before. Every later request of the conversation carries the same rewritten prefix, so it is
rewritten too, but it is not another handoff and saves nothing more.

One rule, asked by every part that counts handoffs or quotes their saving:

- `is_new_cut`: whether a request cut at an anchor (the checkpoint call's id) is the event, given
  the conversation's previous cut. The conversation store applies it atomically, so the
  replicas of a proxy and the workers of one agree on which request was the event
  (`ipse.store.ConversationStore.record`);
- `recorded_handoff`: what the proxy's log line and record (and the LiteLLM hook's) say of a
  rewritten request: the rewrite, whether it is the event, and at the event only, what it saved
  (``tokens``: `ipse.handoff.tokens_saved` of the client's body and the rewritten one, the count
  the MCP server's answer quotes too; ``bytes``: what the body lost);
- `RecordedHandoffs`: which entries of a record are the events, for its readers (``ipse
  prefix``, ``ipse report``, ``ipse inspect``): the ones the record marks, each cut once; in a
  record written before the mark, the first rewritten entry at each new cut.

- `RecordedAutopilot`: which entries of a record are the proxy's autopilot events (a nudge, a
  cut of its own), each once, with the tokens before and after and the cache cost it paid.

Light on purpose (the standard library): the store and the readers of records import it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def is_new_cut(previous_anchor: str | None, anchor: str | None) -> bool:
    """Whether a request cut at ``anchor`` is a handoff, its conversation's previous cut being at
    ``previous_anchor`` (None: never cut before)."""
    return anchor is not None and anchor != previous_anchor


def recorded_handoff(
    rewrite: Mapping[str, Any], *, event: bool, tokens: int | None, removed_bytes: int
) -> dict[str, Any]:
    """The ``handoff`` document of a record's entry for a request the handoff looked at
    (``rewrite``: `ipse.handoff.wire.Rewrite.to_json`): ``event`` says whether it is the
    handoff, and ``saved`` (``tokens``, ``bytes``) is what that handoff saved, given at the
    event only (None elsewhere)."""
    document = {k: v for k, v in rewrite.items() if k != "removed_bytes"}
    applied = rewrite.get("applied") is True
    document["event"] = applied and event
    saved = {"tokens": tokens, "bytes": removed_bytes}
    document["saved"] = saved if applied and event else None
    return document


class RecordedHandoffs:
    """The handoffs of a record, read entry by entry in the record's order (`event`)."""

    def __init__(self) -> None:
        self._cuts: dict[Any, Any] = {}  # conversation -> the anchor it was last cut at
        self._counted: set[tuple[Any, Any]] = set()  # (conversation, anchor) events counted

    def event(self, entry: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The ``ipse.handoff`` document of ``entry`` when the entry is a handoff (a cut not
        counted before in this record), else None."""
        extra = entry.get("ipse")
        if not isinstance(extra, Mapping):
            return None
        handoff = extra.get("handoff")
        if not isinstance(handoff, Mapping) or handoff.get("applied") is not True:
            return None
        conversation, anchor = extra.get("conversation"), handoff.get("anchor")
        previous = self._cuts.get(conversation)
        self._cuts[conversation] = anchor
        marked = handoff.get("event")
        made = marked is True if isinstance(marked, bool) else is_new_cut(previous, anchor)
        if not made or (conversation, anchor) in self._counted:
            return None
        self._counted.add((conversation, anchor))
        return handoff


def saved_tokens(handoff: Mapping[str, Any] | None) -> int | None:
    """The tokens a recorded handoff saved (None: not measured, or not a handoff)."""
    saved = handoff.get("saved") if isinstance(handoff, Mapping) else None
    tokens = saved.get("tokens") if isinstance(saved, Mapping) else None
    return tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None


class RecordedAutopilot:
    """The proxy's autopilot events in a record (its nudges and its own cuts, apart from the
    agent's checkpoints), read entry by entry: the entry's ``ipse.autopilot`` document where it
    says the request brought a nudge or a cut, each once per conversation and stretch (a
    retried request says it again)."""

    def __init__(self) -> None:
        self._seen: set[tuple[Any, ...]] = set()

    def event(self, entry: Mapping[str, Any]) -> Mapping[str, Any] | None:
        extra = entry.get("ipse")
        if not isinstance(extra, Mapping):
            return None
        autopilot = extra.get("autopilot")
        if not isinstance(autopilot, Mapping) or autopilot.get("action") not in ("nudge", "cut"):
            return None
        handoff = extra.get("handoff")
        checkpoint = handoff.get("anchor") if isinstance(handoff, Mapping) else None
        key = (extra.get("conversation"), autopilot.get("action"), autopilot.get("anchor"),
               checkpoint)  # fmt: skip
        if key in self._seen:
            return None
        self._seen.add(key)
        return autopilot


__all__ = [
    "RecordedAutopilot",
    "RecordedHandoffs",
    "is_new_cut",
    "recorded_handoff",
    "saved_tokens",
]
