"""The provider caching rules and the model prices, read from the data files in ``rules/``.

The rules are data, not code: one JSON table per provider (``anthropic``, ``openai``, ``vllm``),
each rule a ``{"value", "source"}`` pair, one price table per model (``prices.json``) and one of
each model's context window and output limit (``windows.json``, `windows`), so a
change in a provider's documentation is an edit to a data file, never to the simulator. Models
are matched by the longest table key that is a prefix of the model name; a model that matches
no key gets the stated default, and callers warn about it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, Literal, TypeAlias

from ipse.errors import UsageError

Provider: TypeAlias = Literal["anthropic", "openai", "vllm"]
PROVIDERS: tuple[Provider, ...] = ("anthropic", "openai", "vllm")


def _load(name: str) -> Mapping[str, Any]:
    try:  # the file beside this module (importlib.resources costs a tenth of a command's start)
        text = (Path(__file__).parent / "rules" / name).read_text(encoding="utf-8")
    except FileNotFoundError:  # installed where modules are not files (a zip): ask importlib
        from importlib import resources

        folder = resources.files("ipse.prefix").joinpath("rules")
        text = folder.joinpath(name).read_text(encoding="utf-8")
    data = json.loads(text)
    assert isinstance(data, Mapping)
    return data


def match_model(model: str | None, table: Mapping[str, Any]) -> str | None:
    """The longest key of ``table`` that is a prefix of ``model`` (None when none is)."""
    if not model:
        return None
    best: str | None = None
    for key in table:
        if model.startswith(key) and (best is None or len(key) > len(best)):
            best = key
    return best


@dataclass(frozen=True)
class Rules:
    """One provider's table of caching rules."""

    provider: Provider
    table: Mapping[str, Mapping[str, Any]]
    # (rule, model) -> the answer: a replay asks the same few questions for every request
    _answers: dict[tuple[str, str | None], tuple[Any, bool]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def value(self, name: str) -> Any:
        return self.table[name]["value"]

    def source(self, name: str) -> str:
        return str(self.table[name]["source"])

    def _by_model(self, name: str, model: str | None) -> tuple[Any, bool]:
        answer = self._answers.get((name, model))
        if answer is None:
            entry = self.value(name)
            key = match_model(model, entry["models"])
            answer = (entry["default"], False) if key is None else (entry["models"][key], True)
            self._answers[(name, model)] = answer
        return answer

    def min_tokens(self, model: str | None) -> tuple[int, bool]:
        """The minimum cacheable length for a model, and whether the model is in the table."""
        value, known = self._by_model("min_cacheable_tokens", model)
        return int(value), known

    def read_multiplier(self, model: str | None) -> float:
        return float(self._by_model("read_multiplier", model)[0])

    def write_multiplier(self, ttl: str | None) -> float:
        answer = self._answers.get(("write_multiplier", ttl))
        if answer is None:
            table: Mapping[str, float] = self.value("write_multiplier")
            if ttl is None or ttl not in table:
                answer = (float(next(iter(table.values()), 1.0)), True)
            else:
                answer = (float(table[ttl]), True)
            self._answers[("write_multiplier", ttl)] = answer
        value: float = answer[0]
        return value

    def ttl_seconds(self, ttl: str | None) -> float | None:
        answer = self._answers.get(("ttl_seconds", ttl))
        if answer is None:
            table: Mapping[str, float] = self.value("ttl_seconds")
            if not table:
                answer = (None, True)
            elif ttl is None or ttl not in table:
                answer = (float(next(iter(table.values()))), True)
            else:
                answer = (float(table[ttl]), True)
            self._answers[("ttl_seconds", ttl)] = answer
        value: float | None = answer[0]
        return value

    def settings(self) -> Mapping[str, str]:
        """Cache-relevant settings and the level each invalidates (all, system, messages)."""
        value: Mapping[str, str] = self.value("settings")
        return value

    def known_model(self, model: str | None) -> bool:
        if "min_cacheable_tokens" not in self.table:
            return True
        models = self.value("min_cacheable_tokens")["models"]
        return not models or match_model(model, models) is not None


@cache
def rules(provider: str) -> Rules:
    """The rules table of a provider."""
    if provider not in PROVIDERS:
        raise UsageError(f"unknown provider {provider!r}; known: {', '.join(PROVIDERS)}")
    data = _load(f"{provider}.json")
    return Rules(provider, data["rules"])


@dataclass(frozen=True)
class Prices:
    """Base input prices per model, USD per million tokens; output prices beside them
    (``output``, ``output_defaults``: a bill counts output, a replay of the cache does not),
    and the cache read multiplier of providers that have no rules table (``reads``,
    ``read_defaults``: Gemini's)."""

    table: Mapping[str, float]
    defaults: Mapping[str, float]
    source: str
    output: Mapping[str, float] = field(default_factory=dict)
    output_defaults: Mapping[str, float] = field(default_factory=dict)
    reads: Mapping[str, float] = field(default_factory=dict)
    read_defaults: Mapping[str, float] = field(default_factory=dict)
    _answers: dict[tuple[str | None, str], tuple[float, bool]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def price(self, model: str | None, provider: str) -> tuple[float, bool]:
        """The model's base input price, and whether the model is in the table."""
        answer = self._answers.get((model, provider))
        if answer is None:
            key = match_model(model, self.table)
            answer = (
                (float(self.defaults.get(provider, 0.0)), False)
                if key is None
                else (float(self.table[key]), True)
            )
            self._answers[(model, provider)] = answer
        return answer

    def output_price(self, model: str | None, provider: str) -> tuple[float, bool]:
        """The model's output price, and whether the model is in the table."""
        key = match_model(model, self.output)
        if key is None:
            return float(self.output_defaults.get(provider, 0.0)), False
        return float(self.output[key]), True

    def read_multiplier(self, model: str | None, provider: str) -> float:
        """The cache read price over base input: the provider's rules table where it has one,
        else this table's (Gemini's)."""
        if provider in PROVIDERS:
            return rules(provider).read_multiplier(model)
        key = match_model(model, self.reads)
        return float(self.reads[key] if key is not None else self.read_defaults.get(provider, 1.0))


@lru_cache(maxsize=1)
def prices() -> Prices:
    """The price table shipped with ipse."""
    data = _load("prices.json")
    output = data.get("output", {})
    reads = data.get("read_multiplier", {})
    return Prices(
        data["models"],
        data["default"],
        str(data["source"]),
        output.get("models", {}),
        output.get("default", {}),
        reads.get("models", {}),
        reads.get("default", {}),
    )


@dataclass(frozen=True, slots=True)
class ModelWindow:
    """A model's context window and the most output one answer may have, in tokens; ``known``:
    the model is in the table (else its provider's default), ``source``: where the numbers come
    from."""

    window: int
    max_output: int
    known: bool
    source: str


@dataclass(frozen=True)
class Windows:
    """The context windows of models (``windows.json``), and how many bytes of a request body
    make a token where a body is counted without a tokenizer (`bytes_per_token`)."""

    table: Mapping[str, Mapping[str, Any]]
    defaults: Mapping[str, Mapping[str, Any]]
    bytes_per_token: float
    estimate_source: str

    def of(self, model: str | None, provider: str) -> ModelWindow:
        """The window of ``model`` (its longest matching key), else of ``provider``'s default
        (Anthropic's where the provider has none)."""
        key = match_model(model, self.table)
        if key is not None:
            entry, known = self.table[key], True
        else:
            entry = self.defaults.get(provider) or self.defaults["anthropic"]
            known = False
        return ModelWindow(
            int(entry["window"]), int(entry["max_output"]), known, str(entry["source"])
        )


@lru_cache(maxsize=1)
def windows() -> Windows:
    """The window table shipped with ipse."""
    data = _load("windows.json")
    estimate = data["bytes_per_token"]
    return Windows(
        data["models"], data["default"], float(estimate["value"]), str(estimate["source"])
    )
