"""A request's positions as they are appended, part after part, in the provider's order.

`PositionColumns` holds the columns of a request being flattened (or of a store that requests
share): per position its content hash, its chained prefix hash, its cumulative tokens, its
breakpoint, where it sits and its lookback group. A `PositionWriter` appends to them: a
part's `Segment` (memoised by the prefix hash before it and the segment, so a history repeated
by the next request costs a few list extends, not a loop), the cache-relevant settings, and
the layers in front of the messages. Which settings a request has, and which level a change of
each invalidates, is read here too (`setting_values`, `levels`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

from ipse import jsonio
from ipse.prefix._blocks import RUN_KINDS, fast_chain, stable_chain
from ipse.prefix._flat import Locator
from ipse.prefix._rules import Rules
from ipse.prefix._segments import BlockHasher, Segment
from ipse.transcript._shared import Positions


class PositionColumns(msgspec.Struct):
    """A request's positions while they are appended (and a session's shared store)."""

    hashes: list[int] = msgspec.field(default_factory=list)
    chain: list[int] = msgspec.field(default_factory=list)
    cum: list[int] = msgspec.field(default_factory=list)
    ttls: list[str | None] = msgspec.field(default_factory=list)
    where: list[Locator] = msgspec.field(default_factory=list)
    groups: list[int] = msgspec.field(default_factory=list)
    settings: dict[str, bytes] = msgspec.field(default_factory=dict)
    setting_names: list[str] = msgspec.field(default_factory=list)
    tail: int = 0
    breakpoints: int = 0
    texts: list[bytes] = msgspec.field(default_factory=list)


class PlacedSegment(msgspec.Struct):
    """A segment's positions after a given prefix: chained hashes, and relative counts."""

    seg: Segment
    chain: list[int]
    cum: list[int]  # tokens within the segment, cumulative
    where: list[Locator]
    groups: list[int]  # lookback positions within the segment, from 1
    breakpoints: int


def setting_values(rules: Rules, body: Mapping[str, Any], has_image: bool) -> dict[str, bytes]:
    """The cache-relevant settings ``body`` has, each as canonical JSON (effort at the model's
    default counts as no effort; ``images`` is whether the messages hold one)."""
    values: dict[str, bytes] = {}
    for name in rules.settings():
        if name == "images":
            if has_image:
                values[name] = b"true"
            continue
        if name not in body:
            continue
        value = body[name]
        if name == "output_config" and isinstance(value, Mapping):
            default = rules.table.get("default_effort", {}).get("value")
            if value.get("effort") == default:
                value = {k: v for k, v in value.items() if k != "effort"}
            if not value:
                continue
        values[name] = jsonio.dumps(value, option=jsonio.OPT_SORT_KEYS)
    return values


class PositionWriter:
    """Appends parts, settings and front layers to `PositionColumns`, in ``rules``' order."""

    def __init__(self, rules: Rules, hasher: BlockHasher) -> None:
        self.hasher = hasher
        self.stable = hasher.stable
        self.chain: Callable[[int, int], int] = stable_chain if hasher.stable else fast_chain
        self.order: Sequence[str] = rules.value("order")
        self._levels_of: Mapping[str, str] = rules.settings()
        self._placed: dict[tuple[int, int, str, int | None], PlacedSegment] = {}

    def levels(self, settings: Mapping[str, bytes]) -> dict[str, list[str]]:
        """Setting names by the level a change of them invalidates."""
        by_level: dict[str, list[str]] = {}
        for name in settings:
            by_level.setdefault(self._levels_of[name], []).append(name)
        return by_level

    def front_layer(
        self, flat: PositionColumns, layer: str, parts: Positions, levels: dict[str, list[str]]
    ) -> None:
        """One of the layers before the messages: the tools, the system prompt (after the
        settings that invalidate it), or the settings that invalidate the messages."""
        if layer == "tools":
            self.segment(flat, self.hasher.tools(parts.tools), "tools", None)
        elif layer == "system":
            self.settings(flat, levels.get("system", ()))
            self.segment(flat, self.hasher.system(parts), "system", None)
            for i, m in enumerate(parts.system_messages):
                self.segment(flat, self.hasher.message(m, parts.per_message), "system", i)
        elif layer == "settings":
            self.settings(flat, levels.get("messages", ()))

    def segment(
        self,
        flat: PositionColumns,
        seg: Segment,
        layer: str,
        index: int | None,
        *,
        memo: bool = True,
    ) -> None:
        """Append a segment's positions; memoised by (prefix hash before it, segment), so a
        history repeated by the next request costs a few list extends, not a loop."""
        if not seg.hashes:
            return
        before = flat.chain[-1] if flat.chain else 0
        key = (before, id(seg), layer, index)
        placed = self._placed.get(key) if memo else None
        if placed is None or placed.seg is not seg:
            placed = self._place(seg, before, layer, index)
            if memo:
                self._placed[key] = placed
        total = flat.cum[-1] if flat.cum else 0
        group = flat.groups[-1] if flat.groups else -1
        flat.hashes.extend(seg.hashes)
        flat.chain.extend(placed.chain)
        flat.cum.extend([total + c for c in placed.cum])
        flat.ttls.extend(seg.ttls)
        flat.breakpoints += placed.breakpoints
        flat.where.extend(placed.where)
        flat.groups.extend([group + g for g in placed.groups])
        if self.stable:
            flat.texts.extend(seg.texts)

    def _place(self, seg: Segment, chain: int, layer: str, index: int | None) -> PlacedSegment:
        placed = PlacedSegment(seg, [], [], [], [], sum(1 for t in seg.ttls if t is not None))
        total = 0
        group = 0
        prev_kind = ""
        for j, h in enumerate(seg.hashes):
            chain = self.chain(chain, h)
            total += seg.tokens[j]
            kind = seg.kinds[j]
            if not (kind == prev_kind and kind in RUN_KINDS):
                group += 1
            prev_kind = kind
            placed.chain.append(chain)
            placed.cum.append(total)
            placed.where.append((layer, j, -1) if index is None else (layer, index, j))
            placed.groups.append(group)
        return placed

    def settings(self, flat: PositionColumns, names: Sequence[str]) -> None:
        """Append one position per setting named (no tokens: a setting changes the prefix
        after it without being text of it)."""
        for name in names:
            data = f"setting:{name}=".encode() + flat.settings[name]
            h = self.hasher.hash(data)
            chain = self.chain(flat.chain[-1] if flat.chain else 0, h)
            flat.hashes.append(h)
            flat.chain.append(chain)
            flat.cum.append(flat.cum[-1] if flat.cum else 0)
            flat.ttls.append(None)
            flat.where.append(("settings", len(flat.setting_names), -1))
            flat.setting_names.append(name)
            flat.groups.append(flat.groups[-1] if flat.groups else 0)
            if self.stable:
                flat.texts.append(data)
