"""`LiveAnalysis`: one request at a time against its conversation's previous one, bounded."""

from __future__ import annotations

from typing import Any

from ipse.prefix._live import LiveAnalysis


def _body(turns: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for n in range(turns):
        messages.append({"role": "user", "content": f"question {n} " + "x" * 4000})
        messages.append({"role": "assistant", "content": f"answer {n}"})
    cached = {"type": "text", "text": "next", "cache_control": {"type": "ephemeral"}}
    messages.append({"role": "user", "content": [cached]})
    return {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": messages}


def test_the_next_request_is_analysed_against_the_previous_one() -> None:
    live = LiveAnalysis()
    first = live.analyze(
        "c", _body(3), "anthropic", size=1, started=0.0, first_byte=1.0, usage=None
    )
    assert first["cause"] is None and first["lost_tokens"] == 0
    edited = _body(4)
    edited["messages"][4]["content"] = "changed " + "y" * 4000  # inside the history
    second = live.analyze("c", edited, "anthropic", size=1, started=2.0, first_byte=3.0, usage=None)
    assert second["cause"] == "message_edited" and second["lost_tokens"] > 0


def test_conversations_are_kept_within_their_count_and_bytes() -> None:
    live = LiveAnalysis(max_conversations=3, max_bytes=100)
    for n in range(10):
        live.analyze(f"c{n}", _body(1), "anthropic", size=40, started=0, first_byte=0, usage=None)
        assert len(live) <= 2  # 100 bytes hold two 40-byte requests
    live.analyze("big", _body(1), "anthropic", size=1000, started=0, first_byte=0, usage=None)
    assert len(live) == 1  # one is always kept, whatever its size
