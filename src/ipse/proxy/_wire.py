"""The wire rules: which headers pass, which route is whose, and the providers' error shapes.

Headers are forwarded unchanged except the hop-by-hop ones (RFC 9110 section 7.6.1, plus
``host`` and ``content-length``, which the client library sets again) and ``accept-encoding``:
the proxy asks upstream for ``identity``, because a compressed event stream is delayed by the
decompressor and the proxy reads usage from it. Credentials are forwarded and nothing else: the
header list that reaches a record or a log has them masked (`ipse._redact.masked_headers`).

Errors the proxy itself answers (upstream unreachable, timed out, a body too large) take the
shape the client's SDK parses: Anthropic ``{"type": "error", "error": {"type", "message"}}``,
OpenAI ``{"error": {"message", "type", "param", "code"}}``; once a stream has begun, the same
document goes out as a server-sent ``error`` event.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Literal, TypeAlias
from urllib.parse import quote, unquote

from ipse import jsonio

Provider: TypeAlias = Literal["anthropic", "openai"]

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "accept-encoding",
    }
)
RESPONSE_DROPPED = frozenset(HOP_BY_HOP - {"accept-encoding"}) | {"content-length"}


def request_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The headers to send upstream: hop-by-hop dropped, ``accept-encoding: identity`` added."""
    out = [(k, v) for k, v in headers if k.lower() not in HOP_BY_HOP]
    out.append(("accept-encoding", "identity"))
    return out


def response_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The upstream response's headers to send to the client."""
    return [(k, v) for k, v in headers if k.lower() not in RESPONSE_DROPPED]


_ANTHROPIC_HEADERS = ("anthropic-version", "anthropic-beta", "x-api-key")


def provider_of(path: str, headers: Mapping[str, str]) -> Provider:
    """Whose API a request is for: Anthropic for ``/v1/messages...``, for Anthropic's headers,
    and for Claude Code (``claude-cli`` user agent); OpenAI otherwise."""
    if path.startswith(("/v1/messages", "/v1/complete")):
        return "anthropic"
    if any(name in headers for name in _ANTHROPIC_HEADERS):
        return "anthropic"
    if headers.get("user-agent", "").lower().startswith("claude-cli"):
        return "anthropic"
    return "openai"


# What an upstream may read as a dot or a separator after the one decode every server does.
_ENCODED = re.compile(r"%(2e|2f|5c)", re.IGNORECASE)
_SEGMENT_SAFE = "!$&'()*+,;=:@-._~"


def confine(raw_path: str) -> str | None:
    """The path to append to an upstream's prefix for a request's raw (percent-encoded) path, or
    None when it would climb out of that prefix.

    The path is read as an upstream might: decoded once, then ``%2e``, ``%2f`` and ``%5c`` decoded
    once more and backslashes taken as slashes. A path with no ``.`` or ``..`` segment in that
    reading goes as it came, byte for byte; one with such segments is resolved, and goes as the
    resolved path (each segment percent-encoded again), unless a ``..`` climbs above its root.
    """
    if not raw_path.startswith("/"):
        return None
    reading = _ENCODED.sub(lambda m: chr(int(m.group(1), 16)), unquote(raw_path))
    segments = reading.replace("\\", "/").split("/")[1:]
    if not any(segment in (".", "..") for segment in segments):
        return raw_path
    kept: list[str] = []
    for segment in segments:
        if segment == "..":
            if not kept:
                return None
            kept.pop()
        elif segment != ".":
            kept.append(segment)
    if segments[-1] in (".", "..") and kept:
        kept.append("")  # "/a/b/.." is the folder "/a/"
    return "/" + "/".join(quote(segment, safe=_SEGMENT_SAFE) for segment in kept)


def dialect_of(path: str) -> str | None:
    """The body dialect of a route the proxy rewrites, or None for a pass-through route."""
    if path == "/v1/messages" or path.startswith("/v1/messages/"):
        return "anthropic" if path in ("/v1/messages", "/v1/messages/count_tokens") else None
    if path.endswith("/chat/completions"):
        return "openai-chat"
    if path.endswith("/responses"):
        return "openai-responses"
    return None


_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    502: "api_error",
    503: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def error_document(provider: Provider, status: int, message: str) -> dict[str, object]:
    """The provider's error body for ``status``."""
    if provider == "anthropic":
        kind = _ANTHROPIC_TYPES.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    kind = "invalid_request_error" if 400 <= status < 500 else "server_error"
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def error_body(provider: Provider, status: int, message: str) -> bytes:
    return jsonio.dumps(error_document(provider, status, message))


def error_event(provider: Provider, dialect: str | None, message: str) -> bytes:
    """A server-sent error event for a stream that has already begun: Anthropic's for an
    Anthropic client whatever the route, else the event of the route's dialect (of Chat
    Completions for a route with none)."""
    from ipse.transcript._shared import codec

    shape = provider if provider == "anthropic" or dialect is None else dialect
    return codec(shape).stream_error(message)


__all__ = [
    "HOP_BY_HOP",
    "Provider",
    "confine",
    "dialect_of",
    "error_body",
    "error_document",
    "error_event",
    "provider_of",
    "request_headers",
    "response_headers",
]
