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
"""

from __future__ import annotations

import re

MASK = "***"

# scheme://userinfo@ ; greedy to the last "@" of the URL (no whitespace or quotes inside).
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<info>[^\s'\"<>]*)@")
# key=value where the key names a credential; the value runs to "&", whitespace or a quote.
_PARAM = re.compile(
    r"(?P<key>\b[A-Za-z_]*(?:password|passwd|pwd|secret|token|api_?key)[A-Za-z_]*\s*=\s*)"
    r"(?P<value>'(?:[^'\\]|\\.)*'|[^&\s'\"#]+)",
    re.IGNORECASE,
)


def _userinfo(match: re.Match[str]) -> str:
    info = match.group("info")
    user, colon, _ = info.partition(":")
    if "/" in user or "?" in user or "#" in user:
        # the "@" sits after the host (in a path or query): nothing before it is a user name
        user, colon = "", ":"
    return match.group("scheme") + user + (":" + MASK if colon else "") + "@"


def redact(text: str, *, url: str | None = None) -> str:
    """``text`` with every password in a URL or key=value connection string masked.

    With ``url`` (the connection string a driver was given), the pieces of its password are
    masked wherever they appear too: a driver that misreads an unescaped ``@`` in a password
    names the rest of it as a host (``failed to resolve host 'ssw0rd@db'``).
    """
    for secret in _secrets(url) if url else ():
        text = text.replace(secret, MASK)
    text = _USERINFO.sub(_userinfo, text)
    return _PARAM.sub(lambda m: m.group("key") + MASK, text)


def _secrets(url: str) -> list[str]:
    """The password of ``url`` (to its last ``@``) and each ``@``-separated piece of it of
    three characters or more, plain and percent-decoded, longest first."""
    from urllib.parse import unquote

    match = _USERINFO.match(url)
    found: set[str] = set()
    if match is not None:
        _, colon, password = match.group("info").partition(":")
        if colon and password:
            pieces = [password, *password.split("@")]
            found.update(p for piece in pieces for p in (piece, unquote(piece)) if len(p) >= 3)
    for param in _PARAM.finditer(url):
        value = param.group("value").strip("'")
        found.update(v for v in (value, unquote(value)) if len(v) >= 3)
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
_NAME_PARTS = re.compile(r"[-_.\s]+")


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


__all__ = [
    "MASK",
    "fingerprint",
    "is_credential_name",
    "redact",
    "redact_query",
    "redact_target",
]
