"""How a stream ends and how it reports an error are the codec's, per dialect: the proxy asks
the codec of the route's dialect, Anthropic's for an Anthropic client on any route (its error
body is the upstream's), Chat Completions' for an OpenAI route of no dialect. Every route, for a
client that sends Anthropic's headers and for one that does not, gives the bytes the APIs'
clients read."""

from __future__ import annotations

import json

import pytest

from ipse.proxy._forward import last_events
from ipse.proxy._wire import Provider, dialect_of, error_body, error_event, provider_of
from ipse.transcript._codec import DIALECTS, codec

ROUTES = ["/v1/messages", "/v1/chat/completions", "/v1/responses", "/v1/embeddings"]

_ANTHROPIC_EVENT = (
    b'event: error\ndata: {"type":"error","error":{"type":"api_error","message":"cut"}}'
)
_CHAT_EVENT = b'data: {"error":{"message":"cut","type":"server_error","param":null,"code":null}}'
_RESPONSES_EVENT = b'event: error\ndata: {"type":"error","code":"server_error","message":"cut"}'

EVENTS: dict[tuple[Provider, str], bytes] = {
    ("anthropic", "/v1/messages"): _ANTHROPIC_EVENT,
    ("anthropic", "/v1/chat/completions"): _ANTHROPIC_EVENT,
    ("anthropic", "/v1/responses"): _ANTHROPIC_EVENT,
    ("anthropic", "/v1/embeddings"): _ANTHROPIC_EVENT,
    ("openai", "/v1/chat/completions"): _CHAT_EVENT,
    ("openai", "/v1/responses"): _RESPONSES_EVENT,
    ("openai", "/v1/embeddings"): _CHAT_EVENT,
}

_RESPONSES_ENDS = (
    b"response.completed",
    b"response.failed",
    b"response.incomplete",
    b"event: error",
    b"[DONE]",
)
ENDS: dict[tuple[Provider, str], tuple[bytes, ...]] = {
    ("anthropic", "/v1/messages"): (b"message_stop", b"event: error"),
    ("anthropic", "/v1/chat/completions"): (b"[DONE]",),
    ("anthropic", "/v1/responses"): _RESPONSES_ENDS,
    ("anthropic", "/v1/embeddings"): (b"message_stop", b"event: error"),
    ("openai", "/v1/chat/completions"): (b"[DONE]",),
    ("openai", "/v1/responses"): _RESPONSES_ENDS,
    ("openai", "/v1/embeddings"): (),
}


CLIENTS = {"anthropic": {"x-api-key": "k"}, "openai": {}}
CASES = [(client, route) for client in CLIENTS for route in ROUTES]


@pytest.mark.parametrize(("client", "route"), CASES)
def test_a_broken_stream_ends_with_the_event_its_client_reads(client: str, route: str) -> None:
    provider = provider_of(route, CLIENTS[client])
    event = error_event(provider, dialect_of(route), "cut")
    assert event == EVENTS[provider, route] + b"\n\n"


@pytest.mark.parametrize(("client", "route"), CASES)
def test_the_last_event_of_a_stream_is_known_by_its_route(client: str, route: str) -> None:
    provider = provider_of(route, CLIENTS[client])
    assert last_events(provider, dialect_of(route)) == ENDS[provider, route]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_each_dialect_reports_an_error_in_an_event_its_stream_ends_with(dialect: str) -> None:
    """A stream that ends with the codec's error event is whole by the codec's own markers, and
    the event carries the message."""
    event = codec(dialect).stream_error("upstream closed")
    assert any(end in event for end in codec(dialect).stream_end) or dialect == "openai-chat"
    data = json.loads(event.split(b"data: ", 1)[1])
    assert "upstream closed" in json.dumps(data)


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_the_error_event_carries_the_providers_error_document(provider: Provider) -> None:
    """Anthropic's and Chat Completions' error events hold the body a 502 answer has."""
    event = codec(provider).stream_error("cut")
    assert json.loads(event.split(b"data: ", 1)[1]) == json.loads(error_body(provider, 502, "cut"))
