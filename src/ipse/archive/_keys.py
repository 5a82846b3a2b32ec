"""How the archive's text columns hold text a database cannot store as it is.

The key columns (session, item id) hold `stored_key` of the text, which keeps apart texts that
only a database's escaping would confuse; the other columns are for reading and hold `storable`
text. `key_text` undoes `stored_key`, `shown` is a key as listings show it, and `lookup_keys`
the keys to try for a text a user typed (its own key, then the text read as a stored key, so an
id a listing shows with an escape is found as shown).
"""

from __future__ import annotations

import re


def storable(text: str) -> str:
    """``text`` as a database stores it: a lone surrogate (a model's output cut inside an
    emoji, a file name that is not UTF-8) becomes its escape, and NUL, which PostgreSQL text
    refuses, becomes ``\\x00``. Not one to one (a text holding the escape itself maps to the
    same), which is why key columns hold `stored_key` instead."""
    if "\x00" not in text:
        try:
            text.encode("utf-8")
            return text
        except UnicodeEncodeError:
            pass
    escaped = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return escaped.replace("\x00", "\\x00")


def stored_key(text: str) -> str:
    """``text`` as a key column stores it: every backslash doubled, then NUL and lone
    surrogates escaped as `storable` does. Unlike `storable` alone, no two texts share a key:
    an id holding NUL and one holding the four characters ``\\x00`` are two items."""
    return storable(text.replace("\\", "\\\\"))


_KEY_ESCAPE = re.compile(r"\\(\\|x00|u[0-9a-f]{4})")


def key_text(stored: str) -> str:
    """The text a key column's value was made from (`stored_key` undone)."""
    if "\\" not in stored:
        return stored
    return _KEY_ESCAPE.sub(_unescape, stored)


def _unescape(match: re.Match[str]) -> str:
    code = match[1]
    return "\\" if code == "\\" else chr(int(code[1:], 16))


def shown(stored: str) -> str:
    """A key as listings show it: the text itself, NUL and lone surrogates as escapes."""
    return storable(key_text(stored))


def lookup_keys(text: str) -> tuple[str, ...]:
    """The keys to look ``text`` up by, in order: its own, then ``text`` read as a stored key,
    so that an id a listing shows with an escape (it holds NUL) is found as shown."""
    own = stored_key(text)
    return (own,) if own == text or storable(text) != text else (own, text)


__all__ = ["key_text", "lookup_keys", "shown", "storable", "stored_key"]
