"""Credentials out of messages: one function for every URL or text that reaches a message or log.

Database URLs carry passwords (``postgresql://user:pass@host/db``, ``?password=...``) and may
be written carelessly (an unescaped ``@`` inside the password). `redact` masks the user-info
password of every ``scheme://`` URL in a text, up to the *last* ``@`` of the URL (so a password
holding ``@`` is masked whole; a query holding ``@`` is over-masked, never under-masked), and
the value of every ``password=`` / ``secret=`` / ``token=``-like parameter, in URL queries and in
libpq keyword strings alike. It works on any text, so it also cleans driver error messages
that quote a connection string.

`redact_query` masks the value of every credential parameter of a URL's query string
(``?key=``, ``api-key``, ``access_token``, ``sig``, ...; `is_credential_name` says which names
are credentials, for headers and fields too), parameter by parameter in one pass.

`fingerprint` is what a diagnostic shows instead of a value that may be a secret (a rotated
token in a system prompt, an id, a tool argument): its length and a short SHA-256, enough to
see that two values differ or match, never what they are.

What a front end writes about a request it passed on (a record, a log line) goes through one
masking step, the same for ``ipse proxy`` and the LiteLLM hook: `RequestSecrets` gathers the
credentials a request carried (credential headers, query parameters and body fields) and masks
them wherever they turn up again; `mask_text` masks a text from elsewhere, such as a provider's
error, which may quote a key nobody sent here (``Bearer sk-proj-...``, ``?key=AIza...``);
`masked_headers` and `masked_body` give headers and a request body with every credential
replaced by ``***``, the conversation itself kept whole.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

MASK = "***"

# A run of characters a URL may hold (no whitespace, quotes or angle brackets): a URL with its
# user info lies inside one run, so each run is looked at once.
_RUN = re.compile(r"[^\s'\"<>]++")
_URL_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*+")
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
# key= where the key is a whole word of letters and underscores; possessive, so a long word
# is read once (whether it names a credential is asked of the word afterwards).
_KEY = re.compile(r"(?<!\w)[A-Za-z_]++\s*+=\s*+")
_CREDENTIAL = re.compile(r"password|passwd|pwd|secret|token|api_?key", re.IGNORECASE)
# the value: a quoted string (backslash escapes) or a run up to "&", whitespace, a quote or "#"
_QUOTED = re.compile(r"'(?:[^'\\]++|\\.)*+'", re.DOTALL)
_BARE = re.compile(r"[^&\s'\"#]++")


def _scheme_at(run: str, colon: int) -> bool:
    """Whether ``run[:colon]`` ends in a URL scheme (a letter, then letters, digits, ``+.-``)."""
    start = colon
    while start > 0 and run[start - 1] in _SCHEME_CHARS:
        start -= 1
    return any(c.isascii() and c.isalpha() for c in run[start:colon])


def _mask_userinfo(run: str) -> str:
    """``run`` with the password of its first ``scheme://user:pass@`` masked, up to its last
    ``@`` (what the pattern ``scheme://[^\\s'"<>]*@`` matched, found in one pass)."""
    at = run.rfind("@")
    if at < 0:
        return run
    colon = run.find("://")
    while 0 <= colon < at and not _scheme_at(run, colon):
        colon = run.find("://", colon + 3)
    if colon < 0 or colon >= at:
        return run
    info = run[colon + 3 : at]
    user, sep, _ = info.partition(":")
    if "/" in user or "?" in user or "#" in user:
        # the "@" sits after the host (in a path or query): nothing before it is a user name
        user, sep = "", ":"
    return run[: colon + 3] + user + (":" + MASK if sep else "") + run[at:]


def _mask_userinfos(text: str) -> str:
    if "://" not in text:
        return text
    return _RUN.sub(lambda m: _mask_userinfo(m.group()) if "://" in m.group() else m.group(), text)


def _mask_params(text: str) -> str:
    """Every ``credential-key=value`` with its value masked, in one pass over ``text``."""
    if "=" not in text:
        return text
    out: list[str] = []
    done = 0
    unclosed = len(text)  # from here on no quote closes (learnt once, so never rescanned)
    for key in _KEY.finditer(text):
        start = key.end()
        if start < done or not _CREDENTIAL.search(key.group()):
            continue
        value = None
        if start < len(text) and text[start] == "'" and start < unclosed:
            value = _QUOTED.match(text, start)
            if value is None:
                unclosed = start
        if value is None:
            value = _BARE.match(text, start)
        if value is None:
            continue
        out.append(text[done:start])
        out.append(MASK)
        done = value.end()
    out.append(text[done:])
    return "".join(out)


def redact(text: str, *, url: str | None = None) -> str:
    """``text`` with every password in a URL or key=value connection string masked.

    With ``url`` (the connection string a driver was given), the pieces of its password are
    masked wherever they appear too: a driver that misreads an unescaped ``@`` in a password
    names the rest of it as a host (``failed to resolve host 'ssw0rd@db'``).

    Linear in the length of ``text``: each run of URL characters and each key is read a
    bounded number of times, and no pattern can backtrack over a long run (a message that
    quotes an agent's 80,000-character argument costs what reading it costs).
    """
    for secret in _secrets(url) if url else ():
        text = text.replace(secret, MASK)
    return _mask_params(_mask_userinfos(text))


def _secrets(url: str) -> list[str]:
    """The password of ``url`` (to its last ``@``) and each ``@``-separated piece of it of
    three characters or more, plain and percent-decoded, longest first."""
    from urllib.parse import unquote

    found: set[str] = set()
    run = _RUN.match(url)
    scheme, sep, rest = (run.group() if run else "").partition("://")
    at = rest.rfind("@")
    if sep and at >= 0 and _URL_SCHEME.fullmatch(scheme):
        _, colon, password = rest[:at].partition(":")
        if colon and password:
            pieces = [password, *password.split("@")]
            found.update(p for piece in pieces for p in (piece, unquote(piece)) if len(p) >= 3)
    for key in _KEY.finditer(url):
        if _CREDENTIAL.search(key.group()):
            value = _QUOTED.match(url, key.end()) or _BARE.match(url, key.end())
            if value is not None:
                text = value.group().strip("'")
                found.update(v for v in (text, unquote(text)) if len(v) >= 3)

    return sorted(found, key=len, reverse=True)


# A parameter or header name that names a credential: split at "-", "_", "." and spaces, one part
# is a word below, or the name (joined) ends in "key" or holds a longer credential word. Session
# ids are not credentials here: a record keeps them to tell conversations apart.
_CREDENTIAL_PARTS = frozenset(
    {
        "auth", "authorization", "bearer", "cookie", "credential", "credentials", "jwt",
        "key", "otp", "pass", "passwd", "password", "pin", "pwd", "secret", "sig", "signature",
        "token",
    }
)  # fmt: skip
# "token" but not "tokens" (max_tokens counts, it hides nothing)
_CREDENTIAL_WORDS = re.compile(r"token(?!s)|secret|passw|apikey|signature|credential")
_NAME_PARTS = re.compile(r"[-_.\s]++")


def is_credential_name(name: str) -> bool:
    """Whether a query parameter, header or field called ``name`` holds a credential
    (``key``, ``api-key``, ``access_token``, ``X-Amz-Signature``, ``client_secret``, ...)."""
    lowered = name.strip().lower()
    if lowered == "code":  # an OAuth code, an Azure Functions key
        return True
    parts = [p for p in _NAME_PARTS.split(lowered) if p]
    if any(p in _CREDENTIAL_PARTS for p in parts):
        return True
    joined = "".join(parts)
    return joined.endswith("key") or _CREDENTIAL_WORDS.search(joined) is not None


def redact_query(query: str) -> str:
    """A URL's query string (without ``?``) with the value of every credential parameter
    (`is_credential_name`, also percent-encoded names) masked; everything else as it was."""
    from urllib.parse import unquote_plus

    if not query:
        return query
    out = []
    for pair in query.split("&"):
        name, equals, _ = pair.partition("=")
        if equals and is_credential_name(unquote_plus(name)):
            pair = f"{name}={MASK}"
        out.append(pair)
    return "&".join(out)


def redact_target(target: str) -> str:
    """A request target (``/path?query``) with its query's credentials masked (`redact_query`)."""
    path, mark, query = target.partition("?")
    return path + mark + redact_query(query) if mark else target


def fingerprint(value: str | bytes) -> str:
    """A short stand-in for a value that must not be shown: its length and SHA-256 prefix."""
    import hashlib  # (here: most commands never show a fingerprint)

    data = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value
    unit = "chars" if isinstance(value, str) else "bytes"
    return f"<{len(value)} {unit}, sha256:{hashlib.sha256(data).hexdigest()[:12]}>"


# Headers that carry a credential (besides those `is_credential_name` names): masked in
# records and logs, and their values masked wherever they turn up again.
CREDENTIAL_HEADERS = frozenset(
    {
        "authorization",
        "x-api-key",
        "api-key",
        "proxy-authorization",
        "cookie",
        "set-cookie",
        "x-goog-api-key",
        "openai-organization",
        "openai-project",
    }
)
# fields of a request body that are the conversation itself, kept whole
_CONTENT_FIELDS = frozenset({"messages", "input", "system", "tools", "instructions", "prompt"})
_NOT_CREDENTIALS = frozenset({"prompt_cache_key"})  # names that look like a credential's
_SHORTEST_SECRET = 8  # shorter values are not searched for (they would mask ordinary words)
# A scheme word and its token (``Bearer sk-...``), and the shapes of the providers' keys, in
# text that quotes them; possessive, so a long run is read once.
_AUTH_SCHEME = re.compile(r"(?i)\b(bearer|basic)(\s++)[A-Za-z0-9._~+/=-]{8,}+")
_KEY_SHAPES = re.compile(r"(?<![A-Za-z0-9_-])(?:sk-|AIza|xox[bpa]-|ghp_|glpat-)[A-Za-z0-9_-]{16,}+")


def masked_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Headers for a record or a log (names lowered): every credential replaced by ``***``."""
    out: dict[str, str] = {}
    for key, value in headers:
        name = key.lower()
        out[name] = MASK if _credential_header(name) else value
    return out


def masked_body(body: Any) -> Any:
    """A request body for a record: the value of every field named like a credential masked
    (``api_key``, ``password``, ``x-api-key``, ``metadata.token``, ...), the conversation itself
    (messages, input, system, tools) kept whole."""
    if not isinstance(body, dict):
        return body
    return {
        key: value if key in _CONTENT_FIELDS else _masked_field(str(key), value)
        for key, value in body.items()
    }


def _masked_field(name: str, value: Any) -> Any:
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return MASK if _credential_field(name) else value
    if isinstance(value, dict):
        return {k: _masked_field(str(k), v) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked_field(name, v) for v in value]
    return value


def _credential_header(name: str) -> bool:
    return name in CREDENTIAL_HEADERS or is_credential_name(name)


def _credential_field(name: str) -> bool:
    return is_credential_name(name) and name not in _NOT_CREDENTIALS


class RequestSecrets:
    """The credentials one request carried, masked wherever they turn up again in what is
    written about it (`text`, `bytes`): an upstream's error that quotes its URL, a response that
    echoes a header. ``values``: longest first, none shorter than 8 characters."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        found = {v for v in values if isinstance(v, str) and len(v) >= _SHORTEST_SECRET}
        self.values = tuple(sorted(found, key=len, reverse=True))

    @classmethod
    def of_request(
        cls,
        headers: Iterable[tuple[str, str]] = (),
        query: str = "",
        body: Any = None,
    ) -> RequestSecrets:
        """The credentials in a request's headers (a scheme's token too), query parameters
        and body fields (outside the conversation)."""
        from urllib.parse import unquote_plus

        found: set[str] = set()
        for pair in query.split("&") if query else ():
            name, equals, value = pair.partition("=")
            if equals and is_credential_name(unquote_plus(name)):
                found.update((value, unquote_plus(value)))
        for name, value in headers:
            if _credential_header(name.lower()):
                found.update((value, value.rpartition(" ")[2]))
        if isinstance(body, dict):
            for key, value in body.items():
                if key not in _CONTENT_FIELDS:
                    _field_secrets(str(key), value, found)
        return cls(found)

    def __add__(self, other: RequestSecrets) -> RequestSecrets:
        return RequestSecrets((*self.values, *other.values))

    def text(self, text: str) -> str:
        """``text`` with these credentials masked, and every one `mask_text` finds."""
        for value in self.values:
            text = text.replace(value, MASK)
        return mask_text(text)

    def bytes(self, data: bytes) -> bytes:
        """``data`` (a record's line) with these credentials masked, byte for byte."""
        for value in self.values:
            data = data.replace(value.encode("utf-8", "surrogateescape"), MASK.encode())
        return data


def _field_secrets(name: str, value: Any, found: set[str]) -> None:
    """The values of the fields a credential is kept in: named for one by their last word
    (``api_key``, ``user_api_key``, ``auth_token``, ``password``; not ``api_key_alias`` or
    ``user_api_key_request_route``), one word, no space."""
    if isinstance(value, str):
        last = _NAME_PARTS.split(name.strip().lower())[-1]
        if (
            _credential_field(name)
            and is_credential_name(last)
            and not any(c.isspace() for c in value)
        ):
            found.add(value)
    elif isinstance(value, dict):
        for key, inner in value.items():
            _field_secrets(str(key), inner, found)
    elif isinstance(value, list):
        for inner in value:
            _field_secrets(name, inner, found)


def mask_text(text: str) -> str:
    """A text from elsewhere (a provider's error, an exception) with every credential found in
    it masked: what `redact` masks, a scheme's token (``Bearer sk-...`` keeps ``Bearer``), a
    provider key's shape (``sk-...``, ``AIza...``), and every credential parameter of a URL's
    query (``?key=...``, `redact_query`). Linear in the length of ``text``."""
    text = redact(text)
    text = _AUTH_SCHEME.sub(lambda m: m.group(1) + m.group(2) + MASK, text)
    text = _KEY_SHAPES.sub(MASK, text)
    if "?" not in text:
        return text
    return _RUN.sub(lambda m: _mask_url_query(m.group()) if "?" in m.group() else m.group(), text)


def _mask_url_query(run: str) -> str:
    head, _, query = run.partition("?")
    query, hash_mark, fragment = query.partition("#")
    return f"{head}?{redact_query(query)}{hash_mark}{fragment}"


__all__ = [
    "CREDENTIAL_HEADERS",
    "MASK",
    "RequestSecrets",
    "fingerprint",
    "is_credential_name",
    "mask_text",
    "masked_body",
    "masked_headers",
    "redact",
    "redact_query",
    "redact_target",
]
