"""A request flattened into its cache positions, each block hashed once.

`Flattener.flatten` turns a request body into a `Flat`: the blocks in the provider's prefix
order (tools, system, settings, history, newest input for Anthropic; system, tools, ... for
OpenAI and vLLM), each with a content hash, a chained prefix hash, its cumulative token
estimate, its breakpoint (``cache_control``) and where it sits in the request.

Speed comes from memoising, never from comparing histories: the tool list, the system prompt
and every message are serialized once per request and looked up by the hash of those bytes (or
by object identity when requests share dicts), so a block seen in an earlier request is never
split, hashed or counted again (`ipse.prefix._segments`); a body whose messages are the first
of a list other bodies share is a view of one store (`ipse.prefix._shared_flatten`).
``cache_control`` is not part of a block's hash: moving a breakpoint does not change the
prefix. ``stable=True`` uses BLAKE2b for hashes shown to people (`ipse.prefix._blocks`).

Its structs are msgspec structs, not dataclasses: six dataclasses more cost ``ipse prefix`` 22M
more instructions at import, 2.6% of the command on an 8 MB session (``python
bench/instructions.py --size 8 --source`` a checkout with them as dataclasses).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ipse._tokens import TokenCounter
from ipse.prefix._blocks import last_assistant
from ipse.prefix._flat import MESSAGE_LAYERS, Flat
from ipse.prefix._growing import SharedHistory
from ipse.prefix._positions import PositionColumns, PositionWriter, setting_values
from ipse.prefix._rules import Rules
from ipse.prefix._segments import BlockHasher, Segment
from ipse.prefix._shared_flatten import SharedHistoryFlattener
from ipse.transcript._shared import body_codec


class Flattener:
    """Flattens the requests of one log, memoising every part it has seen.

    ``counter`` counts tokens of each distinct block once; without one, a block is estimated at
    a quarter of its serialized bytes (callers scale estimates to recorded usage when they have
    it). ``stable`` selects BLAKE2b hashes (reproducible across runs) over Python's own.
    """

    def __init__(
        self, rules: Rules, counter: TokenCounter | None = None, *, stable: bool = False
    ) -> None:
        self.rules = rules
        self.counter = counter
        self.stable = stable
        self.hasher = BlockHasher(counter, stable=stable)
        self.writer = PositionWriter(rules, self.hasher)
        self._shared = SharedHistoryFlattener(rules, self.writer)
        self._order = self.writer.order
        self._anthropic = rules.provider == "anthropic"
        self._shared_order = list(self._order[-2:]) == ["history", "input"]

    def flatten(self, body: Mapping[str, Any]) -> Flat:
        """The request's cache positions in prefix order."""
        if isinstance(body, SharedHistory) and self._shared_order and not self.stable:
            return self._shared.flatten(body)
        model = body.get("model")
        flat = PositionColumns()
        dialect = body_codec(body, self.rules.provider)
        parts = dialect.positions(body)
        segs = [self.hasher.message(m, parts.per_message) for m in parts.messages]
        flat.settings = setting_values(self.rules, body, any(s.has_image for s in segs))
        levels = self.writer.levels(flat.settings)
        last = last_assistant(parts.messages, dialect)
        offset = len(parts.system_messages)
        self.writer.settings(flat, levels.get("all", ()))
        for layer in self._order:
            if layer == "history":
                self._history(flat, segs, last, offset)
            elif layer == "input":
                self._input(flat, segs, last, offset)
            else:
                self.writer.front_layer(flat, layer, parts, levels)
        self._automatic(flat, body)
        return Flat(
            model=model if isinstance(model, str) else None,
            hashes=flat.hashes,
            chain=flat.chain,
            cum=flat.cum,
            ttls=flat.ttls,
            where=flat.where,
            groups=flat.groups,
            settings=flat.settings,
            setting_names=flat.setting_names,
            tail=flat.tail,
            messages=offset + len(parts.messages),
            breakpoints=flat.breakpoints,
            texts=flat.texts,
            marks=[p for p, ttl in enumerate(flat.ttls) if ttl is not None],
            first_message=next(
                (h for w, h in zip(flat.where, flat.hashes, strict=True) if w[0] in MESSAGE_LAYERS),
                None,
            ),
        )

    def _history(self, flat: PositionColumns, segs: list[Segment], last: int, offset: int) -> None:
        """Messages before the newest input; ``flat.tail`` marks the last assistant turn."""
        flat.tail = len(flat.hashes)
        for i, seg in enumerate(segs[: last + 1]):
            if i == last:
                flat.tail = len(flat.hashes)
            self.writer.segment(flat, seg, "history", offset + i)

    def _input(self, flat: PositionColumns, segs: list[Segment], last: int, offset: int) -> None:
        for i, seg in enumerate(segs[last + 1 :], start=last + 1):
            self.writer.segment(flat, seg, "input", offset + i)

    def _automatic(self, flat: PositionColumns, body: Mapping[str, Any]) -> None:
        """Anthropic's automatic caching: a top-level ``cache_control`` marks the last block."""
        auto = body.get("cache_control")
        if not (self._anthropic and auto is not None and flat.ttls):
            return
        last = len(flat.ttls) - 1
        while last > 0 and flat.where[last][0] == "settings":
            last -= 1
        if flat.ttls[last] is None:
            flat.ttls[last] = (
                "1h" if isinstance(auto, Mapping) and auto.get("ttl") == "1h" else "5m"
            )
        flat.breakpoints += 1
