"""``ipse report``: one offline HTML page that shows where a session's tokens and money went.

`collect` computes the numbers from the library (requests, cache analysis, what fills the
context, what a handoff would save); `render` draws them as inline SVG and tables in one
self-contained page. `write_report` does both and writes the page atomically.
"""

from __future__ import annotations

import typing as _typing

from ipse.report._data import ReportData, collect
from ipse.report._page import render

if _typing.TYPE_CHECKING:
    from pathlib import Path


def write_report(data: ReportData, output: str | Path) -> int:
    """Write the page for ``data`` to ``output`` (in a folder that exists); the number of
    bytes written."""
    from pathlib import Path

    from ipse.fileio import atomic_write

    # a lone surrogate from the session (a model's output cut inside an emoji) shows as its
    # escape: UTF-8 has no bytes for it
    page = render(data).encode("utf-8", "backslashreplace")
    # conversation content: 0600 when new; a folder that does not exist is an error
    atomic_write(Path(output), page, private=True, make_folders=False)
    return len(page)


__all__ = ["ReportData", "collect", "render", "write_report"]
