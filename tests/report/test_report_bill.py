"""The report's bill: the input's calls by model, each once, as ``ipse usage`` counts them."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.conftest import SHARED, CliRun


@SHARED
def test_the_bill_of_a_session_with_sub_agents_is_ipse_usages(
    cli: CliRun, shared_data: Path, tmp_path: Path
) -> None:
    session = shared_data / "claude-code" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
    page = tmp_path / "report.html"
    assert cli("report", str(session), "-o", str(page)).returncode == 0
    html = page.read_text()
    section = html[html.index('<section id="bill">') : html.index('<section id="numbers">')]
    total = re.search(r'<td class="text">total</td><td>([\d,]+)</td>', section)
    assert total is not None
    usage = json.loads(cli("usage", "--path", str(session), "--json", "--by", "session").stdout)
    assert int(total.group(1).replace(",", "")) == usage["total"]["calls"] == 152
    assert f"${usage['total']['cost_usd']:,.2f}" in section


def test_an_input_the_bill_is_not_read_from_has_no_bill(cli: CliRun, tmp_path: Path) -> None:
    body = tmp_path / "request.json"
    body.write_text(json.dumps({"model": "claude-opus-4-6", "max_tokens": 10,
                                "messages": [{"role": "user", "content": "hi"}]}))  # fmt: skip
    page = tmp_path / "report.html"
    assert cli("report", str(body), "-o", str(page)).returncode == 0
    assert 'id="bill"' not in page.read_text()
