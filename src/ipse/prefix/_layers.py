"""A request as ordered layers, each with its blocks and their hashes.

``layers(request)`` shows a request the way a provider's prompt cache sees it: layers in the
provider's serialization order (Anthropic: tools, system, settings, history, newest input;
OpenAI and vLLM: system, tools, settings, history, newest input), a hash per layer (chained
over everything before it, so equal layer hashes mean an equal prefix up to there) and per
block (its own bytes, ``cache_control`` excluded). Hashes are BLAKE2b, stable across runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ipse._tokens import TokenCounter
from ipse.prefix._causes import locate
from ipse.prefix._hashing import Flattener
from ipse.prefix._requests import body_provider
from ipse.prefix._rules import rules
from ipse.transcript import Conversation, write


@dataclass(frozen=True, slots=True)
class BlockHash:
    """One block of a layer."""

    path: str  # e.g. ``tools[3] (Bash)``, ``system[1]``, ``settings.thinking``, ``messages[4]...``
    hash: str  # hex, of the block's own bytes
    tokens: int  # estimated
    breakpoint: str | None  # ``5m`` / ``1h`` when the block carries ``cache_control``


@dataclass(frozen=True, slots=True)
class Layer:
    """One layer: its name, its chained hash (prefix through this layer), its blocks."""

    name: str
    hash: str
    blocks: tuple[BlockHash, ...]

    @property
    def tokens(self) -> int:
        return sum(b.tokens for b in self.blocks)


def request_body(request: Conversation | Mapping[str, Any]) -> Mapping[str, Any]:
    """The provider request body of a conversation (or the body itself)."""
    if isinstance(request, Conversation):
        return write(request)
    return request


def layers(
    request: Conversation | Mapping[str, Any],
    provider: str | None = None,
    *,
    counter: TokenCounter | None = None,
) -> tuple[Layer, ...]:
    """The request's layers in its provider's order (empty layers included)."""
    body = request_body(request)
    name = provider or body_provider(body)
    table = rules(name)
    flat = Flattener(table, counter, stable=True).flatten(body)
    grouped: dict[str, list[BlockHash]] = {layer: [] for layer in table.value("order")}
    chains: dict[str, int] = {}
    previous = 0
    for p, where in enumerate(flat.where):
        layer = where[0]
        if layer == "settings":
            path = f"settings.{flat.setting_names[where[1]]}"
        else:
            path = locate(where, body, name)
        tokens = flat.cum[p] - previous
        previous = flat.cum[p]
        grouped.setdefault(layer, []).append(
            BlockHash(path, f"{flat.hashes[p]:016x}", tokens, flat.ttls[p])
        )
        chains[layer] = flat.chain[p]
    out: list[Layer] = []
    last = 0
    for layer, blocks in grouped.items():
        last = chains.get(layer, last)
        out.append(Layer(layer, f"{last:016x}", tuple(blocks)))
    return tuple(out)
