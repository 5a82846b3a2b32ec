"""Hypothesis strategies shared by the property tests."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st


def json_values(
    leaf: st.SearchStrategy[Any],
    keys: st.SearchStrategy[str],
    *,
    size: int | None,
    leaves: int,
) -> st.SearchStrategy[Any]:
    """JSON values: ``leaf`` values nested in lists and objects (keys drawn from ``keys``) of
    at most ``size`` members, ``leaves`` leaves in all."""
    return st.recursive(
        leaf,
        lambda inner: st.lists(inner, max_size=size) | st.dictionaries(keys, inner, max_size=size),
        max_leaves=leaves,
    )
