"""Anthropic Python SDK: the micro-handoff as client middleware (``ipse[anthropic]``).

`HandoffMiddleware` is an ``anthropic.Middleware``: given to the client
(``Anthropic(middleware=[HandoffMiddleware()])``, ``AsyncAnthropic(...)`` or
``client.with_middleware(...)``), it sees every request body the SDK is about to send and hands
the ones for ``/v1/messages`` and ``/v1/messages/count_tokens`` off exactly as the proxy does,
with the same library call (`ipse.handoff.wire.rewrite_request`): the newest call of the checkpoint
tool is the cut, the rewrite is a pure function of the history (byte-stable from one request to
the next, so the prompt cache keeps the prefix), the thinking of the kept turns goes on models
that bind thinking to its prefix, and what was removed goes to the archive. ``messages.create``
and ``messages.stream`` both go through it; a body the handoff cannot make valid is sent as it
is (and logged). The middleware runs inside the SDK's retry loop, so a retry is rewritten again
(from the rewrite's cache).

The middleware changes what is sent, not the caller's own list of messages, which would keep
growing with the tool traffic the model no longer sees. `keep_handed_off` rewrites that list in
place, the same way, so the caller's history stays short and its next request is already in the
handed-off form.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ipse import _notes
from ipse.errors import MissingExtra

try:
    import pydantic
    from anthropic import Middleware
    from anthropic._middleware import AsyncCallNext, CallNext
    from anthropic._request import APIRequest
    from anthropic._response import APIResponse, AsyncAPIResponse
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise MissingExtra("anthropic", "anthropic") from exc

from ipse.archive._shared import ArchiveSink, LazyArchive
from ipse.handoff._shared import (
    CHECKPOINT_TOOLS,
    DEFAULT_MAX_TOKENS,
    StripOptions,
    conversation_key,
)
from ipse.handoff.wire import Rewrite, rewrite_request

log = _notes.logger(__name__)

_PATHS = ("/v1/messages", "/v1/messages/count_tokens")


def _archive(archive: ArchiveSink | bool | None) -> ArchiveSink | None:
    if archive is True:
        return LazyArchive()
    return archive or None


def _headers(request: APIRequest) -> dict[str, str]:
    """The request's headers that have a value (the SDK marks omitted ones with a sentinel)."""
    return {k: v for k, v in (request.headers or {}).items() if isinstance(v, str)}


class HandoffMiddleware(Middleware):
    """Hands each Messages request off at its newest checkpoint call (see the module).

    ``archive``: True (the default) archives what was removed in the default store
    (``IPSE_HOME`` or ``IPSE_DATABASE_URL``, opened on the first removal), a sink archives
    there, None or False archives nothing; ``session`` names the archive session (by default
    each conversation's own key, as the proxy keys it: `ipse.handoff.wire.conversation_key`).
    ``tool_names`` are the checkpoint tool's names (``mcp__<server>__<name>`` is recognised
    too). ``last`` is the outcome for the most recent request that named a history."""

    def __init__(
        self,
        *,
        archive: ArchiveSink | bool | None = True,
        session: str | None = None,
        tool_names: Sequence[str] = CHECKPOINT_TOOLS,
        strip: StripOptions | None = None,
    ) -> None:
        self.archive = _archive(archive)
        self.session = session
        self.tool_names = tuple(tool_names)
        self.strip = strip
        self.last: Rewrite | None = None

    def rewrite(self, request: APIRequest) -> APIRequest:
        """The request to send: ``request`` itself, or a copy with the handed-off body."""
        if request.method.lower() != "post" or request.url.split("?")[0] not in _PATHS:
            return request
        body = request.json
        if not isinstance(body, Mapping):
            return request
        done = rewrite_request(
            body,
            "anthropic",
            tool_names=self.tool_names,
            archive=self.archive,
            session=self.session or conversation_key(_headers(request), body, "anthropic"),
            source="anthropic-sdk",
            strip_options=self.strip,
        )
        self.last = done
        if done.body is None:
            if done.invalid:
                log.warning("ipse: request sent as it is: %s", done.reason)
            return request
        return request.copy(body=done.body)

    def handle(self, request: APIRequest, call_next: CallNext) -> APIResponse[Any]:
        return call_next(self.rewrite(request))

    async def handle_async(
        self, request: APIRequest, call_next: AsyncCallNext
    ) -> AsyncAPIResponse[Any]:
        return await call_next(self.rewrite(request))


def plain(value: Any) -> Any:
    """A value of message params as the JSON the SDK sends for it (SDK models dumped as the SDK
    dumps them in a request body: fields set, API names, JSON mode)."""
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump(
            exclude_unset=True,
            mode="json",
            by_alias=True,
            exclude=getattr(value, "__api_exclude__", None),
        )
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def keep_handed_off(
    messages: list[Any],
    *,
    model: str | None = None,
    archive: ArchiveSink | bool | None = None,
    session: str | None = None,
    tool_names: Sequence[str] = CHECKPOINT_TOOLS,
    strip: StripOptions | None = None,
) -> Rewrite:
    """Rewrite a conversation's ``messages`` list in place into its handed-off form.

    Call it after appending a checkpoint's tool result (calling it on every turn is cheap and
    changes nothing until a checkpoint). ``model`` decides the thinking rule (models that bind
    thinking to its prefix lose the thinking of the kept turns). Messages are left alone when
    there is no checkpoint or the handoff cannot make them valid (``reason`` says why). Archives
    nothing unless ``archive`` is given (the middleware, when it is used too, already did)."""
    body = {
        "model": model or "",
        "max_tokens": DEFAULT_MAX_TOKENS,
        "messages": [plain(m) for m in messages],
    }
    done = rewrite_request(
        body,
        "anthropic",
        tool_names=tuple(tool_names),
        archive=_archive(archive),
        session=session or conversation_key({}, body, "anthropic"),
        source="anthropic-sdk",
        strip_options=strip,
    )
    if done.body is not None:
        messages[:] = done.body["messages"]
    return done


__all__ = ["HandoffMiddleware", "keep_handed_off"]
