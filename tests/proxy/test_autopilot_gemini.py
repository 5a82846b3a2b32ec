"""The real Gemini CLI in a long session compresses its own history (a ``<state_snapshot>`` in
place of it) once the last reply's ``promptTokenCount`` reaches ``model.compressionThreshold``
of the model's window: measured here with Gemini CLI 0.61.0, ``gemini-2.5-flash`` (a window of
1,048,576) and a threshold of 0.05 (52,428 tokens), in turn 3.

There is no test of the autopilot preventing it: Gemini CLI speaks only the Gemini API
(``generateContent`` / ``streamGenerateContent`` at ``GOOGLE_GEMINI_BASE_URL``), and ipse's proxy
serves the Anthropic Messages and OpenAI APIs, so no request of Gemini CLI's can pass through
it. What can be proved offline is that the compression happens, where, and what it sends: a
``generateContent`` (not streamed, no tools) whose system instruction asks for a
``<state_snapshot>``, then a second one that asks the model to check its snapshot; the next
request starts from the snapshot.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.clients import gemini_binary
from tests.support.gemini_session import (
    SNAPSHOT,
    GeminiSession,
    gemini_model,
    is_compression_request,
)
from tests.support.gemini_upstream import gemini_upstream
from tests.support.long_session import said, texts

THRESHOLD = 0.05
COMPACTED_BY = 6  # turns


def test_gemini_cli_compresses_on_its_own(tmp_path: Path) -> None:
    gemini = gemini_binary()
    project = tmp_path / "project"
    project.mkdir()
    with gemini_upstream(gemini_model(project)) as upstream:
        session = GeminiSession.create(gemini, tmp_path, upstream.url, THRESHOLD)
        compressed: list[dict[str, Any]] = []
        while not compressed and session.turns_run < COMPACTED_BY:
            done = session.turn()
            assert done.returncode == 0, done.stderr[-2000:]
            assert said(session.turns_run)[2] in done.stdout
            compressed = [b for b in upstream.generate_requests() if is_compression_request(b)]
    assert compressed, f"no compression request in {session.turns_run} turns"
    assert all(not b.get("tools") for b in compressed)
    main = [b for b in upstream.generate_requests() if b.get("tools")]
    before = [b for b in main if SNAPSHOT not in "".join(texts(b.get("contents")))]
    after = main[len(before) :]
    assert before and after, "no request started from the snapshot"
    # the history the compression replaced is gone from the next request
    assert len(after[0]["contents"]) < len(before[-1]["contents"])
    assert said(1)[0] not in "".join(texts(after[0]["contents"]))
