"""OpenAI and vLLM: automatic prefix caching, steps of 128 tokens, blocks of 16."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from ipse.prefix._report import analyze
from ipse.prefix._requests import Request
from ipse.prefix._simulate import OpenAISimulator, VllmSimulator

T0 = datetime(2026, 1, 5, 9, 0, 0, tzinfo=UTC)


def _openai(turns: int, **extra: Any) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Be exact. " * 600}]
    for n in range(turns):
        messages.append({"role": "user", "content": f"step {n} " + "data " * 100})
        messages.append({"role": "assistant", "content": f"done {n}"})
    messages.append({"role": "user", "content": f"step {turns} " + "data " * 100})
    return {"model": "gpt-4.1", "messages": messages, **extra}


def _requests(bodies: list[dict[str, Any]], usage: list[Any] | None = None) -> list[Request]:
    return [
        Request(
            i,
            b,
            "openai",
            T0 + timedelta(seconds=10 * i),
            usage=usage[i] if usage else None,
        )
        for i, b in enumerate(bodies)
    ]


def test_openai_rounding() -> None:
    sim = OpenAISimulator()
    assert sim.round(1000, 5000, "gpt-4.1") == 0
    assert sim.round(1024, 5000, "gpt-4.1") == 1024
    assert sim.round(1300, 5000, "gpt-4.1") == 1280
    assert sim.round(1300, 1000, "gpt-4.1") == 0  # a prompt below 1,024 tokens is not cached


def test_vllm_full_blocks_and_last_token_recomputed() -> None:
    sim = VllmSimulator()
    assert sim.round(100, 500, None) == 96
    assert sim.round(64, 64, None) == 48  # a full hit recomputes the last token
    assert sim.round(15, 500, None) == 0


def test_openai_growing_conversation_hits_in_steps() -> None:
    report = analyze(_requests([_openai(1), _openai(2), _openai(3)]), tokenizer="bytes")
    assert report.provider == "openai"
    first, second, third = report.rows
    assert first.predicted.cache_read == 0
    assert second.predicted.cache_read > 1024 and second.predicted.cache_read % 128 == 0
    assert second.predicted.cache_write == 0
    assert third.cause is None and second.cause is None


def test_openai_reasoning_effort_flip_misses_everything() -> None:
    bodies = [_openai(1, reasoning_effort="low"), _openai(2, reasoning_effort="high")]
    report = analyze(_requests(bodies), tokenizer="bytes")
    cause = report.rows[1].cause
    assert cause is not None and cause.kind == "settings_changed"
    assert cause.location == "settings.reasoning_effort"
    assert report.rows[1].predicted.cache_read == 0


def test_openai_idle_retention_expires() -> None:
    reqs = _requests([_openai(1), _openai(2)])
    reqs[1] = Request(1, reqs[1].body, "openai", T0 + timedelta(minutes=30))
    cause = analyze(reqs, tokenizer="bytes").rows[1].cause
    assert cause is not None and cause.kind == "ttl_expired"


def test_openai_recorded_usage_is_compared() -> None:
    usage = [
        {"prompt_tokens": 2000, "prompt_tokens_details": {"cached_tokens": 0}},
        {"prompt_tokens": 2200, "prompt_tokens_details": {"cached_tokens": 1920}},
    ]
    report = analyze(_requests([_openai(1), _openai(2)], usage), tokenizer="bytes")
    assert report.rows[1].actual is not None
    assert report.rows[1].actual.cache_read == 1920
    assert report.agreement is not None and report.agreement.compared == 2


def test_vllm_is_chosen_by_name() -> None:
    bodies = [_openai(1, model="Qwen/Qwen3-8B"), _openai(2, model="Qwen/Qwen3-8B")]
    report = analyze(_requests(bodies), "vllm", tokenizer="bytes")
    assert report.provider == "vllm"
    assert report.rows[1].predicted.cache_read % 16 == 0
    assert report.rows[1].predicted.cache_read > 0
    assert report.rows[1].cost_usd == 0  # self-hosted: no price in the table
