"""ipse in the field's conformance kit: its suites run on `IpseCompactor`, every canary the
kit plants in user turns survives every round; canaries that arrive as tool output are removed
from the context and recalled from ipse's archive (the kit has no recall channel: ours does)."""

from __future__ import annotations

import importlib.util
import os
from typing import Any

import pytest

from ipse.probe import IpseCompactor

if importlib.util.find_spec("compaction_kit") is None and os.environ.get("IPSE_REQUIRE_CLIENTS"):
    pytest.fail("compaction-conformance-kit is missing (IPSE_REQUIRE_CLIENTS is set)")

kit: Any = pytest.importorskip("compaction_kit", reason="the conformance extra is not installed")
testing: Any = pytest.importorskip("compaction_kit.testing")
runner: Any = pytest.importorskip("compaction_kit.runner")
session_module: Any = pytest.importorskip("compaction_kit.session")
compactors: Any = pytest.importorskip("compaction_kit.compactors")


def test_the_kit_finds_no_loss_in_five_rounds_of_ipse() -> None:
    report = testing.check_compactor(IpseCompactor(), rounds=5)
    assert report.findings
    for finding in report.findings:
        assert finding.verdict != "FLAG" and not finding.has_late_cliff
        assert finding.round1_survival == 1.0
    testing.assert_no_flags(report)
    # the same suite does find loss where there is some: it is not a rubber stamp
    lossy = testing.check_compactor(compactors.LossyTruncationCompactor(), rounds=5)
    assert any(f.round1_survival < 1.0 for f in lossy.findings)


def _tool_canary_session() -> Any:
    """The kit's seeded session with every canary arriving as tool output instead."""
    seeded = session_module.build_seeded_session()
    turns = [
        session_module.Turn("tool", t.text, t.canary_id) if t.canary_id else t for t in seeded.turns
    ]
    return session_module.SeededSession(tuple(turns), dict(seeded.canary_positions))


def test_canaries_in_tool_output_are_removed_but_recalled_from_the_archive() -> None:
    session = _tool_canary_session()
    compactor = IpseCompactor()
    run = runner.run_conformance(session, compactor, rounds=3)
    first = run.rounds[0]
    assert not any(first.survived.values())  # the tool output left the context...
    canaries = {c.id: c for c in kit.canaries.seeded_canaries()}
    assert set(first.survived) == set(canaries)
    for canary in canaries.values():
        found = compactor.recall(canary.content[:40])
        assert found, canary.id  # ...and comes back by recall
        assert all(token in found[0].lower() for token in canary.required_tokens)
