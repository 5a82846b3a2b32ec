"""What the proxy writes holds no credential, what it forwards stays under the upstream's prefix,
and it contacts no upstream nobody asked for.

- Credentials in the query (``?key=``, ``api-key``, ``access_token``, ``sig``, ...), in headers
  and in credential-named body fields are masked in the record, the log and the JSON log.
- A path that climbs out of the upstream's prefix (``..``, ``%2e%2e``, ``..%2f``) is refused with
  400 in the provider's shape and never sent; one that stays inside is resolved.
- Claude Code's ``HEAD /`` is answered by the proxy; a provider without an upstream is refused
  without a connection.
"""

from __future__ import annotations

import http.client
import json
import posixpath
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from ipse._redact import redact_query
from ipse.proxy import ProxyConfig
from ipse.proxy._wire import confine
from tests.proxy.conftest import Proxy, ProxyFactory
from tests.support.anthropic_upstream import anthropic_upstream
from tests.support.serving import serve

SECRETS = (
    "s3cr3t-key",
    "s3cr3t-apikey",
    "s3cr3t-access",
    "s3cr3t-sig",
    "s3cr3t-pw",
    "s3cr3t-header",
    "s3cr3t-field",
    "s3cr3t-meta",
)
QUERY = (
    "beta=true&key=s3cr3t-key&api-key=s3cr3t-apikey&access_token=s3cr3t-access"
    "&X-Amz-Signature=s3cr3t-sig&password=s3cr3t-pw"
)
BODY: dict[str, Any] = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 5,
    "api_key": "s3cr3t-field",
    "metadata": {"user_id": "u1", "token": "s3cr3t-meta"},
    "messages": [{"role": "user", "content": "hi"}],
}
HEADERS = {"anthropic-version": "2023-06-01", "x-goog-api-key": "s3cr3t-header"}


def _written(proxy: Proxy) -> str:
    proxy.settle()
    return proxy.record.read_text() + proxy.log.getvalue()


def test_no_credential_reaches_the_record_or_either_log(proxy_factory: ProxyFactory) -> None:
    for json_log in (False, True):
        with (
            anthropic_upstream(["ok"]) as upstream,
            proxy_factory(upstream.url, json_log=json_log) as proxy,
        ):
            done = httpx.post(f"{proxy.url}/v1/messages?{QUERY}", json=BODY, headers=HEADERS)
            assert done.status_code == 200
            # the upstream gets every credential: they are forwarded, and only that
            assert upstream.received[-1]["path"] == f"/v1/messages?{QUERY}"
            assert upstream.received[-1]["body"]["api_key"] == "s3cr3t-field"
            # an upstream whose error quotes the URL it was asked for
            echoed = httpx.post(f"{proxy.url}/v1/unknown?{QUERY}", json=BODY, headers=HEADERS)
            assert echoed.status_code == 404 and "s3cr3t-key" in echoed.text
            written = _written(proxy)
            entry = proxy.records()[0]
        for secret in SECRETS:
            assert secret not in written, (secret, json_log)
        assert entry["request"]["url"].startswith("/v1/messages?beta=true&key=***&api-key=***")
        assert entry["request"]["body"]["metadata"] == {"user_id": "u1", "token": "***"}
        assert entry["request"]["body"]["messages"] == BODY["messages"]


GATEWAY_KEY = "sk-proj-Zq8r2Lm4Np6Qs8Tu0Vw2Xy4Za6Bc8De0Fg"
GOOGLE_KEY = "AIzaSyD3f8h2K9m4N6p8Q1r3S5t7V9w1X3y5Z7a"


class _QuotingGateway(BaseHTTPRequestHandler):
    """An upstream gateway whose error quotes its own upstream keys, which no client sent."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        message = (
            f"upstream said 401 to Authorization: Bearer {GATEWAY_KEY} and to "
            f"https://generativelanguage.googleapis.com/v1beta/models/m:generate?key={GOOGLE_KEY}"
        )
        body = json.dumps({"type": "error", "error": {"type": "authentication_error",
                                                      "message": message}}).encode()  # fmt: skip
        self.send_response(401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_an_error_that_quotes_keys_no_request_carried_is_masked(
    proxy_factory: ProxyFactory,
) -> None:
    """The masking step the LiteLLM hook takes too (`ipse._redact.mask_text`): the client gets
    the error as it came, the record has the keys in it masked."""
    with serve(_QuotingGateway) as url, proxy_factory(url) as proxy:
        done = httpx.post(f"{proxy.url}/v1/messages", json=BODY, headers=HEADERS)
        assert done.status_code == 401 and GATEWAY_KEY in done.text  # forwarded untouched
        written = _written(proxy)
    assert "authentication_error" in written and "generativelanguage" in written
    assert GATEWAY_KEY not in written and GOOGLE_KEY not in written


@given(
    st.lists(
        st.tuples(
            st.sampled_from(
                [
                    "key",
                    "api_key",
                    "api-key",
                    "token",
                    "access_token",
                    "sig",
                    "signature",
                    "password",
                    "secret",
                    "client_secret",
                    "apiKey",
                ]
            ),
            st.text("abcXYZ019-_.~", min_size=3, max_size=12),
        ),
        min_size=1,
        max_size=5,
    ),
    st.lists(st.sampled_from(["beta=true", "stream=1", "a=b"]), max_size=3),
)
def test_every_credential_parameter_is_masked(
    secrets: list[tuple[str, str]], plain: list[str]
) -> None:
    pairs = [f"{name}=QQ{value}" for name, value in secrets] + plain
    masked = redact_query("&".join(pairs))
    assert "QQ" not in masked
    for pair in plain:
        assert pair in masked.split("&")


# ----------------------------------------------------------------------------- path traversal


def _raw(proxy: Proxy, path: str) -> tuple[int, dict[str, Any]]:
    """POST ``path`` exactly as written (an HTTP client would resolve the dots first)."""
    host, port = urlsplit(proxy.url).hostname, urlsplit(proxy.url).port
    connection = http.client.HTTPConnection(host or "127.0.0.1", port, timeout=30)
    try:
        data = json.dumps(BODY).encode()
        connection.putrequest("POST", path, skip_accept_encoding=True)
        for name, value in {
            **HEADERS,
            "content-type": "application/json",
            "content-length": str(len(data)),
        }.items():
            connection.putheader(name, value)
        connection.endheaders(data)
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        connection.close()


ESCAPES = [
    "/../../../outside",
    "/%2e%2e/%2e%2e/%2e%2e/outside",
    "/v1/..%2f..%2f..%2foutside",
    "/v1/..%2f..",
    "/v1/%252e%252e/%252e%252e/%252e%252e/outside",
    "/v1\\..\\..\\..\\outside",
]


def test_paths_that_leave_the_prefix_are_refused(proxy_factory: ProxyFactory) -> None:
    with anthropic_upstream(["ok"]) as upstream:
        prefixed = f"{upstream.url}/prefix/anthropic"
        with proxy_factory(prefixed) as proxy:
            for path in ESCAPES:
                status, document = _raw(proxy, path)
                assert status == 400, path
                assert document["type"] == "error", path
                assert document["error"]["type"] == "invalid_request_error"
            assert upstream.received == []  # nothing went upstream
            status, _ = _raw(proxy, "/v1/../v1/./messages")
            log = proxy.log.getvalue()
        assert [r["path"] for r in upstream.received] == ["/prefix/anthropic/v1/messages"]
        assert log.count(" 400 refused: the path leaves") == len(ESCAPES)


SEGMENTS = [
    "..",
    ".",
    "%2e%2e",
    "%2E.",
    ".%2e",
    "%2e",
    "v1",
    "a",
    "",
    "..%2f..",
    "%2f",
    "%5c..",
    "\\..",
    "%252e%252e",
    "messages",
    "%25",
    "b%2fc",
]


def _as_an_upstream_reads(path: str) -> str:
    """Decode once, then what may still read as a dot or separator, then resolve the dots."""
    reading = unquote(path)
    for code, char in (
        ("%2e", "."),
        ("%2E", "."),
        ("%2f", "/"),
        ("%2F", "/"),
        ("%5c", "/"),
        ("%5C", "/"),
    ):
        reading = reading.replace(code, char)
    return posixpath.normpath(reading.replace("\\", "/"))


@settings(max_examples=400)
@given(st.lists(st.sampled_from(SEGMENTS), max_size=8))
def test_a_confined_path_never_leaves_the_prefix(segments: list[str]) -> None:
    raw = "/" + "/".join(segments)
    target = confine(raw)
    climbs = _as_an_upstream_reads("/prefix/x" + raw)
    if target is None:
        assert not climbs.startswith("/prefix/x")  # refused: it would have left
        return
    # what is sent stays under the prefix however it is read, and httpx keeps it there
    assert _as_an_upstream_reads("/prefix/x" + target).startswith("/prefix/x")
    assert httpx.URL("http://h/prefix/x" + target).path.startswith("/prefix/x")
    if "." not in unquote(unquote(raw)):
        assert target == raw  # no dot segment, however encoded: byte for byte


# ------------------------------------------------------------------ upstreams nobody asked for


@contextmanager
def _counting_listener() -> Iterator[tuple[str, list[int]]]:
    """A port that counts the connections made to it (and closes them)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    accepted: list[int] = []
    stop = threading.Event()

    def run() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            accepted.append(1)
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}", accepted
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()


def test_head_slash_is_answered_here(proxy_factory: ProxyFactory) -> None:
    with (
        _counting_listener() as (anthropic, to_anthropic),
        _counting_listener() as (openai, to_openai),
        proxy_factory(anthropic, openai) as proxy,
    ):
        # Claude Code's connectivity check at every start
        headers = {"user-agent": "claude-cli/2.1.0 (external, cli)"}
        assert httpx.head(f"{proxy.url}/", headers=headers).status_code == 200
        assert httpx.head(f"{proxy.url}/").status_code == 200
        proxy.settle()
        log = proxy.log.getvalue()
        assert to_anthropic == [] and to_openai == []
        assert "502" not in log and log.count("HEAD / 200 answered by the proxy") == 2
        # Claude Code's other requests are Anthropic's, whatever their path
        httpx.get(f"{proxy.url}/api/hello", headers=headers)
        proxy.settle()
    assert len(to_anthropic) == 1 and to_openai == []


def test_a_provider_without_an_upstream_is_never_contacted(proxy_factory: ProxyFactory) -> None:
    anthropic, openai = ProxyConfig.upstreams_from_options("http://127.0.0.1:9/a", None)
    assert openai is None and anthropic is not None
    with _counting_listener() as (listener, accepted), proxy_factory(listener) as proxy:
        proxy.state.config = _without_openai(proxy.state.config)
        chat = httpx.post(f"{proxy.url}/v1/chat/completions", json={"model": "m", "messages": []})
        assert chat.status_code == 404
        assert "no openai upstream" in chat.json()["error"]["message"]
        assert accepted == []


def _without_openai(config: ProxyConfig) -> ProxyConfig:
    from dataclasses import replace

    return replace(config, openai=None)
