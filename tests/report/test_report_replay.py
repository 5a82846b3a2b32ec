"""The report's "what ipse would have saved" card: the whole bill less the bill with the
autopilot, as ``ipse replay`` has them for the same input."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

from tests.conftest import EXAMPLE_SESSION, CliRun
from tests.replay.test_lines import _compacted


def _card(html: str) -> tuple[str, str]:
    found = re.search(r'<div class="card" id="replay" title="([^"]*)">[^<]*<b>([^<]*)</b>', html)
    assert found is not None, "no replay card"
    return unescape(found.group(1)), unescape(found.group(2))


def test_the_card_says_what_the_replay_saved(cli: CliRun, tmp_path: Path) -> None:
    session = _compacted(tmp_path)
    page = tmp_path / "report.html"
    assert cli("report", str(session), "-o", str(page)).returncode == 0
    title, value = _card(page.read_text())
    replayed = json.loads(cli("replay", str(session), "--json", "--no-probe").stdout)
    recorded = replayed["recorded"]["bill_usd"]
    policy = replayed["with_policy_at_recorded"]["bill_usd"]
    saved = recorded - policy
    assert saved > 0  # (the autopilot cuts this session before the compaction)
    assert value == f"${saved:,.2f} ({saved / recorded:.0%})"
    assert f"${recorded:,.2f} as recorded" in title
    assert f"${policy:,.2f} with the autopilot" in title
    numbers = json.loads(cli("report", str(session), "-o", str(page), "--json").stdout)
    assert numbers["replay"]["saved_usd"] == round(saved, 6)
    assert numbers["replay"]["cuts"] == len(replayed["cuts"])


def test_a_session_the_autopilot_leaves_alone_saved_nothing(cli: CliRun, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    assert cli("report", str(EXAMPLE_SESSION), "-o", str(page)).returncode == 0
    title, value = _card(page.read_text())
    assert value == "nothing" and "(0 cuts, 0 nudges)" in title


def test_an_input_without_requests_has_no_card(cli: CliRun, tmp_path: Path) -> None:
    body = tmp_path / "request.json"
    body.write_text(json.dumps({"model": "claude-opus-4-6", "max_tokens": 10,
                                "messages": [{"role": "user", "content": "hi"}]}))  # fmt: skip
    page = tmp_path / "report.html"
    assert cli("report", str(body), "-o", str(page)).returncode == 0
    assert 'id="replay"' in page.read_text()  # (one request: a replay of it, nothing cut)
