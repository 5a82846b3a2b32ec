"""The report in a real headless browser (Playwright driving the system Chromium), offline:
no console errors, no request leaves the page, the charts draw one mark per request, and the
page is not blank."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ipse.report import collect, write_report
from ipse.report._svg import MAX_BARS, _buckets
from tests.report.build import write_log

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _chromium() -> str:
    found = os.environ.get("IPSE_CHROMIUM") or shutil.which("chromium")
    if found:
        return found
    if os.environ.get("IPSE_REQUIRE_CLIENTS"):
        pytest.fail("Chromium is missing (IPSE_REQUIRE_CLIENTS is set)")
    pytest.skip("no Chromium to open the report in (apt-get install chromium)")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if os.environ.get("IPSE_REQUIRE_CLIENTS"):
        from playwright.sync_api import sync_playwright
    else:
        sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    executable = _chromium()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def open_offline(browser: Any, page_path: Path) -> tuple[Any, list[str], list[str]]:
    """Open the page with every network request refused; (page, requests, console errors)."""
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.route("http*://**", lambda route: route.abort())
    page.goto(page_path.as_uri())
    return page, requests, errors


def check_page(browser: Any, source: Path, out: Path) -> None:
    data = collect(str(source))
    write_report(data, out)
    page, requests, errors = open_offline(browser, out)
    assert requests == [out.as_uri()]
    assert errors == []
    drawn = len(_buckets(len(data.points)))
    assert drawn <= MAX_BARS
    assert page.locator("svg.chart").count() == 3
    assert page.locator("circle.point").count() == drawn
    assert page.locator("svg.chart").nth(1).locator("g.bar").count() == drawn
    assert page.locator("svg.chart").nth(2).locator("g.bar").count() == drawn
    assert page.locator("#numbers tbody tr").count() == len(data.points)
    shot = page.screenshot()
    blank = browser.new_page(viewport={"width": 1100, "height": 900})
    blank.set_content("<html><body></body></html>")
    assert len(shot) > 5 * len(blank.screenshot())  # a drawn page compresses far worse
    page.close()
    blank.close()


def test_generated_log(browser: Any, tmp_path: Path) -> None:
    check_page(browser, write_log(tmp_path / "log.jsonl"), tmp_path / "log.html")


def test_long_log_is_drawn_in_buckets(browser: Any, tmp_path: Path) -> None:
    source = write_log(tmp_path / "long.jsonl", turns=MAX_BARS + 40)
    check_page(browser, source, tmp_path / "long.html")


@pytest.mark.parametrize(
    "relative",
    ["claude-code/4d5611e5-241a-462a-8d15-5122611a9569.jsonl", "anthropic-http/captured-2"],
)
def test_real_sessions(browser: Any, shared_data: Path, tmp_path: Path, relative: str) -> None:
    check_page(browser, shared_data / relative, tmp_path / "real.html")
