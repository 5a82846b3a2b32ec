"""LangChain v1 agents: the micro-handoff and the twins as agent middleware (``ipse[langchain]``).

`HandoffMiddleware` registers the checkpoint tool (`checkpoint_tool`, ``micro_handoff``) and,
before each model call, looks for the newest call of it that was answered without an error. The
first time it sees one, it converts the agent's messages to a neutral `Conversation`
(`to_conversation`), runs the library's handoff (`ipse.handoff.run`: strip, verify, archive) cut
at the end of the tool results that answered the checkpoint, and replaces the state's messages
with the result: ``RemoveMessage(id=REMOVE_ALL_MESSAGES)`` and then the handed-off list, so the
checkpointer stores the short history and later turns append to it. Messages the handoff left
alone come back as the very objects they were; a rewritten one keeps the id of the message it
came from. The checkpoint call's id is kept in the state (``ipse_handoff``), so each checkpoint
is handed off once; a history the handoff cannot make valid is left as it is (and logged).

`TwinMiddleware` keeps a twin: on a thread's first model call it renders the twin's latest
snapshot once (`ipse.twin.rehydrate`) and keeps that text in the state (``ipse_twin_prompt``),
put in front of the system prompt on every call of the thread, byte for byte, so the prompt
cache holds; after a handoff (the prefix changes then anyway) it renders it again. Its tools are
the twin's transitions (`twin_tools`), each applied with `ipse.twin.apply_turn` under the twin's
lease, which writes a snapshot when the identity changed.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any, NotRequired

from ipse import _notes, jsonio
from ipse._names import Names
from ipse.errors import InputError, IpseError, MissingExtra

try:
    from langchain.agents.middleware import (
        AgentMiddleware,
        AgentState,
        ModelRequest,
        ModelResponse,
    )
    from langchain.agents.middleware.types import PrivateStateAttr
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        ChatMessage,
        HumanMessage,
        RemoveMessage,
        SystemMessage,
        ToolMessage,
    )
    from langchain_core.tools import BaseTool, StructuredTool, ToolException
    from langgraph.config import get_config
    from langgraph.graph.message import REMOVE_ALL_MESSAGES
    from langgraph.runtime import Runtime
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise MissingExtra("langchain", "langchain") from exc

from ipse.archive._shared import ArchiveSink, LazyArchive
from ipse.handoff import Handoff, HandoffOptions, render_notes, run, tool_definition
from ipse.handoff._shared import CHECKPOINT_TOOL, StripOptions
from ipse.transcript import Conversation, Message, Other, Text, Thinking, ToolCall, ToolResult
from ipse.transcript._shared import Block, Origin
from ipse.twin import TwinConfig, anthropic_tools, apply_turn, open_store, rehydrate
from ipse.twin._shared import TwinStore

log = _notes.logger(__name__)

SEPARATOR = "\n\n"
_THINKING = Names({"thinking", "reasoning", "redacted_thinking"})
_CALL_PARTS = Names({"tool_use", "tool_call", "function_call"})  # mirrors of ``tool_calls``
_META = "langchain"  # Message.meta key: the index of the LangChain message it came from


class IpseState(AgentState[Any]):
    """The agent state with what the ipse middlewares keep per thread (private to them)."""

    ipse_handoff: NotRequired[Annotated[str | None, PrivateStateAttr]]
    ipse_twin_prompt: NotRequired[Annotated[str | None, PrivateStateAttr]]
    ipse_twin_anchor: NotRequired[Annotated[str | None, PrivateStateAttr]]


# ------------------------------------------------------------------------------------ conversion


def to_conversation(messages: Sequence[BaseMessage]) -> Conversation:
    """LangChain messages as a neutral conversation (OpenAI Chat shape, ``openai-chat``).

    Leading system messages become the system blocks; each message's ``meta`` names the index of
    the LangChain message it came from; thinking and reasoning parts become `Thinking`, the
    content parts that repeat an ``AIMessage.tool_calls`` entry are left to the `ToolCall`."""
    system: list[Text | Other] = []
    first = 0
    while first < len(messages) and isinstance(messages[first], SystemMessage):
        message = messages[first]
        system.append(
            Text(_flatten(message.content), Origin.SYSTEM, raw=_system_dict(message.content))
        )
        first += 1
    converted = tuple(_to_message(m, i) for i, m in enumerate(messages[first:], start=first))
    return Conversation(
        messages=converted,
        system=tuple(system),
        dialect="openai-chat",
        system_form="blocks" if system else "none",
        meta={"system_messages": first},
    )


def from_conversation(
    conversation: Conversation, before: Conversation, originals: Sequence[BaseMessage]
) -> list[BaseMessage]:
    """The LangChain messages of a conversation `to_conversation` made from ``originals`` (and a
    transform turned into ``conversation``): unchanged messages are the original objects."""
    same = {id(m): originals[m.meta[_META]] for m in before.messages}
    first = int(before.meta.get("system_messages", 0))
    out: list[BaseMessage] = list(originals[:first])
    for message in conversation.messages:
        kept = same.get(id(message))
        out.append(kept if kept is not None else _from_message(message, originals))
    return out


def _flatten(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "".join(
        p if isinstance(p, str) else str(p.get("text", ""))
        for p in parts
        if isinstance(p, str) or (isinstance(p, Mapping) and p.get("type") == "text")
    )


def _system_dict(content: Any) -> dict[str, Any]:
    return {"role": "system", "content": content}


def _role(message: BaseMessage) -> tuple[str, Origin]:
    if isinstance(message, HumanMessage):
        return "user", Origin.HUMAN
    if isinstance(message, AIMessage):
        return "assistant", Origin.AGENT
    if isinstance(message, SystemMessage):
        return "system", Origin.SYSTEM
    if isinstance(message, ToolMessage):
        return "tool", Origin.HARNESS
    if isinstance(message, ChatMessage):
        return message.role, Origin.HARNESS
    return message.type, Origin.HARNESS


def _to_message(message: BaseMessage, index: int) -> Message:
    role, origin = _role(message)
    meta = {_META: index}
    if isinstance(message, ToolMessage):
        blocks, form = _parts(message.content, Origin.HARNESS, frozenset())
        content: str | tuple[Block, ...] = (
            message.content if isinstance(message.content, str) else tuple(blocks)
        )
        tool_raw = {
            "role": "tool",
            "tool_call_id": message.tool_call_id,
            "content": message.content,
        }
        result = ToolResult(message.tool_call_id, content, message.status == "error", raw=tool_raw)
        return Message("tool", (result,), form, tool_raw, meta)
    calls = list(message.tool_calls) if isinstance(message, AIMessage) else []
    call_ids = frozenset(str(c.get("id")) for c in calls)
    blocks, form = _parts(message.content, origin, call_ids)
    reasoning = message.additional_kwargs.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        blocks.insert(0, Thinking(reasoning, raw={"reasoning_content": reasoning}))
    last = blocks[-1] if blocks else None
    if calls and form == "string" and isinstance(last, Text) and last.text == "":
        blocks.pop()  # an empty content beside tool calls is no text (as OpenAI reads it)
    raw_calls = [_call_dict(c) for c in calls]
    blocks.extend(
        ToolCall(str(c.get("id")), c["name"], c["args"], None, raw=r)
        for c, r in zip(calls, raw_calls, strict=True)
    )
    raw: dict[str, Any] = {"role": role, "content": message.content}
    if raw_calls:
        raw["tool_calls"] = raw_calls
    return Message(role, tuple(blocks), form, raw, meta)


def _call_dict(call: Mapping[str, Any]) -> dict[str, Any]:
    arguments = jsonio.dumps(call.get("args") or {}).decode()
    return {
        "id": call.get("id"),
        "type": "function",
        "function": {"name": call.get("name"), "arguments": arguments},
    }


def _parts(content: Any, origin: Origin, call_ids: frozenset[str]) -> tuple[list[Block], Any]:
    if isinstance(content, str):
        return [Text(content, origin)], "string"
    blocks: list[Block] = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, str):
            blocks.append(Text(part, origin))
            continue
        kind = str(part.get("type", "unknown"))
        if kind == "text" and isinstance(part.get("text"), str):
            blocks.append(Text(part["text"], origin, raw=part))
        elif kind in _THINKING:
            text = part.get("thinking") or part.get("reasoning") or ""
            blocks.append(
                Thinking(
                    str(text),
                    part.get("signature"),
                    redacted=kind == "redacted_thinking",
                    raw=part,
                )
            )
        elif kind in _CALL_PARTS and str(part.get("id", part.get("call_id"))) in call_ids:
            continue
        else:
            blocks.append(Other(kind, raw=part))
    return blocks, "blocks"


def _from_message(message: Message, originals: Sequence[BaseMessage]) -> BaseMessage:
    source = originals[message.meta[_META]]
    name = getattr(source, "name", None)
    if message.role == "tool":
        result = next(b for b in message.blocks if isinstance(b, ToolResult))
        return ToolMessage(
            content=_content(message),
            tool_call_id=result.call_id,
            status="error" if result.is_error else "success",
            id=source.id,
            name=name,
        )
    content = _content(message)
    if message.role == "assistant":
        calls = [
            {
                "name": b.name,
                "args": b.input if isinstance(b.input, dict) else {},
                "id": b.id,
                "type": "tool_call",
            }
            for b in message.blocks
            if isinstance(b, ToolCall)
        ]
        return AIMessage(content=content, tool_calls=calls, id=source.id, name=name)
    if message.role == "user":
        return HumanMessage(content=content, id=source.id, name=name)
    if message.role == "system":
        return SystemMessage(content=content, id=source.id, name=name)
    return ChatMessage(role=message.role, content=content, id=source.id, name=name)


def _content(message: Message) -> Any:
    blocks: Sequence[Block] = message.blocks
    if message.role == "tool":
        result = next(b for b in blocks if isinstance(b, ToolResult))
        if isinstance(result.content, str):
            return result.content
        blocks = result.content
    if message.content_form == "string" and all(isinstance(b, Text | ToolCall) for b in blocks):
        return SEPARATOR.join(b.text for b in blocks if isinstance(b, Text))
    parts: list[Any] = []
    for block in blocks:
        if isinstance(block, Text):
            raw = block.raw
            if raw is not None and raw.get("text") == block.text:
                parts.append(raw)
            else:
                parts.append({"type": "text", "text": block.text})
        elif isinstance(block, Other | Thinking) and block.raw is not None:
            parts.append(block.raw)
    return parts


# ---------------------------------------------------------------------------------- the handoff


def checkpoint_tool(name: str = CHECKPOINT_TOOL) -> BaseTool:
    """The checkpoint tool: the agent's handoff notes in, the rendered notes out.

    Notes that do not follow `ipse.handoff.SCHEMA` give the agent an error result naming the
    field, and are not a checkpoint."""

    def record(**notes: Any) -> str:
        try:
            return render_notes(notes)
        except InputError as exc:
            raise ToolException(str(exc)) from exc

    definition = copy.deepcopy(tool_definition("anthropic", name))  # frameworks may edit it
    return StructuredTool.from_function(
        func=record,
        name=name,
        description=definition["description"],
        args_schema=definition["input_schema"],
        handle_tool_error=True,
    )


def newest_checkpoint(
    messages: Sequence[BaseMessage], tool: str = CHECKPOINT_TOOL
) -> tuple[str, int] | None:
    """The newest checkpoint call answered without an error: its id, and the index just after
    the tool results that follow its message (where the handoff cuts). None when there is none."""
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if not isinstance(message, AIMessage):
            continue
        ids = [str(c.get("id")) for c in message.tool_calls if c.get("name") == tool]
        if not ids:
            continue
        end = i + 1
        answered = False
        while end < len(messages) and isinstance(messages[end], ToolMessage):
            result = messages[end]
            assert isinstance(result, ToolMessage)
            answered = answered or (result.tool_call_id == ids[-1] and result.status != "error")
            end += 1
        if answered:
            return ids[-1], end
    return None


def hand_off(
    messages: Sequence[BaseMessage],
    cut: int,
    *,
    session: str,
    tool: str = CHECKPOINT_TOOL,
    archive: ArchiveSink | None = None,
    strip: StripOptions | None = None,
    budget: int | None = None,
) -> tuple[list[BaseMessage], Handoff]:
    """Hand off ``messages[:cut]`` with `ipse.handoff.run`; the new message list and the run.
    ``budget``: `HandoffOptions.budget`.

    Raises what `run` raises (`CheckFailed`, `InputError`); nothing is archived then."""
    conversation = to_conversation(messages)
    first = int(conversation.meta.get("system_messages", 0))
    base = strip or StripOptions()
    options = HandoffOptions(
        at=max(cut - first, 0),
        strip=StripOptions(
            checkpoint_tool=tool,
            join_texts=base.join_texts,
            promote_thinking=base.promote_thinking,
            breadcrumbs=base.breadcrumbs,
            breadcrumb_width=base.breadcrumb_width,
        ),
        budget=budget,
    )
    done = run(conversation, options, session=session, archive=archive, source="langchain")
    return from_conversation(done.after, conversation, messages), done


def _thread_id(default: str) -> str:
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # not inside a runnable
        return default
    thread = configurable.get("thread_id")
    return str(thread) if thread is not None else default


class HandoffMiddleware(AgentMiddleware[IpseState, Any, Any]):
    """Hands the agent's history off at each new checkpoint, persistently (see the module).

    ``archive``: True (the default) archives what was removed in the default store
    (``IPSE_HOME`` or ``IPSE_DATABASE_URL``, opened on the first removal), a sink archives
    there, None or False archives nothing. ``session`` names the archive session; by default
    the thread id. ``strip`` chooses the strip options (the tool name is ``tool``'s);
    ``budget`` holds each handoff to that many tokens (`ipse.handoff.HandoffOptions`)."""

    state_schema = IpseState

    def __init__(
        self,
        *,
        archive: ArchiveSink | bool | None = True,
        session: str | None = None,
        tool: str = CHECKPOINT_TOOL,
        strip: StripOptions | None = None,
        budget: int | None = None,
    ) -> None:
        super().__init__()
        self.budget = budget
        self.archive: ArchiveSink | None = LazyArchive() if archive is True else (archive or None)
        self.session = session
        self.tool = tool
        self.strip = strip
        self.tools = [checkpoint_tool(tool)]
        self.last: Handoff | None = None  # the most recent handoff this middleware made

    def before_model(self, state: IpseState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        messages = state["messages"]
        found = newest_checkpoint(messages, self.tool)
        if found is None or found[0] == state.get("ipse_handoff"):
            return None
        anchor, cut = found
        session = self.session or _thread_id("langchain")
        try:
            handed, done = hand_off(
                messages,
                cut,
                session=session,
                tool=self.tool,
                archive=self.archive,
                strip=self.strip,
                budget=self.budget,
            )
        except IpseError as exc:
            log.warning("ipse: checkpoint %s left as it is: %s", anchor, exc)
            return {"ipse_handoff": anchor}
        self.last = done
        return {
            "messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *handed],
            "ipse_handoff": anchor,
        }


# ------------------------------------------------------------------------------------- the twin


class _Stores:
    """The twin store to use in the calling thread: the one given, or one opened per thread
    from a URL (LangChain runs tools on worker threads, and a SQLite connection stays in the
    thread that opened it)."""

    def __init__(self, store: TwinStore | str | None) -> None:
        self.fixed = store if isinstance(store, TwinStore) else None
        self.url = None if isinstance(store, TwinStore) else store
        self.local = threading.local()

    def get(self) -> TwinStore:
        if self.fixed is not None:
            return self.fixed
        opened = getattr(self.local, "store", None)
        if opened is None:
            opened = self.local.store = open_store(self.url)
        assert isinstance(opened, TwinStore)
        return opened


def twin_tools(
    store: TwinStore | str | None,
    twin_id: str,
    *,
    config: TwinConfig | None = None,
    holder: str | None = None,
    ttl: float = 30.0,
) -> list[BaseTool]:
    """The twin's transitions as LangChain tools; each call is one `ipse.twin.apply_turn`.

    ``store`` is a store URL (opened once per thread; None: the default store) or an open store
    that may be used from any thread (``memory://``, PostgreSQL). A bad call, or another writer
    holding the lease, gives the model an error result and changes nothing."""
    return _tools(_Stores(store), twin_id, config=config, holder=holder, ttl=ttl)


def _tools(
    stores: _Stores,
    twin_id: str,
    *,
    config: TwinConfig | None,
    holder: str | None,
    ttl: float,
) -> list[BaseTool]:

    def make(op: str, description: str, schema: dict[str, Any]) -> BaseTool:
        def apply(**arguments: Any) -> str:
            try:
                turn = apply_turn(
                    stores.get(),
                    twin_id,
                    [{"op": op, **arguments}],
                    config=config,
                    holder=holder,
                    ttl=ttl,
                )
            except IpseError as exc:
                raise ToolException(f"{op}: {exc}") from exc
            written = f", snapshot v{turn.version} written" if turn.written else ""
            return f"ok: {op} applied{written}"

        return StructuredTool.from_function(
            func=apply,
            name=op,
            description=description,
            args_schema=schema,
            handle_tool_error=True,
        )

    specs = copy.deepcopy(anthropic_tools())  # frameworks may edit a schema
    return [make(t["name"], t["description"], t["input_schema"]) for t in specs]


class TwinMiddleware(AgentMiddleware[IpseState, Any, Any]):
    """Rehydrates a twin into the system prompt and offers its transitions (see the module).

    List it after `HandoffMiddleware`, so a handoff's new prompt is in the same model call."""

    state_schema = IpseState

    def __init__(
        self,
        store: TwinStore | str | None,
        twin_id: str,
        config: TwinConfig,
        *,
        holder: str | None = None,
        ttl: float = 30.0,
    ) -> None:
        super().__init__()
        self.stores = _Stores(store)
        self.twin_id = twin_id
        self.config = config
        self.tools = _tools(self.stores, twin_id, config=config, holder=holder, ttl=ttl)

    def before_model(self, state: IpseState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        anchor = state.get("ipse_handoff")
        if state.get("ipse_twin_prompt") is not None and state.get("ipse_twin_anchor") == anchor:
            return None
        text = rehydrate(self.stores.get(), self.twin_id, self.config).text()
        return {"ipse_twin_prompt": text, "ipse_twin_anchor": anchor}

    def _request(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        prompt = request.state.get("ipse_twin_prompt")
        if not isinstance(prompt, str):
            return request
        current = request.system_message
        if current is None:
            return request.override(system_message=SystemMessage(content=prompt))
        rest = current.content
        content: Any = (
            prompt.rstrip("\n") + SEPARATOR + rest
            if isinstance(rest, str)
            else [{"type": "text", "text": prompt}, *rest]
        )
        return request.override(system_message=SystemMessage(content=content))

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        return handler(self._request(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        return await handler(self._request(request))


# What an agent's code uses; `hand_off`, `newest_checkpoint`, `twin_tools` and `IpseState` are
# the middleware's steps.
__all__ = [
    "HandoffMiddleware",
    "TwinMiddleware",
    "checkpoint_tool",
    "from_conversation",
    "to_conversation",
]
