"""Asking a model: one question with one strategy's context, over the provider's HTTP API.

`Asker` posts to an Anthropic Messages (``/v1/messages``) or OpenAI Chat Completions
(``/v1/chat/completions``) endpoint with the standard library's HTTP client (no extra needed),
the key from ``ANTHROPIC_API_KEY`` / ``OPENAI_API_KEY`` when set, temperature 0. The context goes
in one user message, inside ``<session>`` tags, ahead of the question. `judge` asks a (possibly
other) model whether an answer states the truth, for questions that are not scored by exact
string. A failed request is one `IpseError` line with the URL redacted.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from ipse._redact import redact
from ipse.errors import IpseError, UsageError

APIS = ("anthropic", "openai")
SYSTEM = (
    "You are the agent of the session below, resuming it. Answer the question from the session "
    "alone, tersely; if the session does not say, answer: unknown."
)
JUDGE = (
    "You grade answers. Reply with one word: yes if the answer states the truth (a paraphrase "
    "counts), no otherwise."
)


@dataclass(frozen=True, slots=True)
class Asker:
    """A model endpoint: base URL, API shape, model name, answer length, timeout."""

    url: str
    api: str = "openai"
    model: str = "default"
    max_tokens: int = 64
    timeout: float = 300.0

    def __post_init__(self) -> None:
        if self.api not in APIS:
            raise UsageError(f"--api: expected one of {', '.join(APIS)}, got {self.api!r}")

    def ask(self, context: str, question: str, system: str = SYSTEM) -> str:
        prompt = f"<session>\n{context}\n</session>\n\nQuestion: {question}"
        return self.complete(system, prompt)

    def complete(self, system: str, prompt: str) -> str:
        base = self.url.rstrip("/")
        base = base if base.endswith("/v1") else base + "/v1"
        headers = {"content-type": "application/json"}
        body: dict[str, Any]
        if self.api == "anthropic":
            endpoint = base + "/messages"
            headers["anthropic-version"] = "2023-06-01"
            if os.environ.get("ANTHROPIC_API_KEY"):
                headers["x-api-key"] = os.environ["ANTHROPIC_API_KEY"]
            body = {
                "model": self.model,
                "max_tokens": self.max_tokens,
                "temperature": 0,
                "system": system,
                "messages": [{"role": "user", "content": prompt}],
            }
        else:
            endpoint = base + "/chat/completions"
            if os.environ.get("OPENAI_API_KEY"):
                headers["authorization"] = "Bearer " + os.environ["OPENAI_API_KEY"]
            body = {
                "model": self.model,
                "max_tokens": self.max_tokens,
                "temperature": 0,
                "messages": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": prompt},
                ],
            }
        request = urllib.request.Request(
            endpoint, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:200].decode("utf-8", "replace")
            raise IpseError(
                f"the model at {redact(endpoint)} answered HTTP {exc.code}: {redact(detail)}"
            ) from exc
        except (OSError, ValueError) as exc:
            raise IpseError(f"the model at {redact(endpoint)} did not answer: {exc}") from exc
        return _text(answer, self.api)


def _text(answer: Any, api: str) -> str:
    try:
        if api == "anthropic":
            return "".join(b.get("text", "") for b in answer["content"] if isinstance(b, dict))
        content = answer["choices"][0]["message"]["content"]
        return content if isinstance(content, str) else ""
    except (KeyError, IndexError, TypeError) as exc:
        raise IpseError(f"the model's answer has an unexpected shape: {exc!r}") from exc


def judge(asker: Asker, question: str, truths: tuple[str, ...], answer: str) -> float:
    """1.0 when the judge says the answer states the truth, else 0.0."""
    truth = "\n".join(truths)
    verdict = asker.complete(
        JUDGE,
        f"Question: {question}\nTruth: {truth}\nAnswer: {answer}\nDoes the answer state the truth?",
    )
    return 1.0 if verdict.strip().lower().startswith("yes") else 0.0


__all__ = ["APIS", "Asker", "judge"]
