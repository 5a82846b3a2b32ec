"""SHA-256 for the modules the SessionStart hook imports, without `hashlib` (which loads
OpenSSL when it is imported; the rule and its measurement: docs/development.md). CPython builds
its own SHA-256 as a standard-library module (``_sha2`` from 3.12, ``_sha256`` before); its
digests are SHA-256's. Where neither is built, `hashlib`'s.
"""

from __future__ import annotations

TYPE_CHECKING = False  # (no `typing` on the SessionStart hook's path)
if TYPE_CHECKING:
    from hashlib import sha256 as sha256
else:
    try:
        from _sha2 import sha256
    except ImportError:
        try:
            from _sha256 import sha256
        except ImportError:
            from hashlib import sha256

__all__ = ["sha256"]
