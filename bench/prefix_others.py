"""Benchmark and cross-check: ``ipse prefix`` beside the other prompt-cache tools people install
for the same question (cachemiss, claude-cache-audit, kvleak), on the same session files.

A tool is used when its executable is found: on ``PATH``, or in the folder named by ``--tools``
(e.g. a scratch venv's ``bin``); ``--install VENV`` makes that venv (when it is not there) and
installs the three tools into it with pip, then uses its ``bin``. Tools not found are skipped
with a message. ``--sizes MB ...`` adds Claude Code sessions of those sizes, generated as
`bigsession` generates them (one long thread of copies of the largest shared session), timed
whatever ``--max-mb`` says. ``--src FOLDER`` runs ipse from that source tree (``python -m ipse``
with it on ``PYTHONPATH``, its bytecode compiled first: another checkout, to compare before
and after).
Each tool is pointed at one file at a time (a temporary Claude config folder holding just that
session and its ``subagents/``, as those tools read ``~/.claude/projects``), and run ``--runs``
times; the least wall time counts.

Speed (default): per file, ipse's wall time against the fastest other tool's on the same file,
as a ratio, and its peak memory against the least of theirs (targets: time at most 1.0x the
fastest's on sessions of 50 MB and more, 1.5x on small ones; memory at most 2x).

``--compare``: per file, each tool's break count and dollars lost, beside ipse's and beside what
the recorded usage says (one row per billed call, by response id, else by the call's identity
in its usage: the same input side, the output rising; a break is a call that read at least
1,000 tokens less than the previous call of its thread had cached (its read plus its write on
Anthropic, its whole prompt in 128-token steps on OpenAI), up to its own prompt's size;
dollars at the write price of the call's TTL less the read price).

``--instructions``: also the instructions of one run of ipse and of the fastest tool on each
file, counted by valgrind (callgrind): timings on a busy machine move by a third from run to
run, counts do not.

Run: ``python bench/prefix_others.py --tools /tmp/cachetools/bin [--compare] [--instructions]
[FILES...]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
TOOLS = ("cachemiss", "claude-cache-audit", "kvleak")
MIN_TOKENS = 1000


def _find(name: str, folder: Path | None) -> str | None:
    if folder is not None and (folder / name).is_file():
        return str(folder / name)
    return shutil.which(name)


def _root(session: Path, into: Path) -> Path:
    """A Claude config folder holding only ``session`` (and its sub-agents' folder)."""
    project = into / "projects" / "bench"
    project.mkdir(parents=True)
    (project / session.name).symlink_to(session.resolve())
    folder = session.with_suffix("")
    if folder.is_dir():
        (project / folder.name).symlink_to(folder.resolve())
    return into


def _commands(tool: str, exe: str, session: Path, root: Path, codex: bool) -> list[str] | None:
    if tool == "cachemiss":
        if codex:
            return None
        return [exe, "--root", str(root / "projects"), "ledger", "--since", "all", "--json"]
    if tool == "claude-cache-audit":
        if codex:
            return None
        return [exe, "--config-dir", str(root), "--all", "--json"]
    if tool == "kvleak":
        min_miss = str(MIN_TOKENS)
        return [exe, "audit", "--path", str(session), "--json", "--min-miss", min_miss]
    return [exe, "prefix", str(session), "--json"]


def _timed(command: list[str], runs: int, env: dict[str, str]) -> tuple[float, str, float, int]:
    """(least wall time, output, least processor time, least peak resident memory in KiB of
    the child): on a loaded machine the processor time says more than the wall time. One
    untimed run first (the page cache, and ipse's bytecode: see `_ipse`)."""
    _run(command, env)
    best = cpu_best = float("inf")
    rss_best = 1 << 62
    out = ""
    for _ in range(runs):
        out, wall, cpu, rss = _run(command, env)
        best = min(best, wall)
        cpu_best = min(cpu_best, cpu)
        rss_best = min(rss_best, rss)
    return best, out, cpu_best, rss_best


# A command runs as the child of this small launcher (``python -I -S``, a few MB), which times
# it and reports its resource use on the descriptor it is given. A child's peak resident
# memory as the kernel keeps it (``ru_maxrss``) includes the peak of the process it was forked
# from, taken at ``exec``: forked from this script, whose size grows with the sessions it
# generates, every tool would report at least this script's size (34 MB on a 40 KB session,
# 68 MB beside a 250 MB one), whatever it used itself.
_LAUNCH = """import os, sys, time
report = int(sys.argv[1])
os.set_inheritable(report, False)
start = time.perf_counter()
pid = os.posix_spawnp(sys.argv[2], sys.argv[2:], os.environ)
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - start
cpu = usage.ru_utime + usage.ru_stime
os.write(report, f"{wall} {cpu} {usage.ru_maxrss} {os.waitstatus_to_exitcode(status)}".encode())
"""


def _run(command: list[str], env: dict[str, str]) -> tuple[str, float, float, int]:
    """The child's stdout, wall and processor seconds, and peak resident KiB (its own)."""
    read, write = os.pipe()
    with tempfile.TemporaryFile() as err:
        child = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _LAUNCH, str(write), *command],
            stdout=subprocess.PIPE,
            stderr=err,
            env=env,
            pass_fds=(write,),
        )
        os.close(write)
        assert child.stdout is not None
        data = child.stdout.read()
        child.stdout.close()
        child.wait()
    with os.fdopen(read, "rb") as report:
        wall, cpu, rss, _ = report.read().split()
    return data.decode("utf-8", "replace"), float(wall), float(cpu), int(rss)


def _ipse(source: bool, env: dict[str, str], scratch: Path) -> tuple[list[str], dict[str, str]]:
    """How ipse is started, and its environment: as installed, by its ``ipse`` script with its
    modules' bytecode (which pip compiles when it installs a package, as it did the other
    tools'), kept in ``scratch``; with ``source``, as ``python -m ipse`` from the source tree
    under ``PYTHONDONTWRITEBYTECODE`` if set (every module compiled again at every start)."""
    script = Path(sys.executable).with_name("ipse")
    if source or not script.is_file():
        return [sys.executable, "-m", "ipse"], env
    own = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    own["PYTHONPYCACHEPREFIX"] = str(scratch)
    return [sys.executable, str(script)], own


def _instructions(command: list[str], env: dict[str, str]) -> int:
    """The instructions one run executes, counted by valgrind's callgrind: the same count for
    the same program and input whatever else the machine is doing (timings are not)."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command],
        capture_output=True,
        env=env,
        check=False,
    )
    for line in done.stderr.decode("utf-8", "replace").splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1])
    raise SystemExit(f"valgrind counted nothing for {command[0]}: is valgrind installed?")


def _rehomed(
    started: tuple[list[str], dict[str, str]], home: Path
) -> tuple[list[str], dict[str, str]]:
    """A timed command again, in a new scratch HOME holding the same session (the one it was
    timed in is gone)."""
    command, env = started
    old = env["HOME"]
    return [arg.replace(old, str(home)) for arg in command], {**env, "HOME": str(home)}


def _breaks(tool: str, out: str) -> tuple[int | None, float | None]:
    """(break count, dollars lost) as the tool's JSON gives them."""
    try:
        document = json.loads(out)
    except json.JSONDecodeError:
        return None, None
    if tool == "cachemiss":
        rebuilds = document.get("rebuilds") or []
        premium = sum(
            r.get("premium", r.get("write_cost", 0) - r.get("read_cost", 0)) for r in rebuilds
        )
        return len(rebuilds), premium
    if tool == "claude-cache-audit":
        headline = document["rebuilds"]["headline"]
        return int(headline["count"]), float(headline["premium"])
    if tool == "kvleak":
        buckets = document.get("buckets") or {}
        skip = ("cold_start", "subagent_cold_start", "compaction")
        count = sum(b["count"] for k, b in buckets.items() if k not in skip)
        usd = sum(b["penalty_usd"] for k, b in buckets.items() if k not in skip)
        return count, usd
    summary = document["summary"]
    return sum(e["requests"] for e in summary["by_cause"].values()), summary["cost_lost_usd"]


def _recorded(session: Path) -> tuple[int, float, int]:
    """(breaks, dollars, calls) by the recorded usage alone (see the module's docstring)."""
    from ipse.prefix._rules import prices, rules

    table, price_table = rules("anthropic"), prices()
    if _is_codex(session):
        return _recorded_codex(session)
    files = [session, *sorted((session.with_suffix("") / "subagents").glob("*.jsonl"))]
    breaks, usd, calls = 0, 0.0, 0
    chains: dict[Any, list[tuple[str, dict[str, Any], str | None]]] = {}
    for path in files:
        seen: set[str] = set()
        last_usage: Any = None
        records = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        parent = {r.get("uuid"): r.get("parentUuid") for r in records if r.get("isSidechain")}
        for record in records:
            if record.get("type") == "system" and record.get("subtype") == "compact_boundary":
                chains.setdefault(str(path), []).append(("", {}, None))  # (a compaction)
                continue
            if record.get("type") == "user" and not _tool_results(record):
                last_usage = None  # (a call's tool results may come between its records)
            if record.get("type") != "assistant":
                continue
            chain: Any = str(path)
            if record.get("isSidechain") and path == session:  # an inline sidechain: its root
                at = record.get("uuid")
                while parent.get(at) in parent:
                    at = parent[at]
                chain = (str(path), at)
            message = record.get("message") or {}
            usage = message.get("usage")
            if not usage or message.get("model") == "<synthetic>":
                continue
            key = message.get("id") or record.get("requestId")
            if key:
                if key in seen:
                    continue
                seen.add(key)
            elif last_usage is not None and _one_call(last_usage, usage):
                last_usage = usage
                continue  # another record of the same call
            last_usage = usage
            item = (record.get("timestamp") or "", usage, message.get("model"))
            chains.setdefault(chain, []).append(item)
    compactions = 0
    for rows in chains.values():
        # (a compaction's marker sorts by the time of the record before it: kept in place)
        for n, row in enumerate(rows):
            if not row[0] and n:
                rows[n] = (rows[n - 1][0], row[1], row[2])
        rows.sort(key=lambda r: r[0])
        previous = None
        for _, usage, model in rows:
            if not usage:  # the call after a compaction is reported apart (the front it
                previous = None  # reads is not in the file)
                compactions += 1
                continue
            calls += 1
            read = usage.get("cache_read_input_tokens") or 0
            write = usage.get("cache_creation_input_tokens") or 0
            if previous is not None:
                lost = min(previous, read + write + (usage.get("input_tokens") or 0)) - read
                if lost >= MIN_TOKENS:
                    split = usage.get("cache_creation") or {}
                    ttl = "1h" if split.get("ephemeral_1h_input_tokens") else "5m"
                    price = price_table.price(model, "anthropic")[0]
                    extra = table.write_multiplier(ttl) - table.read_multiplier(model)
                    breaks += 1
                    usd += lost * price * extra / 1e6
            previous = read + write
    return breaks, usd, calls


def _tool_results(record: dict[str, Any]) -> bool:
    content = (record.get("message") or {}).get("content")
    return (
        isinstance(content, list)
        and bool(content)
        and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


_INPUT_SIDE = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def _one_call(before: dict[str, Any], usage: dict[str, Any]) -> bool:
    """Records of one streamed call without an id: the same input side, the output rising."""
    if any(before.get(k) != usage.get(k) for k in _INPUT_SIDE):
        return False
    return bool((usage.get("output_tokens") or 0) >= (before.get("output_tokens") or 0))


def _install(venv: Path) -> Path:
    """The ``bin`` of ``venv``, made if missing, with the other tools installed by pip."""
    if not (venv / "bin" / "pip").is_file():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, *TOOLS], check=True)
    return venv / "bin"


def _generated(folder: Path, megabytes: float) -> Path:
    """A Claude Code session of ``megabytes`` MB, as `bigsession` generates it."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bigsession import generate

    return generate(folder / f"generated-{megabytes:g}mb.jsonl", megabytes)


def _is_codex(path: Path) -> bool:
    with path.open("rb") as handle:
        first = json.loads(handle.readline() or b"{}")
    return first.get("type") == "session_meta"


def _recorded_codex(session: Path) -> tuple[int, float, int]:
    from ipse.prefix._rules import prices, rules

    usages: list[dict[str, Any]] = []
    last = None
    model = None
    compacted = False
    for line in session.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        payload = record.get("payload") or {}
        if record.get("type") == "compacted":
            compacted = True  # the next call is reported apart (its history is the summary)
        if record.get("type") == "turn_context":
            model = payload.get("model") or model
        info = payload.get("info") if payload.get("type") == "token_count" else None
        if info:
            total = info["total_token_usage"].get("total_tokens")
            if total != last:
                usages.append({**info["last_token_usage"], "compacted": compacted})
                compacted = False
                last = total
    price = prices().price(model, "openai")[0]
    read = rules("openai").read_multiplier(model)
    breaks, usd = 0, 0.0
    for before, now in itertools.pairwise(usages):
        if now["compacted"]:
            continue
        cached = min(before["input_tokens"] // 128 * 128, now["input_tokens"])
        lost = cached - now.get("cached_input_tokens", 0)
        if lost >= MIN_TOKENS:
            breaks += 1
            usd += lost * price * (1 - read) / 1e6
    return breaks, usd, len(usages)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--tools", type=Path, help="a folder holding the other tools")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--compare", action="store_true", help="break counts and dollars")
    parser.add_argument("--max-mb", type=float, default=5.0, help="largest session timed")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="also count each run's instructions under valgrind (steady on a busy machine)",
    )
    parser.add_argument(
        "--source",
        action="store_true",
        help="run ipse as python -m ipse without compiled bytecode (see _ipse)",
    )
    parser.add_argument("--install", type=Path, help="a venv to install the other tools into")
    parser.add_argument("--sizes", type=float, nargs="*", default=[], help="MB of generated")
    parser.add_argument("--src", type=Path, help="run ipse from this source folder")
    args = parser.parse_args(argv)
    files = args.files or [
        *sorted((SHARED / "claude-code").glob("*.jsonl")),
        *sorted((SHARED / "codex").glob("*.jsonl")),
    ]
    generated = tempfile.TemporaryDirectory()
    big = [_generated(Path(generated.name), size) for size in args.sizes]
    files = [*files, *big]
    if args.install is not None:
        args.tools = _install(args.install)
    found = {t: _find(t, args.tools) for t in TOOLS}
    for tool, exe in found.items():
        if exe is None:
            print(f"{tool}: not installed, skipped (pip install {tool} in a scratch venv)")
    env = dict(os.environ)
    bytecode = tempfile.TemporaryDirectory()
    ipse, ipse_env = _ipse(args.source, env, Path(bytecode.name))
    if args.src is not None:  # (its bytecode compiled first, as an installed package's)
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(args.src)], check=True)
        own = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
        ipse, ipse_env = [sys.executable, "-m", "ipse"], {**own, "PYTHONPATH": str(args.src)}
    memory: list[float] = []
    ratios: list[float] = []
    cpu_ratios: list[float] = []
    counted: list[float] = []
    for session in files:
        size = session.stat().st_size / 1e6
        if size > args.max_mb and not args.compare and session not in big:
            continue
        codex = _is_codex(session)
        with tempfile.TemporaryDirectory() as scratch:
            root = _root(session, Path(scratch))
            env["HOME"] = ipse_env["HOME"] = scratch  # (no tool reads the real ~/.claude)
            results: dict[str, tuple[float, str, float, int]] = {}
            commands: dict[str, tuple[list[str], dict[str, str]]] = {}
            for tool, exe in [("ipse", "ipse"), *found.items()]:
                if exe is None:
                    continue
                command = (
                    [*ipse, *_commands("ipse", "", session, root, codex)[1:]]  # type: ignore[index]
                    if tool == "ipse"
                    else _commands(tool, exe, session, root, codex)
                )
                if command is None:
                    continue
                commands[tool] = (command, dict(ipse_env if tool == "ipse" else env))
                results[tool] = _timed(command, args.runs, commands[tool][1])
        others = {t: r[0] for t, r in results.items() if t != "ipse"}
        mine = results["ipse"]
        line = (
            f"{session.name[:40]:40} {size:5.2f} MB  ipse {mine[0]:.3f} s ({mine[2]:.3f} cpu, "
            f"{mine[3] / 1024:.0f} MB)"
        )
        if others:
            fastest = min(others, key=lambda t: others[t])
            ratio = mine[0] / others[fastest]
            cpu_ratio = mine[2] / max(results[fastest][2], 1e-3)
            ratios.append(ratio)
            cpu_ratios.append(cpu_ratio)
            least = min(r[3] for t, r in results.items() if t != "ipse")
            memory.append(mine[3] / least)
            line += (
                f"  fastest {fastest} {others[fastest]:.3f} s ({results[fastest][2]:.3f} cpu, "
                f"{results[fastest][3] / 1024:.0f} MB)"
                f"  ratio {ratio:.2f}x (cpu {cpu_ratio:.2f}x, memory {memory[-1]:.2f}x the least)"
            )
            if args.instructions:
                with tempfile.TemporaryDirectory() as scratch:
                    root = _root(session, Path(scratch))
                    mine_count, theirs = (
                        _instructions(*_rehomed(commands[t], Path(scratch)))
                        for t in ("ipse", fastest)
                    )
                counted.append(mine_count / theirs)
                line += (
                    f"  instructions {mine_count / 1e6:.0f}M / {theirs / 1e6:.0f}M"
                    f" = {mine_count / theirs:.2f}x"
                )
        print(line)
        if args.compare:
            breaks, usd, calls = _recorded(session)
            print(f"    recorded usage: {calls} calls, {breaks} breaks, ${usd:.4f}")
            for tool, (_, out, _, _) in results.items():
                count, lost = _breaks(tool, out)
                shown = "?" if lost is None else f"${lost:.4f}"
                print(f"    {tool:20} {count if count is not None else '?':>4} breaks, {shown}")
    if ratios:
        ratios.sort()
        cpu_ratios.sort()
        middle = len(ratios) // 2
        print(
            f"ratio ipse / fastest other: wall median {ratios[middle]:.2f}x, worst "
            f"{ratios[-1]:.2f}x; processor median {cpu_ratios[middle]:.2f}x, worst "
            f"{cpu_ratios[-1]:.2f}x; peak memory worst {max(memory):.2f}x the least other's"
        )
    if counted:
        counted.sort()
        print(
            f"instructions ipse / fastest other: median {counted[len(counted) // 2]:.2f}x, "
            f"worst {counted[-1]:.2f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
