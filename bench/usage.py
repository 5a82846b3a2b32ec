"""``ipse usage`` against ccusage on one generated history: cold, warm, memory, and totals.

Generates, into a scratch folder, a history of ``--size`` MB (1000 by default) the way the
agent CLIs lay it out: copies of every shared Claude Code session (with its sub-agents'
files) under ``CLAUDE_CONFIG_DIR/projects/<project>/`` and of the shared Codex rollouts under
``CODEX_HOME/sessions/YYYY/MM/DD/``, each copy with its own session id, response ids and
request ids and its times moved a day later than the copy before. Installs ccusage from npm
into the scratch folder (the newest release whose native linux-x64 binary is published) and
runs its binary directly.

Then, ``--runs`` times each, best wall time kept: ccusage's ``daily`` (it keeps no cache: every
run reads everything), ``ipse usage --json`` with an empty ipse home (cold: the index is
built), and again with that home (warm: nothing changed). Peak memory is the largest resident
set of the whole process tree (ipse's readers run in a process pool: the pool's processes are
summed with the parent's), sampled every 10 ms. Prints seconds, ratios to ccusage and peak MB,
then compares the totals by day and model (tokens of each kind, and cost).

    python bench/usage.py [--size 1000] [--runs 3] [--keep FOLDER]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path
from typing import Any

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
_DATE = re.compile(rb'"(20\d\d-\d\d-\d\d)T')
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _shifted(data: bytes, copy: int, old: str, new: str) -> bytes:
    """One copy of a file's bytes: its own ids, its dates ``copy`` days later."""
    data = data.replace(b'"msg_', b'"msg_%d_' % copy).replace(b'"req_', b'"req_%d_' % copy)
    data = data.replace(old.encode(), new.encode())
    cache: dict[bytes, bytes] = {}

    def move(match: re.Match[bytes]) -> bytes:
        day = match.group(1)
        out = cache.get(day)
        if out is None:
            moved = date.fromisoformat(day.decode()) + timedelta(days=copy)
            out = cache[day] = b'"' + moved.isoformat().encode() + b"T"
        return out

    return _DATE.sub(move, data)


def _session_id(copy: int, number: int) -> str:
    return f"{copy:08x}-0000-4000-8000-{number:012x}"


def generate(folder: Path, megabytes: float) -> tuple[Path, Path, int]:
    """The history (CLAUDE_CONFIG_DIR, CODEX_HOME) of at least ``megabytes`` MB; its files."""
    claude, codex = folder / "claude", folder / "codex"
    sources = sorted((SHARED / "claude-code").glob("*.jsonl"))
    rollouts = sorted((SHARED / "codex").glob("*.jsonl"))
    target, written, files, copy = int(megabytes * 1_000_000), 0, 0, 0
    while written < target:
        for number, source in enumerate(sources):
            old = source.stem
            new = _session_id(copy, number)
            project = claude / "projects" / f"-home-user-project-{copy % 25}"
            project.mkdir(parents=True, exist_ok=True)
            data = _shifted(source.read_bytes(), copy, old, new)
            (project / f"{new}.jsonl").write_bytes(data)
            written += len(data)
            files += 1
            agents = source.with_suffix("") / "subagents"
            if agents.is_dir():
                (project / new / "subagents").mkdir(parents=True, exist_ok=True)
                for agent in agents.glob("*.jsonl"):
                    data = _shifted(agent.read_bytes(), copy, old, new)
                    (project / new / "subagents" / agent.name).write_bytes(data)
                    written += len(data)
                    files += 1
        for number, source in enumerate(rollouts):
            old = _UUID.findall(source.name)[-1]
            new = _session_id(copy, 100 + number)
            data = _shifted(source.read_bytes(), copy, old, new)
            day = date(2026, 2, 23) + timedelta(days=copy)
            where = codex / "sessions" / f"{day:%Y}" / f"{day:%m}" / f"{day:%d}"
            where.mkdir(parents=True, exist_ok=True)
            (where / f"rollout-{day}T12-00-00-{new}.jsonl").write_bytes(data)
            written += len(data)
            files += 1
        copy += 1
    return claude, codex, files


def install_ccusage(folder: Path) -> Path:
    """ccusage's native linux-x64 binary, from the newest release that publishes one."""

    def versions(name: str) -> list[str]:
        done = subprocess.run(["npm", "view", name, "versions", "--json"], capture_output=True,
                              text=True, check=True, timeout=120)  # fmt: skip
        found = json.loads(done.stdout)
        return [found] if isinstance(found, str) else list(found)

    def key(version: str) -> tuple[int, ...]:
        return tuple(int(p) for p in re.findall(r"\d+", version)[:3])

    native = set(versions("@ccusage/ccusage-linux-x64"))
    newest = max((v for v in versions("ccusage") if v in native), key=key)
    subprocess.run(["npm", "install", "--no-save", "--prefix", str(folder), f"ccusage@{newest}"],
                   check=True, capture_output=True, timeout=600)  # fmt: skip
    binary = folder / "node_modules" / "@ccusage" / "ccusage-linux-x64" / "bin" / "ccusage"
    binary.chmod(0o755)
    print(f"ccusage {newest} (native linux-x64)")
    return binary


def _tree_rss(pid: int) -> int:
    """Resident kB of ``pid`` and its descendants now."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            total += int(re.search(r"VmRSS:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, AttributeError, ValueError):
            continue
    return total


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float, bytes]:
    """Wall seconds, peak MB of the process tree, stdout."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak = [0]

    def sample() -> None:
        while child.poll() is None:
            peak[0] = max(peak[0], _tree_rss(child.pid))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = child.communicate()
    elapsed = time.perf_counter() - start
    sampler.join()
    if child.returncode != 0:
        sys.exit(f"{argv[0]} failed: {err.decode(errors='replace')[-2000:]}")
    return elapsed, peak[0] / 1024, out


def best(runs: int, once: Callable[[], tuple[float, float, bytes]]) -> tuple[float, float, bytes]:
    results = [once() for _ in range(runs)]
    return min(results, key=lambda r: r[0])


def _ipse_by_day(document: dict[str, Any]) -> dict[tuple[str, str], list[float]]:
    out = {}
    for row in document["rows"]:
        for model, m in row["models"].items():
            out[(row["label"], model)] = [
                m["input_tokens"], m["cache_write_5m_tokens"] + m["cache_write_1h_tokens"],
                m["cache_read_tokens"], m["output_tokens"], m["cost_usd"]]  # fmt: skip
    return out


def _ccusage_by_day(document: dict[str, Any]) -> dict[tuple[str, str], list[float]]:
    out = {}
    for row in document["daily"]:
        for m in row["modelBreakdowns"]:
            out[(row.get("period") or row["date"], m["modelName"])] = [
                m["inputTokens"], m["cacheCreationTokens"], m["cacheReadTokens"],
                m["outputTokens"], m["cost"]]  # fmt: skip
    return out


def compare(ipse: dict[str, Any], ccusage: dict[str, Any]) -> None:
    mine, theirs = _ipse_by_day(ipse), _ccusage_by_day(ccusage)
    keys = set(mine) | set(theirs)
    same = [k for k in keys if mine.get(k, [None])[:4] == theirs.get(k, [None])[:4]]
    cost = [k for k in keys if k in mine and k in theirs
            and abs(mine[k][4] - theirs[k][4]) <= 1e-6 * max(1.0, theirs[k][4])]  # fmt: skip
    print(f"day x model rows: ipse {len(mine)}, ccusage {len(theirs)}; tokens equal in "
          f"{len(same)}/{len(keys)}, cost equal (1e-6) in {len(cost)}/{len(keys)}")  # fmt: skip
    for k in sorted(keys - set(same))[:10]:
        print(f"  differs {k}: ipse {mine.get(k)} ccusage {theirs.get(k)}")
    total = [sum(v[i] for v in mine.values()) for i in range(5)]
    their = [sum(v[i] for v in theirs.values()) for i in range(5)]
    print(f"totals ipse {total}\n       ccusage {their}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=float, default=1000.0, help="history size, MB")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="generate into (and keep) this folder")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="ipse-usage-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        started = time.perf_counter()
        claude, codex, files = generate(folder / "history", args.size)
        size = sum(f.stat().st_size for f in (folder / "history").rglob("*") if f.is_file())
        print(f"history: {files} files, {size / 1e6:,.0f} MB "
              f"(generated in {time.perf_counter() - started:.1f} s)")  # fmt: skip
        binary = install_ccusage(folder / "ccusage")
        env = {**os.environ, "HOME": str(folder / "home"), "CLAUDE_CONFIG_DIR": str(claude),
               "CODEX_HOME": str(codex), "GEMINI_CLI_HOME": str(folder / "home")}  # fmt: skip
        (folder / "home").mkdir(exist_ok=True)
        ccusage = best(args.runs, lambda: run(
            [str(binary), "daily", "--json", "--offline", "-z", "UTC"], env))  # fmt: skip
        homes = iter(range(10_000))
        ipse_argv = [sys.executable, "-m", "ipse", "usage", "--json", "--timezone", "UTC"]

        def cold() -> tuple[float, float, bytes]:
            home = folder / f"ipse-{next(homes)}"
            return run(ipse_argv, {**env, "IPSE_HOME": str(home)})

        first = best(args.runs, cold)
        warm_home = {**env, "IPSE_HOME": str(folder / "ipse-0")}
        warm = best(args.runs, lambda: run(ipse_argv, warm_home))
        print(f"{'':12}{'seconds':>9}{'x ccusage':>11}{'peak MB':>9}{'x ccusage':>11}")
        for name, (secs, mb, _) in (("ccusage", ccusage), ("ipse cold", first),
                                    ("ipse warm", warm)):  # fmt: skip
            print(f"{name:12}{secs:9.2f}{secs / ccusage[0]:11.2f}{mb:9.0f}{mb / ccusage[1]:11.2f}")
        print(f"per GB: ccusage {ccusage[0] / size * 1e9:.2f} s, ipse cold "
              f"{first[0] / size * 1e9:.2f} s, warm {warm[0] / size * 1e9:.3f} s")  # fmt: skip
        compare(json.loads(first[2]), json.loads(ccusage[2]))
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
