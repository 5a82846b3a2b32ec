"""The public API stays small: ``python bench/public_names.py`` counts every name in the
``__all__`` of every public module (no part of its dotted name underscored), and the count stays
within a budget. A name siblings share is not public: it goes in the package's ``_shared``
module (docs/architecture.md, "Design opinions")."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO

BUDGET = 150


def _count() -> dict[str, int]:
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "public_names.py"), "--json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    counted: dict[str, int] = json.loads(done.stdout)["modules"]
    return counted


def test_the_public_api_stays_within_its_budget() -> None:
    counted = _count()
    assert sum(counted.values()) <= BUDGET, sorted(counted.items(), key=lambda kv: -kv[1])


def test_the_count_sees_packages_plain_modules_and_lazy_packages() -> None:
    counted = _count()
    assert counted["ipse.handoff.wire"] >= 1  # a plain module's literal __all__
    assert counted["ipse.statedir"] >= 1  # a lazy package's, made from its table
    assert not any(part.startswith("_") for name in counted for part in name.split("."))
