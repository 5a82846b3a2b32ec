"""canary: a real agent script that reads the files passes; one that answers from nowhere fails."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ipse.statedir import set_next
from ipse.statedir._canary import canary
from tests.statedir.conftest import RunIpse
from tests.statedir.util import as_json, wal_records

READER = """\
import re, sys
from pathlib import Path
prompt = sys.stdin.read()
folder = Path(re.search(r"according to (\\S+)/99_next.md", prompt).group(1))
print("(a) next action:", (folder / "99_next.md").read_text().strip())
off = [l[2:] for l in (folder / "10_invariants.md").read_text().splitlines() if l.startswith("- ")]
print("(b) off-limits:", "; ".join(off))
"""

GUESSER = """\
import sys
sys.stdin.read()
print("(a) next action: keep going with the current task")
print("(b) off-limits: nothing that I know of")
"""


@pytest.fixture
def agents(tmp_path: Path) -> dict[str, str]:
    reader = tmp_path / "reader_agent.py"
    reader.write_text(READER)
    guesser = tmp_path / "guesser_agent.py"
    guesser.write_text(GUESSER)
    return {"reader": f"{sys.executable} {reader}", "guesser": f"{sys.executable} {guesser}"}


def _snapshot(state: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in state.iterdir() if p.is_file() and p.name != ".wal"}


def test_an_agent_that_reads_the_files_passes(
    state: Path, agents: dict[str, str], run_ipse: RunIpse
) -> None:
    set_next(state, "Write the tokenizer for string literals")
    before, wal_before = _snapshot(state), (state / ".wal").read_bytes()
    done = run_ipse("state", "canary", "--agent", agents["reader"], "--json", cwd=state.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    result = as_json(done)
    assert result["passed"] and result["has_token"] and result["has_next"]
    assert result["token"] in result["answer"]
    assert _snapshot(state) == before  # the planted invariant is gone, byte for byte
    assert (state / ".wal").read_bytes().startswith(wal_before)
    last = wal_records(state)[-1]
    assert last["kind"] == "canary" and last["passed"] is True
    assert len(wal_records(state)) == wal_before.count(b"\n") + 1
    assert run_ipse("state", "verify", cwd=state.parent).returncode == 0


def test_an_agent_that_answers_from_nowhere_fails(
    state: Path, agents: dict[str, str], run_ipse: RunIpse
) -> None:
    set_next(state, "Write the tokenizer for string literals")
    before = _snapshot(state)
    done = run_ipse("state", "canary", "--agent", agents["guesser"], cwd=state.parent)
    assert done.returncode == 1
    assert "failed: the answer lacks the planted invariant's token and the next action" in (
        done.stdout
    )
    assert _snapshot(state) == before
    last = wal_records(state)[-1]
    assert last["kind"] == "canary" and last["passed"] is False
    assert run_ipse("state", "verify", cwd=state.parent).returncode == 0


def test_an_agent_that_knows_only_the_next_step_fails(state: Path) -> None:
    set_next(state, "Write the tokenizer")
    result = canary(state, "echo 'next: Write the tokenizer'")
    assert not result.passed and result.has_next and not result.has_token


def test_the_prompt_placeholder_and_a_failing_agent(state: Path, tmp_path: Path) -> None:
    set_next(state, "Write the tokenizer")
    result = canary(state, "printf '%s' {prompt} | grep -c '^(a) What is the current next action'")
    assert result.exit_code == 0 and result.answer.strip() == "1"
    result = canary(state, "exit 3")
    assert not result.passed and result.reason == "the agent exited with status 3"


def test_an_agent_that_hangs_times_out(state: Path) -> None:
    result = canary(state, "sleep 5", timeout=0.5)
    assert not result.passed and result.reason == "the agent timed out"
    assert wal_records(state)[-1]["kind"] == "canary"
