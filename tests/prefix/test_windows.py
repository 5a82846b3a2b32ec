"""The window table (``rules/windows.json``): every entry is whole and sourced, and the bytes a
token stands for where a body is counted without a tokenizer count no fewer tokens than the
provider reported for real requests."""

from __future__ import annotations

import json
import re

import pytest

from ipse import jsonio
from ipse.prefix._rules import windows
from tests.conftest import HTTP_LOG, SHARED


def test_every_entry_has_a_window_an_output_and_a_source() -> None:
    table = windows()
    for name, entry in [*table.table.items(), *table.defaults.items()]:
        assert entry["window"] > entry["max_output"] > 0, name
        assert entry["source"].strip(), name
    assert table.of("claude-opus-5-5", "anthropic").known
    assert not table.of("someone-elses-model", "openai").known
    assert table.of("someone-elses-model", "nobody").window == table.defaults["anthropic"]["window"]


@SHARED
def test_the_estimate_counts_at_least_the_tokens_the_api_reported() -> None:
    """Claude Code's real requests (compact JSON, as the client sends them) and the input tokens
    the API reported for each: the table's bytes per token is below every one's ratio."""
    ratios = []
    for path in sorted(HTTP_LOG.glob("*.json")):
        exchange = json.loads(path.read_text())
        body = jsonio.dumps(exchange["request"]["content"])
        found = re.search(r'"usage":\s*(\{[^}]*\})', exchange["response"]["content"])
        if not found or len(body) < 100_000:  # (the two side requests are a few hundred bytes)
            continue
        usage = json.loads(found.group(1))
        tokens = sum(usage.get(k, 0) for k in ("input_tokens", "cache_creation_input_tokens",
                                                "cache_read_input_tokens"))  # fmt: skip
        ratios.append(len(body) / tokens)
    assert len(ratios) >= 10
    assert windows().bytes_per_token < min(ratios)
    assert min(ratios) < windows().bytes_per_token * 1.15  # and not far below: an estimate
    print(f"bytes per reported token: {min(ratios):.2f} to {max(ratios):.2f}")


@pytest.mark.parametrize("model", ["claude-opus-5-5", "gpt-5.5", "gpt-6.1-terra", "gemini-2.5-pro"])
def test_the_longest_key_decides(model: str) -> None:
    table = windows()
    found = table.of(model, "openai")
    keys = [k for k in table.table if model.startswith(k)]
    assert found.window == table.table[max(keys, key=len)]["window"]
