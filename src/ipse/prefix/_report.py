"""The analysis of a request log: replay, causes, agreement, money; as rows and a summary.

`analyze` replays the requests through the provider's simulator in time order, and for each one
finds the best earlier candidate by prefix hash: a dict from every prefix hash seen to the last
request holding it, searched by bisection (prefix hashes are prefix-closed), so side requests of
other conversations interleaved in the log are matched to their own predecessors, as a
content-addressed cache would match them. A request that reads less than its ideal gets a
`Cause`, and the money that cost at the model's prices. The ideal: everything the candidate
sent, as if history had only been appended to, up to the request's new tail (the last
assistant turn and what follows it).

Where a request has recorded usage, the record is the truth: its cost, its loss and the totals
come from the recorded split (``basis: recorded``), and the row says whether the prediction
agrees. A cause the model predicts is charged only when the record shows the loss too; when
the record shows a full read, the cause is kept as ``predicted_cause`` and costs nothing. When
the record shows a loss the model did not predict, the cause is ``not_served``: the content was
there to reuse and the provider did not serve it (evicted early, routed to another cache, or a
change the model does not see).

The record also gives, per request: the TTL its writes carried and their price (1-hour writes
at 2x base input, 5-minute ones at 1.25x: ``cache_creation``), the TTL the replay then models
for its thread; what a whole earlier prefix left in the cache (its read plus its write on
Anthropic; its whole prompt where every prefix is cached and no write is reported); and, when
the response carries one, the API's own diagnosis of a miss, which names the cause outright. A
loss is charged from ``min_tokens`` (1,000 by default). A harness update between two calls is
``cli_version_changed`` where the replay sees nothing else; the loss at a request ipse's own
handoff cut is ``handoff``. Compaction calls, cold starts (a chain's first call) and each
agent's calls are totalled apart; compaction is not in the headline loss.

This module chooses the replay's order, its token counts and the size of the front a session
does not record (fitted to the usage), and runs it: the candidates are found by
`ipse.prefix._index`, each request replayed by `ipse.prefix._replay` (its loss in the record's
terms by `ipse.prefix._recorded_loss`, its money by `ipse.prefix._pricing`), and the rows and
the summary are `ipse.prefix._rows`'.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ipse import _progress as ipse_progress
from ipse._tokens import TokenCounter, default_counter
from ipse.prefix._actual import actual_tokens, agreement
from ipse.prefix._flat import Flat
from ipse.prefix._hashing import Flattener
from ipse.prefix._replay import Replay
from ipse.prefix._requests import UNRECORDED_FRONT, Request
from ipse.prefix._rows import PrefixReport, Row
from ipse.prefix._rules import PROVIDERS, prices, rules
from ipse.prefix._simulate import Tokens, simulator

__all__ = ["MIN_TOKENS", "PrefixReport", "Row", "analyze"]

Progress = Callable[[Iterable[Any]], Iterable[Any]]

MIN_TOKENS = 1000  # the least recorded loss reported (``ipse prefix --min-tokens``)


def _provider(requests: Sequence[Request], provider: str | None) -> str:
    if provider is not None:
        rules(provider)  # validates the name
        return provider
    seen = Counter(r.provider for r in requests)
    counts = {p: seen[p] for p in PROVIDERS}
    return max(counts, key=lambda p: counts[p])


def _counter(
    recorded_usage: Mapping[int, Tokens | None], tokenizer: str, counter: TokenCounter | None
) -> tuple[TokenCounter | None, str]:
    if counter is not None:
        return counter, f"{counter.name} per distinct block"
    recorded = all(usage is not None for usage in recorded_usage.values())
    if tokenizer == "bytes" or (tokenizer == "auto" and recorded):
        label = "serialized bytes / 4 per block"
        return None, label + (", scaled to recorded usage" if recorded else "")
    chosen = default_counter()
    return chosen, f"{chosen.name} per distinct block" + (
        ", scaled to recorded usage where present" if recorded else ""
    )


def analyze(
    requests: Sequence[Request],
    provider: str | None = None,
    *,
    tokenizer: str = "auto",
    counter: TokenCounter | None = None,
    progress: Progress | None = None,
    warnings: Sequence[str] = (),
    min_tokens: int = MIN_TOKENS,
    merged: int = 0,
    front_fit: tuple[float, int] | None = None,
) -> PrefixReport:
    """Replay ``requests`` through the provider's cache and explain every lost reuse.

    ``tokenizer``: ``auto`` (byte estimates scaled to recorded usage when every request has
    usage, o200k counts otherwise), ``o200k`` or ``bytes``. ``min_tokens``: the least loss
    the record must show to be charged. ``merged``: records the reader merged into the call
    before them (said in the report). ``front_fit``: the size of a front the input does not
    record, as another replay of the same session fitted it (`PrefixReport.front_fit`: a
    rewrite of the session prices that front as its record does), instead of fitting it here.
    """
    report = _analyze(
        requests, provider, tokenizer, counter, progress, warnings, min_tokens, front_fit
    )
    report.merged = merged
    return report


def _analyze(
    requests: Sequence[Request],
    provider: str | None,
    tokenizer: str,
    counter: TokenCounter | None,
    progress: Progress | None,
    warnings: Sequence[str],
    min_tokens: int = MIN_TOKENS,
    front_fit: tuple[float, int] | None = None,
) -> PrefixReport:
    name = _provider(requests, provider)
    sim = simulator(name)
    table = rules(name)
    notes = list(warnings)
    ttl, order = _replay_order(requests, name, notes)
    # what each request's record says (by request index), read once
    recorded = {r.index: actual_tokens(r.usage) for r in order}
    chosen, label = _counter(recorded, tokenizer, counter)
    flattener = Flattener(table, chosen)
    flats: dict[int, Flat] = {}
    fit = front_fit or _fit_front(order, flattener, flats, recorded)
    replay = Replay(name, sim, recorded, fit, ttl=ttl, min_tokens=min_tokens)
    rows: dict[int, Row] = {}
    iterable: Iterable[Any] = progress(order) if progress is not None else order
    for request in iterable:
        flat = flats.pop(request.index, None) or flattener.flatten(request.body)
        rows[request.index] = replay.row(request, flat)
    ordered = [rows[r.index] for r in requests]
    pairs = [(r.predicted, r.actual) for r in ordered]
    agree = agreement(pairs) if any(a is not None for _, a in pairs) else None
    report = PrefixReport(name, ordered, agree, ttl, label, notes, replay.cost_ideal, min_tokens)
    report.front_fit = fit
    return report


def _replay_order(
    requests: Sequence[Request], provider: str, notes: list[str]
) -> tuple[bool, list[Request]]:
    """Whether every request has a time (the TTL analysis needs it), and the order to replay
    them in: the log's, or time order when the log is out of it. What the reader must know
    about either, and the models' warnings, go to ``notes``."""
    for seen_model in sorted({r.model or "" for r in requests}):
        notes.extend(_model_warnings(seen_model or None, provider))
    ttl = all(r.time is not None for r in requests)
    if not ttl:
        missing = sum(1 for r in requests if r.time is None)
        notes.append(f"{missing} of {len(requests)} requests have no time: TTL analysis skipped")
    order = list(requests)
    if ttl and any(
        a.time is not None and b.time is not None and b.time < a.time
        for a, b in itertools.pairwise(order)
    ):
        notes.append("the log is out of time order: requests replayed in time order")
        order.sort(key=lambda r: r.time or datetime.min)
    return ttl, order


def _fit_front(
    requests: Sequence[Request],
    flattener: Flattener,
    flats: dict[int, Flat],
    recorded: Mapping[int, Tokens | None],
) -> tuple[float, int]:
    """(tokens per estimated token, tokens of the unrecorded front) by least squares over the
    requests rebuilt from a session: recorded total (or the tokens a rewritten request is sized
    at, `Request.tokens`) = front + k * estimated messages. The
    requests flattened on the way are kept in ``flats`` (by index) for the replay."""
    points = []
    for request in ipse_progress.track(requests, "measuring requests"):
        if request.body.get("system") is not UNRECORDED_FRONT:
            continue
        actual = recorded[request.index]
        total = actual.total if actual is not None else request.tokens
        if total is not None:
            flat = flats[request.index] = flattener.flatten(request.body)
            points.append((float(flat.total), float(total)))
    if len(points) < 2:
        return 1.0, 0
    n = len(points)
    # (sums of lists, not of generators: one frame per point less; `sum` adds as before)
    mean_x = sum([x for x, _ in points]) / n
    mean_y = sum([y for _, y in points]) / n
    var = sum([(x - mean_x) ** 2 for x, _ in points])
    if var == 0:
        return 1.0, 0
    k = sum([(x - mean_x) * (y - mean_y) for x, y in points]) / var
    front = mean_y - k * mean_x
    if k <= 0 or front < 0:
        return mean_y / mean_x if mean_x else 1.0, 0
    return k, round(front)


def _model_warnings(model: str | None, provider: str) -> list[str]:
    """What is assumed for a model missing from the rules or price tables."""
    notes = []
    table = rules(provider)
    if not table.known_model(model):
        minimum = table.min_tokens(model)[0]
        notes.append(
            f"unknown model {model or '(none)'!r} for {provider}: "
            f"assuming a minimum cacheable length of {minimum} tokens"
        )
    price, known = prices().price(model, provider)
    if not known:
        notes.append(
            f"no price for {model or '(none)'!r}: assuming {price} USD per million input tokens"
        )
    return notes
