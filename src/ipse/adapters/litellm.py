"""LiteLLM gateway: the micro-handoff as a proxy hook (``ipse[litellm]``).

`IpseHandoff` is a LiteLLM ``CustomLogger``: listed in the gateway's own ``config.yaml``
(``litellm_settings: callbacks: ipse.adapters.litellm.handoff``, or a module of yours that makes
an instance with other settings), its ``async_pre_call_hook`` hands each request off exactly as
``ipse proxy`` does, with the same library call (`ipse.handoff.wire.rewrite_request`): on the OpenAI
chat route (``/v1/chat/completions``) and the Anthropic messages route (``/v1/messages``,
``count_tokens`` aside) the newest call of the checkpoint tool (``micro_handoff``, or
``mcp__<server>__micro_handoff``) is the cut, the tool traffic before it goes, every authored
word stays, and the rewritten prefix is a pure function of the history, byte-stable from one
request to the next. Only ``messages`` (and ``max_tokens`` where the Messages API needs one) is
replaced in LiteLLM's request; what LiteLLM added to it stays as it was. A body the handoff
cannot make valid goes on as it came (and is logged).

``async_log_success_event`` (and the failure event) keep the bookkeeping the proxy keeps, on one
thread off the gateway's event loop, in completion order: the conversation store (anchor and
counters, shared with ``ipse proxy`` and ``ipse conversations``), the archive of what a handoff
removed, the prefix cache model's prediction next to the usage the provider reported (a log
line on the ``ipse.litellm`` logger, JSON), and, when asked, a record file in the HTTP-log
format ``ipse prefix`` and ``ipse report`` read. The store is ipse's own (``IPSE_HOME`` or
``IPSE_DATABASE_URL``, or ``store=``). No header is kept anywhere, the body keys that carry
LiteLLM's own metadata are left out of what is stored, and the credentials a request carried
(headers, body fields such as ``password`` or ``x-api-key``, LiteLLM's keys) and any a
provider's error quotes are masked in the record and the log line by the step ``ipse proxy``
masks with (`ipse._redact.RequestSecrets`).

The thinking rule for models that bind thinking to its prefix (`ipse.handoff.wire.binds_thinking`)
reads the model name the client asked for: a gateway alias that hides the Claude model's name
keeps the thinking of the kept turns.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ipse import _notes, jsonio
from ipse._handoff_events import recorded_handoff
from ipse._redact import RequestSecrets, mask_text, masked_body
from ipse.errors import MissingExtra

try:
    from litellm.integrations.custom_logger import CustomLogger
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise MissingExtra("litellm", "litellm") from exc

from ipse.handoff._shared import CHECKPOINT_TOOLS, StripOptions, conversation_key
from ipse.handoff.wire import Rewrite, rewrite_request
from ipse.store._shared import request_digest

if TYPE_CHECKING:
    from ipse.prefix._shared import LiveAnalysis

log = _notes.logger("ipse.litellm")

# LiteLLM's call types for the routes whose bodies are handed off, and their dialects.
_DIALECTS: dict[str, str] = {
    "completion": "openai-chat",
    "acompletion": "openai-chat",
    "anthropic_messages": "anthropic",
}
# What LiteLLM adds to a request, and the keys a client may use to pass credentials: never
# read as the conversation, never stored.
_NOT_THE_BODY = frozenset(
    {
        "metadata",
        "proxy_server_request",
        "secret_fields",
        "provider_specific_header",
        "user_api_key_dict",
        "standard_callback_dynamic_params",
        "api_key",
        "api_base",
        "base_url",
        "api_version",
        "extra_headers",
        "headers",
        "aws_access_key_id",
        "aws_secret_access_key",
        "vertex_credentials",
        "mock_response",
    }
)
_INLINE_REWRITE = 256 * 1024  # larger histories are rewritten on a worker thread
_PENDING_MAX = 4096  # requests waiting for their success or failure event
_ANCHORS_MAX = 4096


@dataclass
class _Sent:
    """One request between its pre-call hook and its success or failure event."""

    route: str
    dialect: str
    key: str
    client: dict[str, Any]
    sent: dict[str, Any]
    rewrite: Rewrite | None
    started: float
    secrets: RequestSecrets  # the credentials the request carried, LiteLLM's fields included


class _QueuedArchive:
    """The handoff's archive sink: puts go to the bookkeeping thread (off the request path)."""

    def __init__(self, hook: IpseHandoff) -> None:
        self._hook = hook

    def put(self, session: str, removed: Sequence[Any], source: str) -> int:
        items = tuple(removed)
        self._hook.submit(partial(self._hook.archive_put, session, items, source))
        return len(items)


def _request_body(data: Mapping[str, Any]) -> dict[str, Any]:
    """The request as the client sent it, without LiteLLM's additions and credentials."""
    return {
        k: v
        for k, v in data.items()
        if isinstance(k, str) and k not in _NOT_THE_BODY and not k.startswith("litellm_")
    }


def _headers(data: Mapping[str, Any]) -> dict[str, str]:
    """The client's request headers (for the conversation key only; never stored)."""
    request = data.get("proxy_server_request")
    headers = request.get("headers") if isinstance(request, Mapping) else None
    if not isinstance(headers, Mapping):
        return {}
    return {str(k).lower(): v for k, v in headers.items() if isinstance(v, str)}


def _route(data: Mapping[str, Any], dialect: str) -> str:
    request = data.get("proxy_server_request")
    url = request.get("url") if isinstance(request, Mapping) else None
    if isinstance(url, str) and "://" in url:
        path = "/" + url.split("://", 1)[1].partition("/")[2].split("?")[0]
        if path != "/":
            return path
    return "/v1/messages" if _provider(dialect) == "anthropic" else "/v1/chat/completions"


def _plain(value: Any) -> Any:
    """A response object as JSON values (LiteLLM's pydantic models dumped)."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        with contextlib.suppress(Exception):
            return dump(mode="json")
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return None


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def usage_of(response: Any, dialect: str = "anthropic") -> dict[str, Any] | None:
    """The usage of a LiteLLM response in the shape the client's route carries it, as the proxy
    reads it from the wire: Anthropic ``input_tokens`` (after the cache) with
    ``cache_read_input_tokens`` and ``cache_creation_input_tokens``; OpenAI chat
    ``prompt_tokens`` with ``prompt_tokens_details.cached_tokens``. LiteLLM gives every route
    a chat completion's usage whose ``prompt_tokens`` counts the cache reads and writes too (its
    Anthropic transformation adds them); they are taken out again for the Anthropic shape."""
    plain = _plain(response)
    usage = plain.get("usage") if isinstance(plain, Mapping) else None
    if not isinstance(usage, Mapping):
        return None
    read = _count(usage.get("cache_read_input_tokens"))
    write = _count(usage.get("cache_creation_input_tokens"))
    details = usage.get("prompt_tokens_details")
    cached = _count(details.get("cached_tokens")) if isinstance(details, Mapping) else 0
    if "prompt_tokens" not in usage:
        if "input_tokens" not in usage:
            return None
        prompt = _count(usage.get("input_tokens")) + read + write  # already the provider's
    else:
        prompt = _count(usage.get("prompt_tokens"))
    if _provider(dialect) == "anthropic":
        read = read or cached
        return {
            "input_tokens": max(0, prompt - read - write),
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write,
        }
    return {"prompt_tokens": prompt, "prompt_tokens_details": {"cached_tokens": cached or read}}


def _provider(dialect: str) -> str:
    """Who serves ``dialect``'s route (the codec knows: ``anthropic`` or ``openai``)."""
    from ipse.transcript._shared import codec

    return codec(dialect).provider


def _handoff(sent: _Sent, made_cut: bool | None, removed_bytes: int) -> dict[str, Any] | None:
    """What the record and the log line say of the request's handoff: whether it is the
    conversation's handoff (``made_cut``, the conversation store's answer; None: no answer, so
    the first request this process cut there) and, at the handoff only, what it saved
    (`ipse._handoff_events.recorded_handoff`, as ``ipse proxy`` writes it)."""
    rewrite = sent.rewrite
    if rewrite is None:
        return None
    event = rewrite.applied and (made_cut if made_cut is not None else not rewrite.cached)
    tokens = None
    if event and rewrite.body is not None:
        from ipse.handoff import tokens_saved
        from ipse.transcript._shared import codec

        read = codec(sent.dialect).read_body
        with contextlib.suppress(Exception):  # a count must not stop the record or the log
            tokens = tokens_saved(read(sent.client), read(rewrite.body))
    return recorded_handoff(
        rewrite.to_json(), event=event, tokens=tokens, removed_bytes=removed_bytes
    )


def _seconds(value: Any) -> float | None:
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


class IpseHandoff(CustomLogger):
    """The micro-handoff and ipse's bookkeeping inside a LiteLLM gateway (see the module).

    ``store``: the store URL for the conversations and the archive (None: ipse's default,
    ``IPSE_DATABASE_URL`` or ``IPSE_HOME``); ``archive``: whether what a handoff removed is
    archived; ``record``: a JSONL file (created 0600) to append each exchange to; ``handoff``:
    False only records; ``analyze``: whether each request gets the cache model's prediction;
    ``tool_names``: the checkpoint tool's names. ``last`` is the outcome of the newest request
    that named a checkpoint tool."""

    def __init__(
        self,
        *,
        store: str | None = None,
        archive: bool = True,
        record: str | Path | None = None,
        handoff: bool = True,
        analyze: bool = True,
        tool_names: Sequence[str] = CHECKPOINT_TOOLS,
        strip: StripOptions | None = None,
    ) -> None:
        super().__init__()
        self.store = store
        self.archive = archive
        self.record = Path(record) if record is not None else None
        self.handoff = handoff
        self.analyze = analyze
        self.tool_names = tuple(tool_names)
        self.strip = strip
        self.last: Rewrite | None = None
        self.pending = 0
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._sink = _QueuedArchive(self)
        self._waiting: OrderedDict[str, _Sent] = OrderedDict()
        self._anchors: OrderedDict[str, str] = OrderedDict()
        self._live: LiveAnalysis | None = None  # each conversation's previous request
        self._conversations: Any = None
        self._archive: Any = None
        self._recorder: Any = None

    # ------------------------------------------------------------------ the request's path

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: Any
    ) -> dict[str, Any]:
        """Hand the request off at its newest checkpoint call; LiteLLM sends what comes back."""
        dialect = _DIALECTS.get(str(call_type))
        if dialect is None or not isinstance(data, dict):
            return data
        if not isinstance(data.get("messages"), list):
            return data
        route = _route(data, dialect)
        if route.endswith("/count_tokens"):
            return data
        try:
            body = _request_body(data)
            key = conversation_key(_headers(data), body, dialect)
            rewrite = await self._rewrite(body, dialect, key) if self.handoff else None
        except Exception as exc:  # a body ipse cannot read goes on as it came
            log.warning("ipse litellm: %s: not rewritten: %s", route, mask_text(str(exc)))
            return data
        sent = body
        if rewrite is not None:
            self.last = rewrite
            if rewrite.applied:
                assert rewrite.body is not None
                sent = rewrite.body
                data["messages"] = rewrite.body["messages"]
                if "max_tokens" in rewrite.body and "max_tokens" not in data:
                    data["max_tokens"] = rewrite.body["max_tokens"]
                if rewrite.anchor is not None:
                    self._anchors[key] = rewrite.anchor
                    self._anchors.move_to_end(key)
                    while len(self._anchors) > _ANCHORS_MAX:
                        self._anchors.popitem(last=False)
            elif rewrite.invalid:
                log.warning("ipse litellm: %s: sent as it came: %s", route, rewrite.reason)
        call_id = data.get("litellm_call_id")
        if isinstance(call_id, str):
            secrets = RequestSecrets.of_request(_headers(data).items(), body=data)
            self._waiting[call_id] = _Sent(
                route, dialect, key, body, sent, rewrite, time.time(), secrets
            )
            while len(self._waiting) > _PENDING_MAX:
                self._waiting.popitem(last=False)
        return data

    async def _rewrite(self, body: dict[str, Any], dialect: str, key: str) -> Rewrite | None:
        try:
            raw = jsonio.dumps(body["messages"])
        except (TypeError, ValueError):
            return None
        if not any(name.encode() in raw for name in self.tool_names):
            return None
        call = partial(
            rewrite_request,
            body,
            dialect,
            anchor=self._anchors.get(key),
            tool_names=self.tool_names,
            archive=self._sink if self.archive else None,
            session=key,
            source="litellm",
            strip_options=self.strip,
        )
        if len(raw) <= _INLINE_REWRITE or key in self._anchors:
            return call()
        return await asyncio.to_thread(call)

    # ------------------------------------------------------------------ events

    async def async_log_success_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        sent = self._waiting.pop(str(kwargs.get("litellm_call_id")), None)
        if sent is None:
            return
        first = _seconds(kwargs.get("completion_start_time"))
        finished = _seconds(end_time) or time.time()
        await self._book(sent, 200, response_obj, first, finished, None)

    async def async_log_failure_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        sent = self._waiting.pop(str(kwargs.get("litellm_call_id")), None)
        if sent is None:
            return
        error = kwargs.get("exception")
        status = getattr(error, "status_code", None)
        # the provider's error may quote the gateway's own credentials (its upstream key, a
        # URL's ``?key=``): masked here, by the step `ipse proxy` masks its errors with
        sent.secrets = sent.secrets + RequestSecrets.of_request(body=kwargs)
        message = f"{type(error).__name__}: {error}" if error is not None else "failed"
        message = sent.secrets.text(message)
        finished = _seconds(end_time) or time.time()
        code = status if isinstance(status, int) else None
        await self._book(sent, code, None, None, finished, message)

    async def _book(
        self,
        sent: _Sent,
        status: int | None,
        response: Any,
        first: float | None,
        finished: float,
        error: str | None,
    ) -> None:
        self.submit(partial(self.book, sent, status, response, first, finished, error))

    # ------------------------------------------------------------------ bookkeeping

    def submit(self, task: Any) -> None:
        """Run ``task`` on the bookkeeping thread, after the tasks submitted before it."""
        with self._lock:
            self.pending += 1
            if self._executor is None:
                self._executor = ThreadPoolExecutor(1, thread_name_prefix="ipse-litellm-books")
            executor = self._executor

        def run() -> None:
            try:
                task()
            except Exception:  # bookkeeping never takes the gateway down
                log.exception("ipse litellm: bookkeeping failed")
            finally:
                with self._lock:
                    self.pending -= 1

        executor.submit(run)

    def archive_put(self, session: str, removed: Sequence[Any], source: str) -> None:
        if (self.store or "").startswith("memory:"):
            return  # an in-memory store keeps no archive
        if self._archive is None:
            from ipse.archive._shared import LazyArchive

            self._archive = LazyArchive(self.store)
        self._archive.put(session, removed, source)

    def conversations(self) -> Any:
        """The conversation store (opened on first use)."""
        if self._conversations is None:
            from ipse.store import open_conversations

            self._conversations = open_conversations(self.store)
        return self._conversations

    def book(
        self,
        sent: _Sent,
        status: int | None,
        response: Any,
        first: float | None,
        finished: float,
        error: str | None,
    ) -> dict[str, Any]:
        """Everything after a response: the store, the analysis, the record, the log line."""
        rewrite = sent.rewrite
        applied = rewrite is not None and rewrite.applied
        removed_bytes = 0
        if applied:
            before = len(jsonio.dumps(sent.client.get("messages")))
            removed_bytes = max(0, before - len(jsonio.dumps(sent.sent.get("messages"))))
        digest = request_digest(sent.route, jsonio.dumps(sent.client))
        state = None
        try:
            state = self.conversations().record(
                sent.key,
                anchor=rewrite.anchor if rewrite is not None and applied else None,
                handoff=applied,
                removed_calls=rewrite.removed_calls if rewrite is not None and applied else 0,
                removed_bytes=removed_bytes,
                request=digest,
            )
        except Exception as exc:
            log.warning("ipse litellm: the conversation store failed: %s", mask_text(str(exc)))
        made_cut = state.made_cut(digest) if state is not None else None
        usage = usage_of(response, sent.dialect) if response is not None else None
        analysis = self._analyze(sent, status, usage, first, finished)
        document: dict[str, Any] = {
            "gateway": "litellm",
            "path": sent.route,
            "status": status,
            "model": sent.sent.get("model"),
            "conversation": sent.key,
            "usage": usage,
            "cache": analysis,
            "handoff": _handoff(sent, made_cut, removed_bytes),
            "error": error,
            "requests_in_conversation": state.requests if state is not None else None,
        }
        if self.record is not None:
            self._write_record(sent, status, response, first, finished, document)
        log.info("%s", sent.secrets.text(jsonio.dumps(document).decode()))
        return document

    def _write_record(
        self,
        sent: _Sent,
        status: int | None,
        response: Any,
        first: float | None,
        finished: float,
        document: Mapping[str, Any],
    ) -> None:
        from ipse.fileio import private_file
        from ipse.transcript._shared import exchange_record

        # LiteLLM hands every route's response over as a chat completion: the record keeps it,
        # with the usage in the provider's shape, as the client's route would have carried it
        plain = _plain(response) if response is not None else None
        if isinstance(plain, dict) and document.get("usage") is not None:
            plain["usage"] = document["usage"]
        try:
            answer = jsonio.dumps(plain) if plain is not None else b""
        except (TypeError, ValueError):
            answer = b""
        changed = sent.sent is not sent.client
        entry = exchange_record(
            method="POST",
            url=sent.route,
            headers={},
            body=masked_body(sent.sent),
            client_body=masked_body(sent.client) if changed else None,
            status=status,
            response_headers={},
            response_body=answer,
            started=sent.started,
            first_byte=first,
            finished=finished,
            extra=document,
        )
        line = sent.secrets.bytes(jsonio.dumps(entry) + b"\n")
        if self._recorder is None:
            assert self.record is not None
            self._recorder = private_file(self.record, append=True)
        self._recorder.write(line)
        self._recorder.flush()

    def _analyze(
        self,
        sent: _Sent,
        status: int | None,
        usage: Mapping[str, Any] | None,
        first: float | None,
        finished: float,
    ) -> dict[str, Any] | None:
        """This request's cache use as the provider's cache model predicts it, given the
        conversation's previous request; the cause when reuse was lost."""
        if not self.analyze or status != 200:
            return None
        if self._live is None:  # (the cache model's modules on the first request it analyses)
            from ipse.prefix._shared import LiveAnalysis

            self._live = LiveAnalysis()
        return self._live.analyze(
            sent.key,
            sent.sent,
            _provider(sent.dialect),
            size=len(jsonio.dumps(sent.sent.get("messages"))),
            started=sent.started,
            first_byte=first or finished,
            usage=usage,
        )

    def close(self) -> None:
        """Wait for the pending bookkeeping, then close the stores and the record."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)
        for closable in (self._conversations, self._archive, self._recorder):
            if closable is not None:
                with contextlib.suppress(Exception):
                    closable.close()
        self._conversations = self._archive = self._recorder = None


# The instance ``litellm_settings: callbacks: ipse.adapters.litellm.handoff`` names: ipse's
# default store, archive on, a record file where ``IPSE_LITELLM_RECORD`` names one. Nothing is
# opened until the first request.
handoff = IpseHandoff(record=os.environ.get("IPSE_LITELLM_RECORD") or None)

__all__ = ["IpseHandoff", "handoff"]
