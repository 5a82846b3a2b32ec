"""The report `ipse inspect` prints: what a session or request log is made of.

For one conversation or a thread: message counts, tool calls by name, and tokens by kind, the
system prompt and tool definitions among them (`TokenTally.add_conversation`, as ``ipse
report`` counts each request). For a Claude Code session or a Codex rollout the counts cover
the whole thread, compacted parts included (its front once), and ``after_last_compaction``
holds the same counts for what the model saw last. For an
HTTP log: one row per request (time, model, input tokens as counted here, usage as recorded,
its conversation), a row per conversation where the log holds several (a proxy's record
collects every session), and the count of the log's other exchanges (a client's ``HEAD /``,
token counting) by method and path.

`message_rows` lists the messages of what the model saw last by the index that ``ipse handoff
--at N`` counts (a cut at N hands off messages 0..N-1): role, what each holds (text by origin,
tool calls by name, results, thinking) and its tokens. Kinds and tool names only, never the
text, so the list is safe to paste into a bug report.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ipse._tokens import TokenCounter, tokenizer_label
from ipse.transcript._load import Source
from ipse.transcript._model import Conversation, Message, ToolCall
from ipse.transcript._stats import TokenTally, block_kind, counted_text, message_counts, shares

if TYPE_CHECKING:
    from ipse.transcript._formats.http_log import Exchange


def inspect_report(source: Source, counter: TokenCounter) -> dict[str, Any]:
    """The inspect report of a loaded input, as a JSON-ready dict."""
    tally = TokenTally(counter)
    report: dict[str, Any] = {"format": source.format, "path": str(source.path)}
    if source.thread is not None:
        thread = source.thread
        report["thread"] = thread.name
        if source.session is not None:
            report["threads"] = source.session.thread_names()
            if source.session.summaries:
                report["summaries"] = source.session.summaries
        report["compactions"] = thread.compactions
        if thread.skipped:
            report["records_not_messages"] = dict(thread.skipped)
        report.update(message_counts(thread.all_messages()))
        last = thread.conversation
        tally.add_front(last)  # what every request of the thread carries before its messages
        tally.add_messages(thread.all_messages())
        last_tally = tally.fresh()
        last_tally.add_conversation(last)
        report["after_last_compaction"] = {
            **message_counts(last.messages),
            "tokens": _tokens(last_tally, counter, last),
        }
        report["tokens"] = _tokens(tally, counter, last)
    elif source.exchanges is not None:
        exchanges = source.exchanges
        last = exchanges[-1].request if exchanges else Conversation(messages=())
        report.update(message_counts(last.messages))
        tally.add_conversation(last)
        report["tokens"] = _tokens(tally, counter, last)
        report["requests"] = [
            {
                "index": e.index,
                "time": e.time.isoformat() if e.time else None,
                "model": e.model,
                "input_tokens": tally.conversation_tokens(e.request),
                "usage": dict(e.usage) if e.usage is not None else None,
                "conversation": e.conversation,
            }
            for e in exchanges
        ]
        conversations = _conversations(exchanges, report["requests"])
        if conversations:
            report["conversations"] = conversations
        report["exchanges"] = len(exchanges) + sum(source.other_exchanges.values())
        report["other_exchanges"] = dict(source.other_exchanges)
    else:
        conversation = source.current()
        report.update(message_counts(conversation.messages))
        tally.add_conversation(conversation)
        report["tokens"] = _tokens(tally, counter, conversation)
    if source.warnings:
        report["warnings"] = list(source.warnings)
    return report


def _conversations(
    exchanges: Sequence[Exchange], rows: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """A row per conversation of a log that holds several (a proxy's record collects every
    session): its requests, and its last request's messages and input tokens (the counts above
    are the log's last request's, one conversation's)."""
    by: dict[str | None, dict[str, Any]] = {}
    for exchange, row in zip(exchanges, rows, strict=True):
        entry = by.setdefault(
            exchange.conversation, {"conversation": exchange.conversation, "requests": 0}
        )
        entry["requests"] += 1
        entry["last_request"] = exchange.index
        entry["messages"] = len(exchange.request.messages)
        entry["input_tokens"] = row["input_tokens"]
    return list(by.values()) if len(by) > 1 else []


def message_rows(conversation: Conversation, counter: TokenCounter) -> list[dict[str, Any]]:
    """One row per message of ``conversation``, by the index ``--at N`` counts."""
    return [
        {
            "index": index,
            "role": message.role,
            "holds": _holds(message),
            "tokens": sum(counter.count(counted_text(block)) for block in message.blocks),
        }
        for index, message in enumerate(conversation.messages)
    ]


def _holds(message: Message) -> list[str]:
    """What a message holds, in order, runs of one kind merged: ``human_text``,
    ``tool_call Bash``, ``tool_results x3``..."""
    labels: list[str] = []
    counts: list[int] = []
    for block in message.blocks:
        label = block_kind(block)
        if isinstance(block, ToolCall):
            label = f"tool_call {block.name}"
        if labels and labels[-1] == label:
            counts[-1] += 1
        else:
            labels.append(label)
            counts.append(1)
    return [label if n == 1 else f"{label} x{n}" for label, n in zip(labels, counts, strict=True)]


def _tokens(tally: TokenTally, counter: TokenCounter, conversation: Conversation) -> dict[str, Any]:
    return {
        "tokenizer": tokenizer_label(counter, conversation.model),
        "total": tally.total,
        "by_kind": dict(tally.by_kind),
        "shares": shares(tally.by_kind),
    }
