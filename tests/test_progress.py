"""Progress: the library reports, a front end shows it only on a terminal, after a second."""

from __future__ import annotations

from pathlib import Path

from ipse import _progress as progress
from ipse.cli._output import _DelayedBar, terminal_progress
from ipse.fileio import read_lines


class _Collect:
    def __init__(self) -> None:
        self.updates: list[tuple[str, float, float | None]] = []

    def update(self, label: str, done: float, total: float | None) -> None:
        self.updates.append((label, done, total))


def test_reading_a_file_reports_its_bytes(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    path.write_bytes(b'{"a": "' + b"x" * 3_000_000 + b'"}\n' + b"{}\n" * 1000)
    sink = _Collect()
    with progress.reporting(sink):
        assert sum(len(line) + 1 for line in read_lines(path)) == path.stat().st_size
    assert sink.updates
    assert all(label == "reading big.jsonl" for label, _, _ in sink.updates)
    assert sink.updates[-1][1:] == (path.stat().st_size, path.stat().st_size)
    assert [done for _, done, _ in sink.updates] == sorted(done for _, done, _ in sink.updates)


def test_without_a_sink_nothing_is_reported(tmp_path: Path) -> None:
    assert not progress.active()
    assert list(progress.track([1, 2, 3], "x")) == [1, 2, 3]


def test_track_reports_each_item() -> None:
    sink = _Collect()
    with progress.reporting(sink):
        assert list(progress.track(["a", "b"], "replaying")) == ["a", "b"]
    assert sink.updates == [("replaying", 1, 2), ("replaying", 2, 2)]


def test_the_bar_waits_for_slow_work() -> None:
    bar = _DelayedBar(delay=3600)
    bar.update("reading", 1, 10)
    assert bar._bar is None  # short work shows nothing
    bar.close()


def test_not_a_terminal_or_json_shows_nothing() -> None:
    # under pytest stderr is captured, not a terminal: no sink is installed
    with terminal_progress():
        assert not progress.active()
    with terminal_progress(quiet=True):
        assert not progress.active()


def test_a_session_reports_building_its_thread_and_measuring_its_requests() -> None:
    """Between the last line read and the first request replayed, a large session spends
    seconds building its thread and measuring its requests: both are reported."""
    from ipse.prefix import analyze, read_requests
    from tests.conftest import EXAMPLE_SESSION

    sink = _Collect()
    with progress.reporting(sink):
        log = read_requests(EXAMPLE_SESSION)
        analyze(log.requests)
    labels = [label for label, _, _ in sink.updates]
    assert ("building the main thread", 1, 1) in sink.updates
    assert labels.index("building the main thread") < labels.index("measuring requests")
    measured = [done for label, done, _ in sink.updates if label == "measuring requests"]
    assert measured[-1] == len(log.requests)
