"""OpenAI Agents SDK: a session that keeps its history handed off (``ipse[openai-agents]``).

`HandoffSession` wraps any session (``SQLiteSession``, ``SQLAlchemySession``, Redis, ...). Items
pass through to it unchanged, until a batch of items completes a call of the checkpoint tool
(`checkpoint_tool`, ``micro_handoff``, answered by its output). Then the session's whole history,
which is a list of Responses input items, is read as an ``openai-responses`` conversation and
handed off with the library's pipeline (`ipse.handoff.run`: strip at the checkpoint, verify,
archive), and the stored history is replaced by the result: the items the handoff left alone are
written back as they were, byte for byte, so the provider's prompt cache keeps the prefix.

The runner keeps its own list of the items of a run in progress, so the short history is what
the model sees from the next run of the session on (the next ``Runner.run`` with it). Within a
run, `input_filter` (a ``RunConfig.call_model_input_filter``) sends each model call its input
handed off the same way, as the proxy would.

The replacement is ``clear_session`` and then ``add_items`` on the wrapped session, because the
`Session` protocol has no atomic replace: a crash between the two leaves the history empty, with
what the handoff removed in the archive and the kept items lost. Wrap a backend whose writes you
trust, or keep ``archive`` on. A history the handoff cannot make valid is left as it is (logged).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ipse import _notes
from ipse.errors import CutError, InputError, IpseError, MissingExtra

try:
    from agents import FunctionTool, RunContextWrapper
    from agents.items import TResponseInputItem
    from agents.memory import Session
    from agents.memory.session_settings import SessionSettings
    from agents.run_config import CallModelData, ModelInputData
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise MissingExtra("openai-agents", "openai-agents") from exc

from ipse import jsonio
from ipse.archive._shared import ArchiveSink, LazyArchive
from ipse.handoff import Handoff, HandoffOptions, render_notes, run, tool_definition
from ipse.handoff._shared import CHECKPOINT_TOOL, StripOptions
from ipse.handoff.wire import rewrite_request
from ipse.transcript._shared import codec

log = _notes.logger(__name__)

_DIALECT = "openai-responses"
_NOT_RECORDED = "error: the checkpoint was not recorded: "


def checkpoint_tool(name: str = CHECKPOINT_TOOL) -> FunctionTool:
    """The checkpoint tool as a function tool: the notes in, the rendered notes out.

    Notes that do not follow `ipse.handoff.SCHEMA` give the model an error text naming the
    field (the tool does not raise). The schema leaves some fields optional, so it is not
    strict."""

    async def invoke(context: RunContextWrapper[Any], arguments: str) -> str:
        try:
            notes = jsonio.loads(arguments or "{}")
            return render_notes(notes)
        except (InputError, jsonio.JSONDecodeError) as exc:
            return f"{_NOT_RECORDED}{exc}"

    definition = copy.deepcopy(tool_definition("openai-responses", name))  # the SDK may edit it
    return FunctionTool(
        name=name,
        description=definition["description"],
        params_json_schema=definition["parameters"],
        on_invoke_tool=invoke,
        strict_json_schema=False,
    )


def hand_off_items(
    items: Sequence[Any],
    *,
    session: str,
    tool: str = CHECKPOINT_TOOL,
    archive: ArchiveSink | None = None,
    strip: StripOptions | None = None,
    budget: int | None = None,
) -> tuple[list[Any], Handoff] | None:
    """Responses input items handed off at their newest checkpoint call, and the run; None when
    they have no checkpoint call or nothing before it to remove. ``budget``:
    `ipse.handoff.HandoffOptions.budget`.

    Raises what `ipse.handoff.run` raises for a history it cannot make valid."""
    dialect = codec(_DIALECT)
    conversation = dialect.read_body({"input": list(items)})
    base = strip or StripOptions()
    options = HandoffOptions(
        at="checkpoint",
        strip=StripOptions(
            checkpoint_tool=tool,
            join_texts=base.join_texts,
            promote_thinking=base.promote_thinking,
            breadcrumbs=base.breadcrumbs,
            breadcrumb_width=base.breadcrumb_width,
        ),
        budget=budget,
    )
    try:
        done = run(conversation, options, session=session, archive=archive, source="openai-agents")
    except CutError:
        return None
    if not done.report.removed:
        return None
    written = dialect.write_body(done.after)["input"]
    return list(written), done


def input_filter(
    *, tool: str = CHECKPOINT_TOOL, strip: StripOptions | None = None
) -> Callable[[CallModelData[Any]], ModelInputData]:
    """A ``RunConfig(call_model_input_filter=...)`` that sends every model call its input handed
    off at the newest checkpoint, as the proxy does (`ipse.handoff.wire.rewrite_request`:
    byte-stable, each checkpoint's rewrite done once and reused), so the calls after a checkpoint
    within the same run see the short history too. It changes what is sent, not what is stored, and
    archives nothing (`HandoffSession` stores and archives)."""

    def apply(data: CallModelData[Any]) -> ModelInputData:
        model_data = data.model_data
        items = model_data.input
        if not items or not all(isinstance(item, Mapping) for item in items):
            return model_data
        done = rewrite_request(
            {"input": list(items)},
            _DIALECT,
            tool_names=(tool,),
            strip_options=strip,
            session="openai-agents",
            source="openai-agents",
        )
        if done.body is None:
            if done.invalid:
                log.warning("ipse: model input sent as it is: %s", done.reason)
            return model_data
        return ModelInputData(input=done.body["input"], instructions=model_data.instructions)

    return apply


def _completes_checkpoint(items: Sequence[Any], tool: str, pending: set[str]) -> bool:
    """Whether ``items`` answer a checkpoint call with recorded notes (noting the calls still
    unanswered)."""
    done = False
    for item in items:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type")
        if kind == "function_call" and item.get("name") == tool:
            pending.add(str(item.get("call_id")))
        elif kind == "function_call_output" and str(item.get("call_id")) in pending:
            pending.discard(str(item.get("call_id")))
            output = item.get("output")
            done = done or not (isinstance(output, str) and output.startswith(_NOT_RECORDED))
    return done


class HandoffSession:
    """A `Session` that stores its items in handed-off form after each checkpoint.

    ``archive``: True (the default) archives what a handoff removed in the default store
    (``IPSE_HOME`` or ``IPSE_DATABASE_URL``, opened on the first removal), a sink archives
    there, None or False archives nothing; the archive session is the session's id unless
    ``archive_session`` names another. ``budget`` holds each handoff to that many tokens
    (`ipse.handoff.HandoffOptions`). ``last`` is the most recent handoff it made."""

    def __init__(
        self,
        session: Session,
        *,
        archive: ArchiveSink | bool | None = True,
        archive_session: str | None = None,
        tool: str = CHECKPOINT_TOOL,
        strip: StripOptions | None = None,
        budget: int | None = None,
    ) -> None:
        self.budget = budget
        self.inner = session
        self.session_id = session.session_id
        self.archive: ArchiveSink | None = LazyArchive() if archive is True else (archive or None)
        self.archive_session = archive_session
        self.tool = tool
        self.strip = strip
        self.last: Handoff | None = None
        self._pending: set[str] = set()

    @property
    def session_settings(self) -> SessionSettings | None:
        return self.inner.session_settings

    @session_settings.setter
    def session_settings(self, value: SessionSettings | None) -> None:
        self.inner.session_settings = value

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        return await self.inner.get_items(limit)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        await self.inner.add_items(items)
        if _completes_checkpoint(items, self.tool, self._pending):
            await self.hand_off()

    async def pop_item(self) -> TResponseInputItem | None:
        return await self.inner.pop_item()

    async def clear_session(self) -> None:
        self._pending.clear()
        await self.inner.clear_session()

    async def hand_off(self) -> Handoff | None:
        """Hand the stored history off at its newest checkpoint now; None when there was
        nothing to do (or the history could not be made valid, which is logged)."""
        items = await self.inner.get_items()
        try:
            found = hand_off_items(
                items,
                session=self.archive_session or self.session_id,
                tool=self.tool,
                archive=self.archive,
                strip=self.strip,
                budget=self.budget,
            )
        except IpseError as exc:
            log.warning("ipse: session %s left as it is: %s", self.session_id, exc)
            return None
        if found is None:
            return None
        rewritten, done = found
        await self.inner.clear_session()
        await self.inner.add_items(rewritten)
        self.last = done
        return done


__all__ = ["HandoffSession", "checkpoint_tool", "input_filter"]
