"""The billed calls and the handoffs in the ipse proxy's record (``ipse proxy start --record``).

Each line is one exchange (`ipse.transcript._formats.http_log`): the request as sent upstream,
the response (JSON, or server-sent events as text) and ipse's own notes (``ipse``: provider,
conversation, the handoff it applied and what that took out of the request). A call is an
exchange whose response reports usage; its identity is the response's id (``msg_...`` in the
body or the stream's ``message_start``) and the ``request-id`` header, the same pair Claude
Code writes in its session (``message.id``, ``requestId``), so a call in both is counted once.
A handoff is an exchange whose request the proxy rewrote (``ipse.handoff.applied``), with the
tokens the rewrite took out of it (``saved.tokens``); or one where the proxy's autopilot made a
cut of its own (``ipse.autopilot``, ``action`` ``cut``), with the tokens it took out: the
request's size without the cut less its size as sent (``tokens`` less ``tokens_after``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ipse import jsonio
from ipse.prefix._shared import billed_tokens
from ipse.usage._call import Call
from ipse.usage._lines import marked_lines, seconds

_MARKERS = (b'"request"',)
_MESSAGE_ID = re.compile(r'"id"\s*:\s*"(msg_[^"]+)"')


class ProxyReader:
    """Reads one proxy record's calls and handoffs from an offset on."""

    def __init__(self, path: Path, calls: list[Call], state: dict[str, Any]) -> None:
        self.path = path
        self.calls = calls
        self.handoffs: list[list[Any]] = list(state.get("handoffs") or [])
        self.skipped = int(state.get("skipped", 0))

    def state(self) -> dict[str, Any]:
        return {"handoffs": self.handoffs, "skipped": self.skipped}

    def read(self, start: int) -> int:
        from ipse.transcript._shared import usage_of

        end = [start]
        for line in marked_lines(self.path, start, _MARKERS, end):
            try:
                entry = jsonio.loads(line)
            except jsonio.JSONDecodeError:
                self.skipped += 1
                continue
            if not isinstance(entry, dict):
                continue
            response, notes = entry.get("response"), entry.get("ipse")
            notes = notes if isinstance(notes, dict) else {}
            request = entry.get("request")
            body = request.get("body") if isinstance(request, dict) else None
            model = body.get("model") if isinstance(body, dict) else None
            model = model if isinstance(model, str) else ""
            time = seconds(entry.get("ts"))
            conversation = notes.get("conversation")
            conversation = conversation if isinstance(conversation, str) else ""
            provider = "openai" if notes.get("provider") == "openai" else "anthropic"
            self._handoff(notes.get("handoff"), time, conversation, model, provider)
            self._autopilot(notes.get("autopilot"), time, conversation, model, provider)
            if not isinstance(response, dict) or time is None:
                continue
            try:
                usage = usage_of(response, str(self.path))
            except Exception:
                usage = None
            tokens = billed_tokens(usage)
            if tokens is None:
                continue
            key = _key(response)
            self.calls.append(
                Call(key, time, model, str(provider), "proxy", "proxy", conversation, "", *tokens)
            )
        return end[0]

    def _handoff(
        self, handoff: Any, time: float | None, conversation: str, model: str, provider: str
    ) -> None:
        if not isinstance(handoff, dict) or handoff.get("applied") is not True or time is None:
            return
        saved = handoff.get("saved")
        tokens = saved.get("tokens") if isinstance(saved, dict) else None
        if type(tokens) is int and tokens > 0:
            anchor = handoff.get("anchor")
            self.handoffs.append([time, conversation, model, provider, tokens, anchor])

    def _autopilot(
        self, autopilot: Any, time: float | None, conversation: str, model: str, provider: str
    ) -> None:
        """An automatic checkpoint: a cut the autopilot made at this request (the later ones
        carry it, as ``nothing``)."""
        if not isinstance(autopilot, dict) or time is None:
            return
        if autopilot.get("action") != "cut" or autopilot.get("applied") is not True:
            return
        before, after = autopilot.get("tokens"), autopilot.get("tokens_after")
        if type(before) is int and type(after) is int and before > after:
            anchor = autopilot.get("anchor")
            self.handoffs.append([time, conversation, model, provider, before - after, anchor])


def _key(response: Mapping[str, Any]) -> str:
    """The response id and the ``request-id`` header, as Claude Code writes them."""
    headers = response.get("headers")
    request_id = None
    if isinstance(headers, dict):
        for name, value in headers.items():
            if isinstance(name, str) and name.lower() == "request-id" and isinstance(value, str):
                request_id = value
    body = response.get("body")
    message_id = None
    if isinstance(body, dict):
        ident = body.get("id")
        message_id = ident if isinstance(ident, str) else None
    elif isinstance(body, str):
        found = _MESSAGE_ID.search(body[:4096])
        message_id = found.group(1) if found else None
    if message_id:
        return f"{message_id}:{request_id}" if request_id else message_id
    return f"req:{request_id}" if request_id else ""


__all__ = ["ProxyReader"]
