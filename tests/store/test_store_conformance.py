"""The one conformance suite (`ipse.store.testing`): memory (the reference), SQLite and PostgreSQL
all pass every check."""

from __future__ import annotations

import pytest

from ipse.store import SnapshotBackend, open_backend
from ipse.store.testing import CHECKS, Check, raises, run_all


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__.removeprefix("check_"))
def test_conformance(check: Check, backend: SnapshotBackend) -> None:
    check(backend)


def test_run_all_opens_a_fresh_backend_for_every_check() -> None:
    opened: list[SnapshotBackend] = []

    def fresh() -> SnapshotBackend:
        opened.append(open_backend("memory://"))
        return opened[-1]

    run_all(fresh)
    assert len(opened) == len(CHECKS)


def test_a_broken_backend_fails_the_suite() -> None:
    class NoFencing:
        """The reference backend, except that a taken-over writer can still append."""

        def __init__(self) -> None:
            self._inner = open_backend("memory://")

        def __getattr__(self, name: str) -> object:
            return getattr(self._inner, name)

        def append(self, lease, **kwargs):
            current = self._inner.acquire(lease.twin_id, lease.holder, 30)
            return self._inner.append(current, **kwargs)

    with pytest.raises(AssertionError):
        run_all(NoFencing)  # type: ignore[arg-type]


def test_raises_checks_the_message() -> None:
    from ipse.errors import InputError

    with pytest.raises(AssertionError, match="does not match"), raises(InputError, match="ttl"):
        raise InputError("twin_id is empty")
