"""A Claude Code session's requests keep the digests of their blocks, not the blocks: each
block is hashed once as its line is read (`ipse.prefix._segments.digest`), and the analysis
is exactly that of the same requests with their content in hand, flattened whole from it, on
every shared session and on long generated ones (every tokenizer); a replay reads a block
back from the file only where a loss's cause looks at it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ipse.prefix import analyze, read_requests
from ipse.prefix._growing import SharedHistory
from ipse.transcript._formats.claude_code_stored import StoredContent, StoredMessage
from tests.conftest import CLAUDE_CODE, EXAMPLE_SESSION, needs_shared, shared_glob
from tests.support.generated import Turn, chained_session, journaled_records, write_jsonl
from tests.support.plain import plain_requests

_SHARED = [needs_shared(p, id=p.name[:30]) for p in shared_glob(CLAUDE_CODE, "*.jsonl")]


def _generated(kind: str, folder: Path) -> Path:
    path = folder / f"{kind}.jsonl"
    if kind == "journal":
        turns = [  # (a message without a blob: resolved from the session's own records)
            Turn(f"turn {i}", tool=i % 3 == 1, ttl="1h" if i == 5 else None, blob=i % 2 == 0)
            for i in range(24)
        ]
        write_jsonl(path, journaled_records(turns, size=300))
        return path
    if kind == "compacted":  # (copies of a session that compacts, each keeping its boundary)
        if not _COMPACTING.is_file():
            pytest.skip("needs the shared data")
        return chained_session(path, 4, _COMPACTING, keep_compactions=True)
    return chained_session(path, 0.3, EXAMPLE_SESSION)


_COMPACTING = CLAUDE_CODE / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"


@pytest.fixture(params=["chained", "compacted", "journal"])
def generated(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    return _generated(request.param, tmp_path)


def _same_analysis(path: Path, tokenizer: str) -> None:
    log = read_requests(path)
    stored = [m for r in log.requests for m in _messages(r.body) if type(m) is StoredMessage]
    assert stored or path.stem == "journal"  # (a journal's messages are those it resolved)
    whole = analyze(plain_requests(log.requests), tokenizer=tokenizer, warnings=log.warnings)
    fast = analyze(log.requests, tokenizer=tokenizer, warnings=log.warnings)
    assert fast.to_json() == whole.to_json()
    assert fast.warnings == whole.warnings


def _messages(body: Any) -> list[Any]:
    return body.head(body.size) if isinstance(body, SharedHistory) else []


@pytest.mark.parametrize("path", [EXAMPLE_SESSION, *_SHARED])
@pytest.mark.parametrize("tokenizer", ["auto", "o200k"])
def test_shared_sessions_give_the_analysis_of_their_content(path: Path, tokenizer: str) -> None:
    _same_analysis(path, tokenizer)


@pytest.mark.parametrize("tokenizer", ["auto", "bytes", "o200k"])
def test_generated_sessions_give_the_analysis_of_their_content(
    generated: Path, tokenizer: str
) -> None:
    _same_analysis(generated, tokenizer)


@pytest.mark.parametrize("kind", ["chained", "compacted"])
def test_requests_hold_digests_and_read_back_only_what_a_cause_looks_at(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    generated = _generated(kind, tmp_path)
    reads: list[int] = []
    original = StoredContent.content

    def counted(self: StoredContent) -> Any:
        if self.file is not None:
            reads.append(self.line)
        return original(self)

    monkeypatch.setattr(StoredContent, "content", counted)
    log = read_requests(generated)
    assert reads == []  # the requests are made: nothing read back
    report = analyze(log.requests)
    caused = sum(row.cause is not None for row in report.rows)
    assert len(set(reads)) <= 2 * caused  # a cause compares a block of two requests
