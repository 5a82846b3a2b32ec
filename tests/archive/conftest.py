"""Fixtures for the handoff tests: the shared sessions, and a clean migrations registry."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _forget_archive_component() -> Iterator[None]:
    """Opening an archive registers its migration steps in the process-wide registry; drop them
    afterwards so other test packages see only the components they registered themselves."""
    yield
    from ipse.store.migrations import _REGISTRY

    _REGISTRY.pop("archive", None)
