"""Hypothesis strategies for twin states and transition sequences."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from hypothesis import strategies as st

from ipse.errors import InputError
from ipse.twin import TwinState
from ipse.twin._transitions import apply_op

T0 = datetime(2025, 1, 1, tzinfo=UTC)

SURROGATES: tuple[Literal["Cs"]] = ("Cs",)
texts = st.text(
    alphabet=st.characters(blacklist_categories=SURROGATES), min_size=1, max_size=20
).filter(lambda s: s.strip() == s and s != "")
small_texts = st.sampled_from(
    [
        "prefers email",
        "lives in Lyon",
        "has two kids",
        "VIP since 2019",
        "allergic to nuts",
        "refund 2231",
        "plan comparison",
        "call back Friday",
        "be brief",
        "é ✓ 日本",
    ]
)
times = st.integers(min_value=0, max_value=400 * 24 * 3600).map(lambda s: T0 + timedelta(seconds=s))


@st.composite
def ops(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(
        st.sampled_from(
            [
                "establish_fact",
                "supersede_fact",
                "make_commitment",
                "open_loop",
                "close_loop",
                "set_active_loop",
                "set_counterparty",
                "use_fact",
            ]
        )
    )
    text = draw(st.one_of(small_texts, texts))
    if kind == "establish_fact":
        return {"op": kind, "text": text, "pinned": draw(st.booleans())}
    if kind == "supersede_fact":
        return {"op": kind, "fact": draw(small_texts), "text": text}
    if kind in ("close_loop", "set_active_loop"):
        return {"op": kind, "loop": draw(small_texts)}
    if kind == "use_fact":
        return {"op": kind, "fact": draw(small_texts)}
    if kind == "set_counterparty":
        return {"op": kind, "account": text}
    if kind == "open_loop":
        return {"op": kind, "text": text, "active": draw(st.booleans())}
    return {"op": kind, "text": text}


@st.composite
def states(draw: st.DrawFn, max_ops: int = 25) -> TwinState:
    """A state reached from a cold start by a random sequence of valid transitions."""
    state = TwinState.new("twin-h", draw(small_texts), at=T0)
    at = T0
    for op in draw(st.lists(ops(), max_size=max_ops)):
        at = at + timedelta(seconds=draw(st.integers(0, 5 * 24 * 3600)))
        args = {k: v for k, v in op.items() if k != "op"}
        try:
            state = apply_op(state, op["op"], args, at=at)
        except InputError:
            continue
    return state
