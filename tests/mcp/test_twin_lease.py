"""Parallel twin turns in one process (the MCP server's worker threads, an application's
threads) never fence each other under one writer name: each applies, or meets `WriterConflict`
naming the writer it waited for, never "taken over" when nobody else wrote."""

from __future__ import annotations

import threading
from pathlib import Path

from ipse.errors import StaleWriter, WriterConflict
from ipse.twin import apply_turn, open_store
from ipse.twin._turn import default_holder


def test_threads_are_writers_of_their_own(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'twins.db'}"
    start = threading.Barrier(15)
    outcomes: list[str] = []

    def turn(n: int) -> None:
        start.wait()
        with open_store(url) as store:
            try:
                apply_turn(store, "ada", [{"op": "make_commitment", "text": f"promise {n}"}])
                outcomes.append("applied")
            except WriterConflict as exc:
                assert "is being written by" in str(exc)
                outcomes.append("conflict")
            except StaleWriter as exc:  # what one shared name led to
                outcomes.append(f"fenced: {exc}")

    threads = [threading.Thread(target=turn, args=(n,)) for n in range(15)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert set(outcomes) <= {"applied", "conflict"}, outcomes
    with open_store(url) as store:
        latest = store.latest("ada")
    assert latest is not None
    assert len(latest.state.commitments) == outcomes.count("applied") >= 1


def test_the_main_thread_keeps_the_plain_name() -> None:
    assert default_holder().count(":") == 1
    names: list[str] = []
    worker = threading.Thread(target=lambda: names.append(default_holder()))
    worker.start()
    worker.join()
    assert names[0].startswith(default_holder() + ":")
