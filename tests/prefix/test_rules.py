"""A provider's rules table is a value: what it has answered (its memo) is no part of it."""

from __future__ import annotations

from ipse.prefix._rules import Rules, prices, rules


def test_a_rules_table_is_its_rules_whatever_it_has_answered() -> None:
    table = rules("anthropic")
    fresh = Rules(table.provider, table.table)
    table.min_tokens("claude-sonnet-4-5")
    table.ttl_seconds("1h")
    assert table == fresh
    assert repr(table) == repr(fresh)


def test_the_price_table_answers_without_showing_its_memo() -> None:
    table = prices()
    before = repr(table)
    table.price("claude-sonnet-4-5", "anthropic")
    assert repr(table) == before
