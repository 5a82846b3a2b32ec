"""What to do about the losses a prefix analysis found: per cause, the fix in one line; and
whether a longer TTL or a keep-alive would have paid for itself on this log.

The TTL advice is arithmetic on the record, not a prediction: for each break after an idle gap
longer than the chain's TTL (a ``ttl_expired``, or a loss the record shows after such a gap),
a keep-alive would have sent a cheap request every nine tenths of the TTL across the gap, each
reading the cached prefix at the read price; a 1-hour TTL would have charged every 5-minute
write at the 1-hour price and kept the breaks whose gap was under an hour. Each is compared
with the losses it would have avoided, at the recorded prices.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ipse.prefix._rules import prices, rules

if TYPE_CHECKING:
    from ipse.prefix._rows import PrefixReport, Row

FIXES = {
    "model_changed": "Choose the model once per session; a switch starts a separate cache "
    "(send side tasks to a sub-agent instead).",
    "tools_changed": "Keep the tool list fixed for the session, in a stable order; load "
    "deferred tools and MCP servers before the first request.",
    "system_changed": "Keep volatile values (dates, ids, memory) out of the system prompt; "
    "append them to the conversation instead.",
    "settings_changed": "Treat model settings (thinking, effort, tool choice) as session-level "
    "choices: changing one mid-session rewrites the messages.",
    "message_edited": "Append a correction instead of editing a message already sent.",
    "messages_changed": "Append instead of editing or reordering earlier messages.",
    "history_truncated": "Drop history only at a deliberate checkpoint (one rebuild), not "
    "turn by turn.",
    "key_order_changed": "Serialize JSON with a fixed key order (tool inputs, tool schemas).",
    "ttl_expired": "Keep idle gaps under the cache's lifetime, or pay for a longer one "
    "(Anthropic's 1-hour TTL, OpenAI's 24h retention) or a keep-alive: see the break-even.",
    "previous_message_not_found": "After a long gap this is an expired cache: see the TTL "
    "advice; otherwise the previous request was not cached.",
    "below_minimum": "Nothing to fix: a prefix below the model's minimum is never cached.",
    "no_breakpoint": "Place a cache_control breakpoint at the end of the stable prefix (or "
    "within 20 blocks of the previous one).",
    "concurrent": "Wait for the first response to begin before sending requests that share "
    "its prefix.",
    "not_served": "Nothing in the request changed: an early eviction or another cache; "
    "rerun with the API's cache diagnostics to learn more.",
    "cli_version_changed": "Nothing to do: updating the harness changes its system prompt "
    "and tools once.",
    "unavailable": "Nothing to do: the API could not say.",
    "compaction": "Compact less often; each compaction rebuilds the prefix once.",
    "handoff": "Expected: a handoff pays one rebuild for smaller requests after it; hand off "
    "at checkpoints, not every turn.",
}

KEEPALIVE_SHARE = 0.9  # a keep-alive is sent every 0.9 TTL across an idle gap
_IDLE = ("ttl_expired", "previous_message_not_found", "not_served")


def advice(report: PrefixReport) -> dict[str, Any]:
    """The fixes for the causes found, and the TTL and keep-alive break-even (Anthropic)."""
    seen = {r.cause.kind for r in report.rows if r.cause is not None}
    document: dict[str, Any] = {
        "fixes": {kind: FIXES[kind] for kind in FIXES if kind in seen},
    }
    if report.provider == "anthropic" and report.ttl_modelled:
        document["ttl"] = _ttl_advice(report)
    return document


def _ttl_advice(report: PrefixReport) -> dict[str, Any]:
    table = rules("anthropic")
    five, hour = table.write_multiplier("5m"), table.write_multiplier("1h")
    price_table = prices()
    extra = saved_hour = keep_cost = keep_saved = 0.0
    pings = breaks = 0
    for row in report.rows:
        price = price_table.price(row.model, "anthropic")[0] / 1_000_000
        read = table.read_multiplier(row.model)
        charged = row.charged
        if (row.ttl or "5m") == "5m" and charged.cache_write:
            extra += charged.cache_write * price * (hour - five)
        if not _idle_break(row, table):
            continue
        breaks += 1
        assert row.gap_s is not None
        ttl_s = table.ttl_seconds(row.ttl or "5m") or 300.0
        if (row.ttl or "5m") == "5m" and row.gap_s <= (table.ttl_seconds("1h") or 3600.0):
            saved_hour += row.cost_lost_usd
        count = max(0, math.ceil(row.gap_s / (ttl_s * KEEPALIVE_SHARE)) - 1)
        pings += count
        keep_cost += count * row.ideal_read * price * read
        keep_saved += row.cost_lost_usd
    ttl_5m = table.ttl_seconds("5m") or 300.0
    # a keep-alive costs one read per 0.9 TTL; a rebuild the write premium over a read: the
    # gap at which the pings cost what the rebuild does, per TTL
    read_default = table.read_multiplier(None)
    break_even = {
        ttl: round((table.write_multiplier(ttl) - read_default) / read_default * seconds * 0.9)
        for ttl, seconds in (("5m", ttl_5m), ("1h", table.ttl_seconds("1h") or 3600.0))
    }
    return {
        "idle_breaks": breaks,
        "one_hour_ttl": {
            "extra_write_usd": round(extra, 6),
            "saved_usd": round(saved_hour, 6),
            "pays": saved_hour > extra,
        },
        "keep_alive": {
            "pings": pings,
            "cost_usd": round(keep_cost, 6),
            "saved_usd": round(keep_saved, 6),
            "pays": keep_saved > keep_cost,
            "break_even_gap_s": break_even,
        },
    }


def _idle_break(row: Row, table: Any) -> bool:
    """A charged loss after an idle gap longer than the chain's TTL."""
    if row.cause is None or row.compaction or row.gap_s is None or row.cause.kind not in _IDLE:
        return False
    return row.gap_s > (table.ttl_seconds(row.ttl or "5m") or 300.0)
