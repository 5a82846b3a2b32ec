"""Two proxies on one PostgreSQL store agree: the conversation's anchor and every request count
land in the same row, each hands the same body off to the same bytes, the handoff is counted once
whichever proxy made it, and a request sent again to the other proxy is counted once."""

from __future__ import annotations

from typing import Any

import anthropic

from ipse.store import open_conversations
from tests.proxy.conftest import ProxyFactory
from tests.support.anthropic_upstream import anthropic_upstream

HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "fix it"},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_a", "name": "Bash", "input": {"c": "make"}}],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_a", "content": "error " * 100}],
    },
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "saving"},
            {
                "type": "tool_use",
                "id": "toolu_cp",
                "name": "micro_handoff",
                "input": {"notes": "n"},
            },
        ],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_cp", "content": "ok"}],
    },
]


def test_two_proxies_share_a_postgres_store(proxy_factory: ProxyFactory, pg_url: str) -> None:
    with (
        anthropic_upstream(["one"]) as upstream,
        proxy_factory(upstream.url, store=pg_url) as first,
        proxy_factory(upstream.url, store=pg_url) as second,
    ):
        headers = {"x-claude-code-session-id": "shared-session"}
        # three requests of the conversation, then the last one sent again to the other proxy
        for proxy, size in ((first, 5), (second, 6), (first, 7), (second, 7)):
            client: Any = anthropic.Anthropic(base_url=proxy.url, api_key="k", max_retries=0)
            client.messages.create(
                model="m", max_tokens=size, messages=HISTORY, extra_headers=headers
            )
        first.settle()
        second.settle()
    messages = [r["body"]["messages"] for r in upstream.received]
    assert messages[0] == messages[1] == messages[2] == messages[3]  # the same rewrite each time
    raws = [r["raw"] for r in upstream.received]
    assert raws[2] == raws[3]
    store = open_conversations(pg_url)
    try:
        state = store.get("session:shared-session")
    finally:
        store.close()
    assert state is not None and state.requests == 3 and state.handoffs == 1
    assert state.anchor == "toolu_cp" and state.removed_calls == 1
