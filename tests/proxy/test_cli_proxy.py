"""``ipse proxy start | stop | status``: a background proxy with its pid and log files 0600 in
ipse's home; ``start`` is idempotent (a hook may run it at every session start)."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import httpx

from tests.conftest import CliRun


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ipse(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ipse", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ.copy(),
    )


def test_start_is_idempotent_and_stop_stops(_isolated_home: Path) -> None:
    port = str(_port())
    first = _ipse("proxy", "start", "--port", port, "--json")
    try:
        assert first.returncode == 0, first.stderr
        started = json.loads(first.stdout)
        assert started["started"] is True
        again = _ipse("proxy", "start", "--port", port, "--json")
        assert again.returncode == 0, again.stderr
        expected = {"running": True, "started": False, "url": started["url"]}
        assert json.loads(again.stdout) == {**expected, "pid": started["pid"]}
        for name in (f"proxy-{port}.pid", f"proxy-{port}.log"):
            assert stat.S_IMODE((_isolated_home / name).stat().st_mode) == 0o600
        health = httpx.get(f"{started['url']}/ipse/health").json()
        assert health["pid"] == started["pid"]
        status = _ipse("proxy", "status", "--port", port)
        assert status.returncode == 0 and "running" in status.stdout
    finally:
        stopped = _ipse("proxy", "stop", "--port", port)
    assert stopped.returncode == 0, stopped.stderr
    assert "stopped" in stopped.stdout
    assert not (_isolated_home / f"proxy-{port}.pid").exists()
    gone = _ipse("proxy", "status", "--port", port, "--json")
    assert gone.returncode == 1 and json.loads(gone.stdout)["running"] is False


def test_starts_at_once_agree_on_one_proxy(_isolated_home: Path) -> None:
    """Hooks start the proxy at the same moment (SessionStart, UserPromptSubmit): each start
    succeeds, one proxy serves; a start that finds the other's proxy still starting on the port
    waits for it rather than calling it a stranger."""
    port = str(_port())
    starts = [
        subprocess.Popen(
            [sys.executable, "-m", "ipse", "proxy", "start", "--port", port, "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=os.environ.copy(),
        )
        for _ in range(3)
    ]
    try:
        answers = [p.communicate(timeout=90) for p in starts]
        assert [p.returncode for p in starts] == [0, 0, 0], answers
        said = [json.loads(out) for out, _ in answers]
        assert len({d["pid"] for d in said}) == 1
        assert sum(1 for d in said if d["started"]) == 1
    finally:
        assert _ipse("proxy", "stop", "--port", port).returncode == 0


def test_stop_when_nothing_runs(cli: CliRun) -> None:
    done = cli("proxy", "stop", "--port", str(_port()))
    assert done.returncode == 0 and "not running" in done.stdout


def test_bad_upstream_is_a_usage_error(cli: CliRun) -> None:
    done = cli("proxy", "--anthropic-upstream", "ftp://x", "--port", str(_port()))
    assert done.returncode == 2 and "anthropic-upstream" in done.stderr


def test_port_in_use_is_one_line(cli: CliRun) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        done = cli("proxy", "--port", str(taken.getsockname()[1]))
    assert done.returncode == 2 and "cannot listen" in done.stderr


def test_exposed_address_warns(capsys: object) -> None:
    from io import StringIO

    from ipse.proxy import ProxyConfig
    from ipse.proxy._serve import warn_if_exposed

    out = StringIO()
    assert warn_if_exposed(ProxyConfig(host="127.0.0.1"), out) is None
    assert warn_if_exposed(ProxyConfig(host="0.0.0.0"), out) is not None
    assert "not loopback" in out.getvalue()


def test_replicas_that_keep_records_of_their_own_show_one_settings_digest(tmp_path: Path) -> None:
    """Where a replica keeps its record is not how it treats a request: the health document's
    ``settings`` is the same for replicas with records of their own; ``start`` still tells the
    record asked for from the one a running proxy keeps (``record_file``)."""
    from ipse.proxy import ProxyConfig

    first = ProxyConfig(record=tmp_path / "replica-1.jsonl")
    second = ProxyConfig(record=tmp_path / "replica-2.jsonl")
    assert first.digest() == second.digest() == ProxyConfig().digest()
    assert ProxyConfig(store="postgresql://db/ipse").digest() != first.digest()
    assert first.record_digest() != second.record_digest() and ProxyConfig().record_digest() is None


def test_status_and_start_say_the_autopilots_settings(_isolated_home: Path) -> None:
    """Where a user looks (``proxy status``, a ``start`` that finds other settings) the
    autopilot's mode and thresholds are in words; the health document keeps them apart from
    the digest replicas compare."""
    port = str(_port())
    first = _ipse("proxy", "start", "--port", port, "--autopilot", "nudge",
                  "--autopilot-soft", "30000", "--json")  # fmt: skip
    assert first.returncode == 0, first.stderr
    try:
        status = _ipse("proxy", "status", "--port", port)
        assert status.returncode == 0, status.stderr
        assert "autopilot nudge (soft 30,000 tokens, hard per model)" in status.stdout
        health = httpx.get(f"http://127.0.0.1:{port}/ipse/health").json()
        assert health["autopilot"] == {"mode": "nudge", "soft": 30000, "hard": None}
        assert isinstance(health["settings"], str)
        other = _ipse("proxy", "start", "--port", port, "--autopilot", "cut",
                      "--autopilot-hard", "90000")  # fmt: skip
        assert other.returncode == 2
        assert "autopilot nudge (soft 30,000 tokens, hard per model)" in other.stderr
        assert "autopilot cut (soft per model, hard 90,000 tokens)" in other.stderr
    finally:
        assert _ipse("proxy", "stop", "--port", port).returncode == 0


def test_start_with_other_upstreams_says_so_or_restarts(_isolated_home: Path) -> None:
    port = str(_port())
    first = _ipse(
        "proxy", "start", "--port", port, "--anthropic-upstream", "http://127.0.0.1:9", "--json"
    )
    assert first.returncode == 0, first.stderr
    pid = json.loads(first.stdout)["pid"]
    try:
        # a hook's plain start accepts the running proxy, whatever its settings
        plain = _ipse("proxy", "start", "--port", port, "--json")
        assert plain.returncode == 0 and json.loads(plain.stdout)["pid"] == pid
        same = _ipse(
            "proxy", "start", "--port", port, "--anthropic-upstream", "http://127.0.0.1:9", "--json"
        )
        assert same.returncode == 0 and json.loads(same.stdout)["started"] is False
        other = _ipse(
            "proxy", "start", "--port", port, "--anthropic-upstream", "http://127.0.0.1:10/x"
        )
        assert other.returncode == 2
        assert "other settings" in other.stderr and "--restart" in other.stderr
        assert "anthropic http://127.0.0.1:9" in other.stderr
        url = f"http://127.0.0.1:{port}"
        assert httpx.get(f"{url}/ipse/health").json()["pid"] == pid  # left alone
        restarted = _ipse(
            "proxy",
            "start",
            "--port",
            port,
            "--anthropic-upstream",
            "http://127.0.0.1:10/x",
            "--restart",
            "--json",
        )
        assert restarted.returncode == 0, restarted.stderr
        new = json.loads(restarted.stdout)
        assert new["started"] is True and new["pid"] != pid
        health = httpx.get(f"{url}/ipse/health").json()
        # only the upstream asked for: no OpenAI upstream is implied
        assert health["upstreams"] == {"anthropic": "http://127.0.0.1:10/x", "openai": None}
    finally:
        assert _ipse("proxy", "stop", "--port", port).returncode == 0
