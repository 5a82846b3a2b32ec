"""The archive's search at scale: ingest per item against a plain insert, and query latency.

Generates ``--items`` realistic archived items (default 100,000: reads of source files, shell
commands and their logs, edits, greps, writes and thinking, in sessions of 200 items over 25
projects, a few outputs of tens of kilobytes), then on each backend:

- ingest: `ArchiveStore.put` in handoff-sized batches (20 items), the words indexed as they
  are stored, beside a plain insert of the same items in the same batches measured in the same
  run, batch for batch in turn (the compressed payloads and the item rows, no index: what
  ``put`` did before the search); the ratio of their per-item times, and the per-item time of
  the last tenth of the ingest over the first tenth (1.0 when ingest is linear in the
  archive's size; beside the plain insert's, which a busy machine moves alike);
- queries: recall by id, and searches by a word, two words, a path, a kind, in the caller's
  session, its project and every session, a common word among them; p50 and p95 of each kind
  and of all, in milliseconds.

    python bench/recall.py [--items N] [--backend sqlite|postgres|both] [--pg URL]

PostgreSQL uses ``--pg`` (else ``IPSE_TEST_DATABASE_URL``), in a scratch schema dropped after.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import secrets
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ipse.archive import Caller, open_archive, recall_item, search_items
from ipse.archive._blobs import CODEC, address, compress, payload
from ipse.archive._drivers import Driver, PostgresDriver, SqliteDriver
from ipse.archive._schema import ensure_registered
from ipse.archive.testing import Item
from ipse.store import open_backend

SESSION_SIZE = 200
PROJECTS = 25
BATCH = 20
SAMPLES = 40
_SYLLABLES = (
    "con fig par se load save user req res hand ler buf fer to ken stat dir path file cache "
    "lock queue work er sched ule time out ret ry auth sess ion row col umn in dex map red "
    "uce flat ten json yaml http sock et pool conn ect read writ log trace span proc ess "
    "sig nal"
)
SYLLABLES = _SYLLABLES.split()
_ENGLISH = (
    "the of and to in is that it for on was with as be this by not are from or have an but "
    "which one all were when we there can more if no out so what up its about into than "
    "them only other new some could time these two may then first any like now my such make "
    "over did most after also made many before must through back years where much your way "
    "well down should because each just those people how too little state good very great"
)
ENGLISH = _ENGLISH.split()
ERRORS = ("KeyError", "ValueError", "TypeError", "TimeoutError", "AssertionError", "OSError")


@dataclass
class World:
    """The generated items and what the queries ask about them."""

    rng: random.Random
    identifiers: list[str]
    weights: list[float]
    files: list[list[str]]  # per project
    sessions: list[tuple[str, str, list[Item]]] = field(default_factory=list)

    def ident(self) -> str:
        return self.rng.choices(self.identifiers, cum_weights=self.weights)[0]

    def code(self, lines: int) -> str:
        out = []
        for _ in range(lines):
            a, b, c = self.ident(), self.ident(), self.ident()
            shape = self.rng.random()
            if shape < 0.3:
                out.append(f"def {a}({b}, {c}):")
            elif shape < 0.7:
                out.append(f"    {a} = {b}.{c}({self.ident()})")
            else:
                out.append(f"    return {a}({b}) if {c} else None  # {self.prose(4)}")
        return "\n".join(out)

    def prose(self, n: int) -> str:
        words = self.rng.choices(ENGLISH, k=n)
        for i in range(0, n, 7):
            words[i] = self.ident()
        return " ".join(words)


def world(seed: int = 7, count: int = 20_000) -> World:
    rng = random.Random(seed)
    names: set[str] = set()
    while len(names) < count:
        parts = rng.sample(SYLLABLES, rng.choice((2, 2, 3)))
        names.add("_".join(parts) if rng.random() < 0.6 else parts[0] + "".join(parts[1:]))
    identifiers = sorted(names)
    rng.shuffle(identifiers)
    weights, total = [], 0.0
    for rank in range(len(identifiers)):
        total += 1.0 / (rank + 1)
        weights.append(total)
    made = World(rng, identifiers, weights, [])
    for project in range(PROJECTS):
        root = f"/home/dev/proj{project}"
        made.files.append(
            [f"{root}/src/{made.ident()}/{made.ident()}.py" for _ in range(300)]
            + [f"{root}/tests/test_{made.ident()}.py" for _ in range(60)]
        )
    return made


def item(made: World, session: int, n: int, files: list[str]) -> Item:
    """One archived item: a tool call with its result, or a thinking block."""
    rng = made.rng
    item_id = f"toolu_{session:05d}_{n:04d}_{secrets.token_hex(4)}"
    pick, path = rng.random(), rng.choice(files)
    big = rng.random() < 0.02
    if pick < 0.35:
        name, args, out = (
            "Read",
            {"file_path": path},
            made.code(400 if big else rng.randint(20, 80)),
        )
    elif pick < 0.6:
        test = rng.choice([f for f in files if "/tests/" in f])
        command = rng.choice(
            [f"pytest {test} -q", f"git diff {path}", f"grep -rn {made.ident()} src", "ls src"]
        )
        failed = rng.random() < 0.3
        log = "\n".join(f"{made.prose(12)}" for _ in range(300 if big else rng.randint(5, 30)))
        if failed:
            log += f"\n{rng.choice(ERRORS)}: {made.ident()}\n1 failed, {rng.randint(1, 90)} passed"
        name, args, out = "Bash", {"command": command}, log
    elif pick < 0.75:
        args = {"file_path": path, "old_string": made.code(3), "new_string": made.code(4)}
        name, out = "Edit", f"The file {path} has been updated."
    elif pick < 0.85:
        hits = "\n".join(
            f"{rng.choice(files)}:{rng.randint(1, 400)}: {made.code(1)}" for _ in range(8)
        )
        name, args, out = "Grep", {"pattern": made.ident(), "path": path.rsplit("/", 2)[0]}, hits
    elif pick < 0.9:
        name, args, out = "Write", {"file_path": path, "content": made.code(30)}, "File created"
    else:
        call: dict[str, Any] = {
            "type": "thinking",
            "thinking": made.prose(rng.randint(30, 120)),
            "signature": "s",
        }
        return Item(kind="thinking", id=item_id, tool="thinking", call=call, result=None, message=n)
    call = {"type": "tool_use", "id": item_id, "name": name, "input": args}
    result = {"type": "tool_result", "tool_use_id": item_id, "content": out}
    return Item(kind="tool", id=item_id, tool=name, call=call, result=result, message=n)


def generate(made: World, total: int) -> None:
    for session in range(max(total // SESSION_SIZE, 1)):
        project = session % PROJECTS
        items = [item(made, session, n, made.files[project]) for n in range(SESSION_SIZE)]
        made.sessions.append((f"session:bench-{session:05d}", f"/home/dev/proj{project}", items))


# ----------------------------------------------------------------------------------- ingest


def plain_put(driver: Driver, session: str, items: list[Item]) -> None:
    """What ``put`` wrote before the search: the compressed payloads and the item rows."""
    with driver.tx() as cur:
        for entry in items:
            call = payload(entry.call or {})
            result = payload(entry.result) if entry.result is not None else None
            for data in (call, result):
                if data is not None:
                    cur.execute(
                        "INSERT INTO archive_blobs (sha256, codec, size, data) VALUES"
                        " (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                        (address(data), CODEC, len(data), compress(data)),
                    )
            cur.execute(
                "INSERT INTO archive_items (session, item_id, kind, tool, preview, size,"
                " call_sha256, result_sha256, position, source) VALUES"
                " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (
                    session,
                    entry.id,
                    entry.kind,
                    entry.tool,
                    "",
                    len(call),
                    address(call),
                    address(result) if result is not None else None,
                    entry.message,
                    "bench",
                ),
            )


def batches(made: World) -> Iterator[tuple[str, str, list[Item]]]:
    for session, project, items in made.sessions:
        for start in range(0, len(items), BATCH):
            yield session, project, items[start : start + BATCH]


def ingest(made: World, puts: list[Callable[[str, str, list[Item]], None]]) -> list[list[float]]:
    """Seconds per batch, in order, of each of ``puts``: batch by batch, one after the other,
    so that whatever else the machine does weighs on each alike."""
    times: list[list[float]] = [[] for _ in puts]
    for session, project, items in batches(made):
        for put, spent in zip(puts, times, strict=True):
            start = time.perf_counter()
            put(session, project, items)
            spent.append(time.perf_counter() - start)
    return times


# ---------------------------------------------------------------------------------- queries


Question = tuple[Callable[..., object], Caller, dict[str, str]]


def questions(made: World) -> dict[str, list[Question]]:
    """Per kind of query, `SAMPLES` (function, caller, arguments) to time on an open archive."""
    rng = random.Random(11)
    asked: dict[str, list[Question]] = {}
    for _ in range(SAMPLES):
        session, project, items = rng.choice(made.sessions)
        me = Caller(session, project)
        target = rng.choice([i for i in items if i.kind == "tool"])
        args = (target.call or {}).get("input", {})
        path = str(args.get("file_path") or args.get("path") or "src")
        held = [w for w in str((target.result or {}).get("content", "")).split() if w.isalnum()]
        word = rng.choice(held or [target.tool])
        tail = "/".join(path.split("/")[-2:])
        table: dict[str, tuple[Callable[..., object], dict[str, str]]] = {
            "recall by id, session": (recall_item, {"item_id": target.id}),
            "word, session": (search_items, {"query": word}),
            "two words, session": (search_items, {"query": f"{word} {target.tool}"}),
            "path, session": (search_items, {"path": tail}),
            "kind edit, session": (search_items, {"kind": "edit"}),
            "word, project": (search_items, {"query": word, "scope": "project"}),
            "word, all": (search_items, {"query": word, "scope": "all"}),
            "common word, all": (search_items, {"query": "the", "scope": "all"}),
            "path, all": (search_items, {"path": tail, "scope": "all"}),
            "path + kind, project": (
                search_items,
                {"path": tail, "kind": "read", "scope": "project"},
            ),
        }
        for kind, (function, arguments) in table.items():
            asked.setdefault(kind, []).append((function, me, arguments))
    return asked


def timed(archive: Any, asked: dict[str, list[Question]]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for kind, calls in asked.items():
        for function, me, arguments in calls:
            start = time.perf_counter()
            function(archive, me, **arguments)
            out.setdefault(kind, []).append((time.perf_counter() - start) * 1000)
    return out


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(share * len(ordered)), len(ordered) - 1)]


# ------------------------------------------------------------------------------------ runs


@contextlib.contextmanager
def urls(backend: str, pg: str | None) -> Iterator[tuple[str, str]]:
    """(URL for the archive, URL for the plain insert), empty and separate."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory(prefix="ipse-bench-recall-") as folder:
            yield f"sqlite:///{folder}/search.db", f"sqlite:///{folder}/plain.db"
        return
    import psycopg

    base = pg or os.environ.get("IPSE_TEST_DATABASE_URL") or ""
    if not base:
        raise SystemExit("PostgreSQL: give --pg URL (or set IPSE_TEST_DATABASE_URL)")
    names = [f"ipse_bench_{secrets.token_hex(4)}" for _ in range(2)]
    with psycopg.connect(base, autocommit=True) as conn:
        for name in names:
            conn.execute(f'CREATE SCHEMA "{name}"')
    sep = "&" if "?" in base else "?"
    try:
        yield tuple(f"{base}{sep}options=-csearch_path%3D{n}" for n in names)  # type: ignore[misc]
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            for name in names:
                conn.execute(f'DROP SCHEMA "{name}" CASCADE')


def plain_driver(url: str) -> Driver:
    ensure_registered()
    open_backend(url, upto={"archive": 2}).close()
    if url.startswith("sqlite:"):
        return SqliteDriver(Path(url[len("sqlite:///") :]))
    return PostgresDriver(url)


def run(backend: str, made: World, pg: str | None) -> dict[str, float]:
    with urls(backend, pg) as (search_url, plain_url):
        driver = plain_driver(plain_url)
        archive = open_archive(search_url)
        projects: set[str] = set()

        def put(session: str, project: str, items: list[Item]) -> None:
            archive.put(session, items, "bench")
            if session not in projects:
                archive.add_project(session, project)
                projects.add(session)

        plain, indexed = ingest(made, [lambda s, p, items: plain_put(driver, s, items), put])
        driver.close()
        latencies = timed(archive, questions(made))
        archive.close()
    count = sum(len(items) for _, _, items in made.sessions)
    tenth = max(len(indexed) // 10, 1)
    result = {
        "plain_ms_per_item": sum(plain) / count * 1000,
        "indexed_ms_per_item": sum(indexed) / count * 1000,
        "linear": (sum(indexed[-tenth:]) / max(sum(indexed[:tenth]), 1e-9)),
        "plain_linear": (sum(plain[-tenth:]) / max(sum(plain[:tenth]), 1e-9)),
    }
    print(f"\n{backend}: {count:,} items")
    print(
        f"  ingest: {result['indexed_ms_per_item']:.3f} ms/item indexed, "
        f"{result['plain_ms_per_item']:.3f} ms/item plain insert: "
        f"ratio {result['indexed_ms_per_item'] / result['plain_ms_per_item']:.2f}x"
    )
    print(
        f"  last tenth / first tenth of the ingest, per item: {result['linear']:.2f}"
        f" (plain insert {result['plain_linear']:.2f}; the batches of both alternate)"
    )
    print(f"  {'query':28} {'p50 ms':>8} {'p95 ms':>8}")
    every: list[float] = []
    for kind, values in latencies.items():
        every += values
        print(f"  {kind:28} {percentile(values, 0.5):8.1f} {percentile(values, 0.95):8.1f}")
    result["p50"], result["p95"] = percentile(every, 0.5), percentile(every, 0.95)
    print(f"  {'all queries':28} {result['p50']:8.1f} {result['p95']:8.1f}")
    return result


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # drop the scratch schemas
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--pg", help="PostgreSQL URL (default: IPSE_TEST_DATABASE_URL)")
    options = parser.parse_args()
    started = time.perf_counter()
    made = world()
    generate(made, options.items)
    print(f"generated {options.items:,} items in {time.perf_counter() - started:.0f} s")
    backends = ("sqlite", "postgres") if options.backend == "both" else (options.backend,)
    results = {b: run(b, made, options.pg) for b in backends}
    print("\nsummary: ingest ratio (indexed / plain), linearity, query p50 / p95 ms")
    for backend, r in results.items():
        print(
            f"  {backend:9} {r['indexed_ms_per_item'] / r['plain_ms_per_item']:5.2f}x"
            f"  {r['linear']:5.2f}  {r['p50']:6.1f} / {r['p95']:6.1f}"
        )


if __name__ == "__main__":
    main()
