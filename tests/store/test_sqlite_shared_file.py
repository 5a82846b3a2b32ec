"""One SQLite file, two processes: a long-lived process that holds two of ipse's stores open on
the file (a proxy or a gateway hook: its conversations and its archive) keeps every write when
another process (a command) opens and closes the same file meanwhile.

Closing any descriptor of a file drops every POSIX lock the process holds on it, SQLite's own
included; a store that opened and closed the file itself to set its mode left the first
connection without its lock, and the other process's last close then deleted the live ``-wal``
under it, and every later write with it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ipse.store import open_conversations

HOLDER = """
import sys
from ipse.archive import open_archive
from ipse.store import open_conversations
url = sys.argv[1]
conversations = open_conversations(url)
conversations.record("first")
archive = open_archive(url)  # a second store on the same file, in the same process
print("open", flush=True)
sys.stdin.readline()
conversations.record("second")
print("recorded", flush=True)
sys.stdin.readline()
"""


def _keys(url: str) -> list[str]:
    store = open_conversations(url)
    try:
        return sorted(c.key for c in store.conversations())
    finally:
        store.close()


def test_a_write_after_another_process_closed_the_file_is_kept(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ipse.db'}"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == "open"
        assert _keys(url) == ["first"]  # this process opens and closes the file
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "recorded"
        assert _keys(url) == ["first", "second"]
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.wait(timeout=30) == 0
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(timeout=10)
    assert _keys(url) == ["first", "second"]
