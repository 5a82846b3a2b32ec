"""The autopilot on the proxy's request path: nudge the agent to checkpoint, or cut on its own.

Every request of a route whose body ipse understands is judged after the agent's own checkpoint
(`ipse.proxy._forward.hand_off`) by `ipse.handoff.wire.autopilot_request`, the function ``ipse
replay`` prices with: the same plan, the same cut, the same nudges, from the body alone, so every
replica and worker decides alike. What it removes is archived before the request leaves; a body
it would leave invalid, or whose archive fails, goes on as it came, with the reason logged.

Where the thresholds fall (`limits`): the model's window from the window table, and the agent
CLI's own compaction point where the request says which agent CLI sent it (`client_agent`: its
user agent or ``originator`` header) and `ipse.agents` knows its rule, read with the settings its
files and this process's environment hold (a proxy a hook starts has the agent CLI's
environment); else the window less the room for an answer.

The main path does little: the model is found in the bytes, and a body whose size cannot reach
the soft threshold (`could_act`) is never parsed for the autopilot; the limits are worked out
once per model and client.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from ipse import _notes, jsonio
from ipse._redact import redact
from ipse.handoff._shared import Limits, clear_cache, conversation_key, could_act, limits_for
from ipse.handoff.wire import AutopilotRewrite, autopilot_request
from ipse.proxy._exchange import Exchange
from ipse.proxy._store import RemovedItems

if TYPE_CHECKING:
    from ipse.proxy._app import ProxyState

_log = _notes.logger("ipse.proxy")
INLINE = 256 * 1024  # smaller bodies are planned on the event loop
_MODEL = re.compile(rb'"model"\s*:\s*"([^"\\]{1,200})"')


def client_agent(headers: Mapping[str, str]) -> str | None:
    """The agent CLI that sent a request (`ipse.agents`' table; None: not one ipse knows)."""
    from ipse.agents._shared import agent_sending

    return agent_sending(headers)


@functools.lru_cache(maxsize=256)
def limits(model: str | None, provider: str, agent: str | None) -> Limits:
    """The limits a request of ``model`` from ``agent`` is held to (see the module docstring)."""
    known = limits_for(model, provider)
    if agent is None:
        return known
    from ipse.agents._shared import compaction_point

    point = None
    for user in (False, True):
        try:
            point = compaction_point(
                agent, Path.cwd(), known.window, user=user, max_output=known.max_output
            )
        except Exception:  # a settings file ipse cannot read: the window decides
            point = None
        if point is not None:
            break
    return Limits(known.window, known.max_output, point)


def model_in(body: bytes) -> str | None:
    """The body's model, found in its bytes (a key's quotes are never escaped; a string's are)."""
    found = _MODEL.search(body)
    return found.group(1).decode("utf-8", "replace") if found else None


async def apply_autopilot(state: ProxyState, ex: Exchange, lowered: Mapping[str, str]) -> None:
    """Judge the request, and send what the autopilot makes of it (``ex.sent_body``)."""
    policy = state.config.autopilot
    bounds = _bounds(state, ex, lowered)
    parsed = _parsed(ex) if bounds is not None else None
    if bounds is None or parsed is None:
        return
    dialect = ex.dialect
    assert dialect is not None
    model = parsed.get("model")
    if isinstance(model, str) and model != model_in(ex.client_body):
        bounds = limits(model, ex.provider, client_agent(lowered))
    key = ex.key = ex.key or conversation_key(lowered, parsed, dialect)
    rewrite = ex.rewrite
    base = rewrite.body if rewrite is not None and rewrite.applied else None
    sink = RemovedItems()

    def call() -> AutopilotRewrite:
        return autopilot_request(parsed, dialect, policy, bounds, base=base, archive=sink,
                                 session=key, tool_names=state.config.tool_names)  # fmt: skip

    try:
        result = call() if len(ex.client_body) <= INLINE else await anyio.to_thread.run_sync(call)
    except Exception as exc:  # a body ipse cannot read goes on as it came
        ex.autopilot_error = f"autopilot: {redact(str(exc)) or type(exc).__name__}"
        return
    if result.applied and sink.puts and not await _archived(state, ex, sink):
        return
    _send(ex, result)


def _send(ex: Exchange, result: AutopilotRewrite) -> None:
    """Say what the autopilot made of the request, and send its body where it changed."""
    ex.autopilot = result
    if result.invalid:
        _log.warning("ipse proxy: autopilot left the request as sent: %s", result.reason)
    if result.applied:
        assert result.body is not None
        ex.sent_body = jsonio.dumps(result.body)
        if result.anchor is not None:
            ex.rewrite = None  # the autopilot's cut is newer than the agent's checkpoint


def _bounds(state: ProxyState, ex: Exchange, lowered: Mapping[str, str]) -> Limits | None:
    """The limits the request is judged by (None: the autopilot leaves it alone: it is off,
    the request is no turn of a conversation, or its bytes are too few to reach a threshold)."""
    policy = state.config.autopilot
    body = ex.client_body
    if policy.mode == "off" or not state.config.handoff or not ex.dialect or not body:
        return None  # (--no-handoff: every body goes through untouched)
    if ex.path.endswith("count_tokens"):
        return None  # a count is no turn of the conversation: it goes as it came
    bounds = limits(model_in(body), ex.provider, client_agent(lowered))
    return bounds if could_act(len(body), policy, bounds) else None


def _parsed(ex: Exchange) -> dict[str, Any] | None:
    """The request's body parsed once for every part of the proxy (None: not a JSON object)."""
    if ex.parsed is None:
        try:
            parsed = jsonio.loads(ex.client_body)
        except (jsonio.JSONDecodeError, ValueError):
            return None
        if not isinstance(parsed, dict):
            return None
        ex.parsed = parsed
    found: Any = ex.parsed
    return found if isinstance(found, dict) else None


async def _archived(state: ProxyState, ex: Exchange, sink: RemovedItems) -> bool:
    """Archive what the cut removed before anything leaves (False: the archive failed, and
    the request goes on as it came)."""
    try:
        await state.store.archive_removed(sink.puts)
    except Exception as exc:
        clear_cache()
        why = redact(str(exc)) or type(exc).__name__
        ex.autopilot_error = f"autopilot: not cut, the archive failed: {why}"
        _log.warning("ipse proxy: %s", ex.autopilot_error)
        return False
    return True


def shown(result: AutopilotRewrite | None) -> dict[str, Any] | None:
    """What the log line and the record say of the autopilot at a request (None: it did not
    look at it, or did nothing and changed nothing)."""
    if result is None or (not result.applied and result.action == "nothing" and not result.invalid):
        return None
    return result.to_json()


__all__ = ["INLINE", "apply_autopilot", "client_agent", "limits", "model_in", "shown"]
