"""What Claude Code's proxy hooks cost on each prompt, with the proxy running, in the same run.

``ipse install --agent claude-code --proxy`` adds a UserPromptSubmit hook that makes sure the
proxy answers before every prompt (and refuses the prompt, saying why, when it cannot start).
This measures its command as the shell runs it (a bare interpreter asking the proxy's health
address) against two references measured beside it: a bare ``python -S -c pass`` (the floor)
and ``ipse proxy start`` (what the hook would cost if it ran ipse itself). Starts a proxy on a
free port in a temporary IPSE_HOME and stops it after. Median of ``--runs`` each, interleaved;
prints wall milliseconds, child CPU milliseconds and ratios against the floor.

    python bench/prompt_hook.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from ipse.agents.claude_code import prompt_hook, proxy_hook


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _run(command: str, env: dict[str, str]) -> tuple[float, float]:
    """(wall s, child CPU s) of one shell run of ``command``; it must exit 0."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(["sh", "-c", command], env=env, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    options = parser.parse_args()
    port = _free_port()
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "IPSE_HOME": home}
        python = shlex.quote(sys.executable)
        start = proxy_hook(port)["hooks"][0]["command"]
        commands = {
            "bare interpreter (floor)": f"{python} -S -c pass",
            "UserPromptSubmit hook": prompt_hook(port)["hooks"][0]["command"],
            "ipse proxy start (running)": start,
        }
        subprocess.run(["sh", "-c", start], env=env, check=True)  # the proxy answers from here
        try:
            probe = commands["UserPromptSubmit hook"].split(" || ")[0]
            subprocess.run(["sh", "-c", probe], env=env, check=True)  # measured: the fast path
            samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
            for _ in range(options.runs):
                for name, command in commands.items():
                    samples[name].append(_run(command, env))
        finally:
            stop = [sys.executable, "-m", "ipse", "proxy", "stop", "--port", str(port)]
            subprocess.run(stop, env=env, capture_output=True)
    floor = statistics.median(w for w, _ in samples["bare interpreter (floor)"])
    floor_cpu = statistics.median(c for _, c in samples["bare interpreter (floor)"])
    for name, values in samples.items():
        wall = statistics.median(w for w, _ in values)
        cpu = statistics.median(c for _, c in values)
        print(
            f"{name:28} wall {wall * 1000:7.1f} ms ({wall / floor:4.1f}x)   "
            f"cpu {cpu * 1000:7.1f} ms ({cpu / floor_cpu:4.1f}x)"
        )


if __name__ == "__main__":
    main()
