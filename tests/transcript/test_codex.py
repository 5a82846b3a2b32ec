"""Codex rollouts read through the Responses codec: the items come back as they were written."""

from __future__ import annotations

from pathlib import Path

import orjson

from ipse.transcript import load, write


def test_a_rollout_writes_back_its_items_since_the_last_compaction(shared_data: Path) -> None:
    for path in sorted((shared_data / "codex").glob("*.jsonl")):
        records = [orjson.loads(line) for line in path.read_bytes().splitlines()]
        items: list[object] = []
        for record in records:
            if record["type"] == "compacted":
                items = list(record["payload"]["replacement_history"])
            elif record["type"] == "response_item":
                items.append(record["payload"])
        conversation = load(path).current()
        assert conversation.dialect == "openai-responses"
        body = write(conversation)
        assert orjson.dumps(body["input"]) == orjson.dumps(items)
        meta = next(r for r in records if r["type"] == "session_meta")["payload"]
        assert body["instructions"] == meta["base_instructions"]["text"]
