"""The autopilot over a whole conversation: where it cut, where it nudged, what it does now.

A proxy sees each request of a conversation whole, as its client sent it: the client never sees
the cuts, so every request repeats the history from the start. `plan_autopilot` reads that
history request by request (each request ends at a user or tool message that an assistant
message follows, the last at the end) and applies `autopilot_step` at each, as the proxy did
when that request went by: the size each request went upstream with follows from the cuts
before it. The result is a function of the conversation alone, so the cut and the nudges fall
in the same places for every later request of the conversation (the prefix the provider cached
stays byte for byte the same), on every replica, and in a replay.

- Sizes are counted from the messages' JSON (`bytes_per_token`, ``windows.json``; or a caller's
  ``count``), less the client's cache breakpoints (``cache_control``: Claude Code moves its
  own to the newest message at every request, and a count that moved with it would plan an
  earlier request differently from one request to the next); what a cut keeps of the part
  before it is the authored text plus the marker, and where the turns must alternate the tool
  exchange the handoff keeps before a cut at an assistant message (`_boundary_exchanges`).
- A cut goes at the newest **turn boundary** (`turn_boundary`): before the newest human prompt,
  or before the assistant message whose tool calls the request answers (that exchange stays, as
  the agent is about to read it); never where a tool call before it is answered after it, and
  where thinking is on, never so that the first kept assistant message of a turn lacks the
  thinking an earlier message of that turn began with.
- The agent's own checkpoint calls cut too: once answered, a request starts a new stretch there.
- A nudge is placed once per stretch, after the last message of the request that crossed the
  soft threshold (`AutopilotPlan.nudges`); those before the newest cut are gone with it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ipse import jsonio
from ipse.handoff._autopilot import (
    AutopilotPolicy,
    AutopilotStep,
    Limits,
    RequestState,
    autopilot_step,
)
from ipse.handoff._cut import results_by_call
from ipse.handoff._ledger import DEFAULT_LEDGER_TOKENS
from ipse.handoff._recognise import CHECKPOINT_TOOLS, is_checkpoint_call
from ipse.transcript import Conversation, Message, Text, Thinking, ToolCall, ToolResult
from ipse.transcript._shared import codec

MARKER_TOKENS = DEFAULT_LEDGER_TOKENS + 200  # what a cut's marker adds: the ledger and its words
NUDGE_TOKENS = 80  # a nudge's words
_CACHE_KEY = b'"cache_control":'
_CACHE_CONTROL = re.compile(rb',"cache_control":\{[^{}]*\}|"cache_control":\{[^{}]*\},?')
Trigger = Literal["checkpoint", "autopilot"]

NUDGE = (
    "[ipse autopilot] This conversation has grown to where a checkpoint pays for itself. Call "
    "the micro_handoff tool now, facts first: what is done, what is still open, the decisions "
    "and measured numbers with where they came from, and the files involved. Then go on with "
    "the task."
)


@dataclass(frozen=True, slots=True)
class PlannedEvent:
    """One nudge or cut, at the request that ended at message ``request``: ``at`` is the cut's
    message index (a nudge goes after message ``request``)."""

    action: Literal["nudge", "cut"]
    request: int
    at: int
    step: AutopilotStep

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "request": self.request, "at": self.at,
                **self.step.to_json()}  # fmt: skip


@dataclass(frozen=True, slots=True)
class AutopilotPlan:
    """What the autopilot makes of a conversation.

    ``cut``: the message index of the newest cut when the autopilot made it (None: no cut, or
    the agent's own checkpoint is newer, and the checkpoint path cuts there); ``anchor``: that
    cut's name (stable across requests, distinct between cuts); ``nudges``: the messages after
    which a nudge goes, all after the newest cut of either kind; ``now``: the step at the last
    request (None when the conversation does not end with one); ``events``: every nudge and cut,
    in order; ``tokens``: the size the last request goes upstream with, as counted."""

    cut: int | None
    anchor: str | None
    nudges: tuple[int, ...]
    now: AutopilotStep | None
    events: tuple[PlannedEvent, ...] = ()
    tokens: int = 0
    newest_cut: int = 0  # the newest cut of either kind (0: none)
    trigger: Trigger | None = None  # who made it

    @property
    def acts(self) -> bool:
        """Whether the request changes: a cut of the autopilot's, or a nudge to place."""
        return self.cut is not None or bool(self.nudges)

    def cut_event(self) -> PlannedEvent | None:
        """The event of the newest cut, when the autopilot made it."""
        if self.cut is None:
            return None
        return next((e for e in reversed(self.events) if e.action == "cut"), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "cut": self.cut,
            "anchor": self.anchor,
            "nudges": list(self.nudges),
            "now": self.now.to_json() if self.now is not None else None,
            "events": [e.to_json() for e in self.events],
            "tokens": self.tokens,
            "trigger": self.trigger,
        }


def limits_for(
    model: str | None,
    provider: str,
    *,
    window: int | None = None,
    max_output: int | None = None,
    compaction: Callable[[int, int], int | None] | int | None = None,
) -> Limits:
    """The `Limits` of ``model``: its window and output from the window table (``windows.json``)
    unless given, and the agent CLI's compaction point (a number, or a function of the window
    and the output, as `ipse.agents` has one)."""
    from ipse.prefix._shared import windows

    known = windows().of(model, provider)
    size = window if window is not None else known.window
    output = max_output if max_output is not None else known.max_output
    point = compaction(size, output) if callable(compaction) else compaction
    return Limits(size, output, point)


def bytes_per_token() -> float:
    """The bytes of JSON a token stands for where a body is counted without a tokenizer."""
    from ipse.prefix._shared import windows

    return windows().bytes_per_token


@dataclass
class _Sizes:
    """Per message: its tokens whole, and what a cut keeps of it (its text); prefix sums."""

    whole: list[int] = field(default_factory=lambda: [0])
    kept: list[int] = field(default_factory=lambda: [0])
    fixed: int = 0
    exchange: dict[int, int] = field(default_factory=dict)  # cut -> its boundary exchange

    def forwarded(self, cut: int, end: int, nudges: int) -> int:
        """A request of messages ``[0, end]`` cut at ``cut`` (0: not cut), with ``nudges``."""
        marker = MARKER_TOKENS if cut else 0
        tail = self.whole[end + 1] - self.whole[cut]
        kept = self.kept[cut] + self.exchange.get(cut, 0)
        return self.fixed + marker + kept + tail + nudges * NUDGE_TOKENS


def plan_autopilot(
    conversation: Conversation,
    policy: AutopilotPolicy,
    limits: Limits,
    *,
    tool_names: Sequence[str] = CHECKPOINT_TOOLS,
    count: Callable[[Any], int] | None = None,
) -> AutopilotPlan:
    """The autopilot's plan for ``conversation`` (see the module docstring). ``count`` gives
    the tokens of a JSON value (a message's raw form, a tool list); default: its bytes over
    `bytes_per_token`."""
    messages = conversation.messages
    sizes = _sizes(conversation, count)
    boundaries = _Boundaries(messages, _thinking_on(conversation.settings))
    checkpoints = _checkpoint_cuts(messages, tool_names)
    walk = _Walk(sizes, limits, policy)
    for end in request_ends(messages):
        agent_cut = max((cut for answered, cut in checkpoints if answered <= end), default=0)
        if agent_cut > walk.cut:
            walk.restart(agent_cut, "checkpoint")
        walk.request(end, boundaries.at(end, walk.cut))
    last = len(messages) - 1
    now = walk.steps.get(last)
    autopilot = walk.trigger == "autopilot" and walk.cut > 0
    return AutopilotPlan(
        cut=walk.cut if autopilot else None,
        anchor=_anchor(messages, walk.cut) if autopilot else None,
        nudges=tuple(walk.nudges),
        now=now,
        events=tuple(walk.events),
        tokens=walk.last_tokens,
        newest_cut=walk.cut,
        trigger=walk.trigger,
    )


class _Walk:
    """The autopilot applied request by request (one stretch between cuts at a time)."""

    def __init__(self, sizes: _Sizes, limits: Limits, policy: AutopilotPolicy) -> None:
        self.sizes, self.limits, self.policy = sizes, limits, policy
        self.cut = 0
        self.trigger: Trigger | None = None
        self.nudges: list[int] = []
        self.events: list[PlannedEvent] = []
        self.steps: dict[int, AutopilotStep] = {}
        self.requests = 0
        self.since: int | None = None
        self.previous: int | None = None  # the size the previous request went upstream with
        self.last_tokens = 0
        self.start: int | None = None  # the size the stretch's first request went up with

    def restart(self, cut: int, trigger: Trigger) -> None:
        self.cut, self.trigger, self.nudges, self.since = cut, trigger, [], 0
        self.start = None

    def growth(self, tokens: int) -> float | None:
        """The tokens a request of this stretch added on average (None: its first request)."""
        done = self.requests - 1 if self.since is None else self.since
        if self.start is None or done < 1:
            return None
        return max(0, tokens - self.start) / done

    def request(self, end: int, boundary: int | None) -> None:
        self.requests += 1
        tokens = self.sizes.forwarded(self.cut, end, len(self.nudges))
        after = None if boundary is None else self.sizes.forwarded(boundary, end, 0)
        share = 1.0 if self.previous is None else min(1.0, self.previous / max(tokens, 1))
        state = RequestState(
            tokens=tokens,
            tokens_after=after,
            limits=self.limits,
            cached_share=share,
            requests=self.requests,
            since_cut=self.since,
            nudged=bool(self.nudges),
            growth=self.growth(tokens),
        )
        step = autopilot_step(state, self.policy)
        self.steps[end] = step
        if self.start is None:
            self.start = tokens
        if step.action == "cut" and boundary is not None:
            self.events.append(PlannedEvent("cut", end, boundary, step))
            self.restart(boundary, "autopilot")
            tokens = after if after is not None else tokens
        elif step.action == "nudge":
            self.events.append(PlannedEvent("nudge", end, end + 1, step))
            self.nudges.append(end)
            tokens += NUDGE_TOKENS
        if self.since is not None:
            self.since += 1
        self.previous = self.last_tokens = tokens


def json_size(value: Any) -> int:
    """The bytes of ``value``'s JSON less its cache breakpoints (a ``"cache_control"`` key
    with its object: in JSON bytes such a key is never inside a string, whose quotes are
    escaped)."""
    blob = jsonio.dumps(value)
    if _CACHE_KEY not in blob:
        return len(blob)
    return len(blob) - sum(len(found) for found in _CACHE_CONTROL.findall(blob))


def counted(conversation: Conversation) -> int:
    """A request's size as a plan counts it (each message's raw bytes, and its front's, over
    `bytes_per_token`): what the autopilot records of a body it sends."""
    sizes = _sizes(conversation, None)
    return sizes.fixed + sizes.whole[-1]


def request_ends(messages: Sequence[Message]) -> list[int]:
    """The index of each request's last message: a user or tool message followed by an assistant
    message, and the last message when it is not the assistant's."""
    ends = []
    for i, message in enumerate(messages):
        if message.role == "assistant":
            continue
        if i + 1 == len(messages) or messages[i + 1].role == "assistant":
            ends.append(i)
    return ends


def _sizes(conversation: Conversation, count: Callable[[Any], int] | None) -> _Sizes:
    if count is None:
        ratio = bytes_per_token()

        def count(value: Any) -> int:
            return int(json_size(value) / ratio)

    sizes = _Sizes()
    front: list[Any] = [b.raw if b.raw is not None else getattr(b, "text", "")
                        for b in conversation.system]  # fmt: skip
    front += [t.raw for t in conversation.tools]
    sizes.fixed = count(front) if front else 0
    for message in conversation.messages:
        sizes.whole.append(sizes.whole[-1] + count(_raw(message)))
        texts = [b.text for b in message.blocks if isinstance(b, Text)]
        sizes.kept.append(sizes.kept[-1] + (count(texts) if texts else 0))
    if codec(conversation.dialect).alternates:
        sizes.exchange = _boundary_exchanges(conversation.messages, sizes)
    return sizes


def _boundary_exchanges(messages: Sequence[Message], sizes: _Sizes) -> dict[int, int]:
    """Where the turns must alternate, what a cut before an assistant message keeps besides
    the text before it: the handoff keeps the tool exchange the rewritten part ends with (the
    calls of the assistant message before, and the results after them), so that a user
    message stands between it and the kept turn (`ipse.handoff._strip`). By cut: the tokens
    of those messages beyond their text."""
    found = {}
    for cut in range(1, len(messages)):
        if messages[cut].role != "assistant" or not _results_only(messages[cut - 1]):
            continue
        start = cut - 1
        while start > 0 and _results_only(messages[start]):
            start -= 1
        calls = messages[start].role == "assistant" and any(
            isinstance(b, ToolCall) for b in messages[start].blocks
        )
        if calls:
            whole = sizes.whole[cut] - sizes.whole[start]
            found[cut] = max(0, whole - (sizes.kept[cut] - sizes.kept[start]))
    return found


def _results_only(message: Message) -> bool:
    return bool(message.blocks) and all(isinstance(b, ToolResult) for b in message.blocks)


def _raw(message: Message) -> Any:
    """A message's raw form as it was sent (its items, where it stands for several)."""
    if message.raw is not None:
        return message.raw
    items = message.meta.get("items") if message.meta else None
    if items:
        return list(items)
    return [b.raw for b in message.blocks if getattr(b, "raw", None) is not None]


def _thinking_on(settings: Mapping[str, Any]) -> bool:
    thinking = settings.get("thinking")
    if isinstance(thinking, Mapping):
        return thinking.get("type") not in (None, "disabled")
    return bool(settings.get("reasoning"))


class _Boundaries:
    """Where a cut may go in a request that ends at message ``end`` (`turn_boundary`)."""

    def __init__(self, messages: Sequence[Message], thinking: bool) -> None:
        self.messages = messages
        self.thinking = thinking
        answered_at: dict[str, int] = {}
        for i, message in enumerate(messages):
            for block in message.blocks:
                if isinstance(block, ToolResult):
                    answered_at.setdefault(block.call_id, i)
        # reach[i]: the latest message answering a call made before message i (len: unanswered)
        self.reach = [0]
        for message in messages:
            latest = self.reach[-1]
            for block in message.blocks:
                if isinstance(block, ToolCall):
                    latest = max(latest, answered_at.get(block.id, len(messages)))
            self.reach.append(latest)

    def clean(self, index: int) -> bool:
        """No call before ``index`` is answered at or after it."""
        return self.reach[index] < index

    def at(self, end: int, floor: int) -> int | None:
        """The newest turn boundary of the request ending at ``end``, above ``floor``."""
        return turn_boundary(self, end, floor)


def turn_boundary(found: _Boundaries, end: int, floor: int) -> int | None:
    """Where a cut of the request ending at message ``end`` goes (see the module docstring),
    None when there is none above ``floor`` (the newest cut)."""
    messages = found.messages
    last = messages[end]
    if any(isinstance(b, ToolResult) for b in last.blocks) or last.role == "tool":
        index = end
        while index > floor and messages[index].role != "assistant":
            index -= 1
        if messages[index].role != "assistant":
            return None
    else:
        index = end  # before the newest prompt
    while index > floor and not found.clean(index):
        index -= 1
    if found.thinking:
        index = _with_thinking(messages, index, floor)
    return index if index > floor else None


def _with_thinking(messages: Sequence[Message], index: int, floor: int) -> int:
    """``index``, or earlier, so that the turn it falls in keeps the thinking it began with."""
    if messages[index].role != "assistant" or _starts_thinking(messages[index]):
        return index
    start = index
    while start > floor and not _is_prompt(messages[start]):
        start -= 1
    thought = [i for i in range(start, index) if messages[i].role == "assistant"
               and any(isinstance(b, Thinking) for b in messages[i].blocks)]  # fmt: skip
    if not thought:
        return index
    opening = [i for i in thought if _starts_thinking(messages[i])]
    return opening[-1] if opening else start


def _starts_thinking(message: Message) -> bool:
    return bool(message.blocks) and isinstance(message.blocks[0], Thinking)


def _is_prompt(message: Message) -> bool:
    return message.role == "user" and not any(isinstance(b, ToolResult) for b in message.blocks)


def _checkpoint_cuts(
    messages: Sequence[Message], tool_names: Sequence[str]
) -> list[tuple[int, int]]:
    """(the message answering it, the cut after it) for each answered checkpoint call."""
    results = results_by_call(messages)
    answered_at = {b.call_id: i for i, m in enumerate(messages) for b in m.blocks
                   if isinstance(b, ToolResult)}  # fmt: skip
    cuts = []
    for message in messages:
        for block in message.blocks:
            if not isinstance(block, ToolCall) or block.id not in answered_at:
                continue
            if is_checkpoint_call(block, tool_names, results.get(block.id)):
                at = answered_at[block.id]
                cuts.append((at, at + 1))
    return cuts


def _anchor(messages: Sequence[Message], cut: int) -> str:
    """A cut's name: the message it falls before and the tool call nearest it (ids are unique
    to a conversation, so two conversations cut at the same index are told apart)."""
    near = (
        [b.id for b in messages[cut].blocks if isinstance(b, ToolCall)]
        if cut < len(messages)
        else []
    )
    if not near:
        near = [b.id for m in messages[:cut] for b in m.blocks if isinstance(b, ToolCall)][-1:]
    return f"autopilot:{cut}:{near[0] if near else ''}"


__all__ = [
    "MARKER_TOKENS",
    "NUDGE",
    "NUDGE_TOKENS",
    "AutopilotPlan",
    "PlannedEvent",
    "bytes_per_token",
    "counted",
    "json_size",
    "limits_for",
    "plan_autopilot",
    "request_ends",
    "turn_boundary",
]
