"""Credentials out of messages: one function for every URL or text that reaches a message or log.

Database URLs carry passwords (``postgresql://user:pass@host/db``, ``?password=...``) and may
be written carelessly (an unescaped ``@`` inside the password). `redact` masks the user-info
password of every ``scheme://`` URL in a text, up to the *last* ``@`` of the URL (so a password
holding ``@`` is masked whole; a query holding ``@`` is over-masked, never under-masked), and
the value of every ``password=`` / ``secret=`` / ``token=``-like parameter, in URL queries and in
libpq keyword strings alike. It works on any text, so it also cleans driver error messages
that quote a connection string.

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


def fingerprint(value: str | bytes) -> str:
    """A short stand-in for a value that must not be shown: its length and SHA-256 prefix."""
    import hashlib  # (here: most commands never show a fingerprint)

    data = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value
    unit = "chars" if isinstance(value, str) else "bytes"
    return f"<{len(value)} {unit}, sha256:{hashlib.sha256(data).hexdigest()[:12]}>"


__all__ = ["MASK", "fingerprint", "redact"]
