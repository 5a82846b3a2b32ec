"""An OpenAI Agents SDK agent whose session keeps its history handed off.

    pip install 'ipse[openai-agents]'
    python examples/openai_agents_handoff.py "What is this project? Read README.md."

It talks to whatever server OPENAI_BASE_URL names (the OpenAI API when unset), with
OPENAI_API_KEY, through the SDK's default model API; IPSE_EXAMPLE_MODEL picks the model (the
SDK's default when unset). The session is a `SQLiteSession` wrapped in ipse's `HandoffSession`:
once the agent has called the checkpoint tool, the stored history is replaced by its handed-off
form (what was removed is archived in ipse's home folder), and the next run starts from it;
`input_filter` hands each model call's input off the same way within a run.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool, set_tracing_disabled

from ipse.adapters.openai_agents import HandoffSession, checkpoint_tool, input_filter

INSTRUCTIONS = (
    "Read the files you need with read_file. Once you have read them, call micro_handoff with "
    "your notes, then answer in a few lines."
)


@function_tool
def read_file(path: str) -> str:
    """Read a text file in the current folder."""
    here = Path.cwd().resolve()
    target = (here / path).resolve()
    if here not in target.parents:
        return "only files inside the current folder can be read"
    try:
        return target.read_text(errors="replace")[:4000]
    except OSError as exc:
        return str(exc)


async def main() -> None:
    if os.environ.get("OPENAI_BASE_URL"):
        set_tracing_disabled(True)  # traces go to OpenAI's platform, which another server lacks
    question = " ".join(sys.argv[1:]) or "What is this project? Read README.md, then answer."
    agent = Agent(
        name="reader",
        instructions=INSTRUCTIONS,
        model=os.environ.get("IPSE_EXAMPLE_MODEL") or None,
        tools=[read_file, checkpoint_tool()],
    )
    session = HandoffSession(SQLiteSession("example"), archive_session="agents-example")
    config = RunConfig(call_model_input_filter=input_filter())  # the same, within a run
    for text in (question, "Thanks. What should I read next?"):
        result = await Runner.run(agent, text, session=session, max_turns=10, run_config=config)
        items = await session.get_items()
        print(f"{len(items)} items stored")
        print(result.final_output)
        if session.last is not None:
            report = session.last.report
            print(
                f"handoff: {report.removed_calls} tool calls removed, "
                f"{report.removed_thinking} reasoning items"
            )


if __name__ == "__main__":
    asyncio.run(main())
