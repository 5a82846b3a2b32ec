"""Sets of the names ipse recognises in documents it did not write (a block's ``type``, a
message's ``role``): asked about any JSON value, a `Names` answers, where a ``frozenset`` raises
`TypeError` for a list or an object found where a string belongs."""

from __future__ import annotations

from collections.abc import Iterable


class Names(frozenset[str]):
    """A frozenset of strings whose ``in`` is False for an unhashable value."""

    def __new__(cls, names: Iterable[str] = ()) -> Names:
        return super().__new__(cls, names)

    def __contains__(self, value: object) -> bool:
        try:
            return frozenset.__contains__(self, value)
        except TypeError:  # a list or an object where a name belongs: not one of these
            return False
