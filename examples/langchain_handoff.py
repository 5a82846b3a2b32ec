"""A LangChain v1 agent with ipse's micro-handoff and a twin, as agent middleware.

    pip install 'ipse[langchain]' langchain-anthropic
    python examples/langchain_handoff.py "What is this project? Read README.md."

The model is Claude through langchain-anthropic, on whatever server ANTHROPIC_BASE_URL names (the
Anthropic API when unset), with ANTHROPIC_API_KEY; IPSE_EXAMPLE_MODEL picks the model (default
claude-sonnet-4-6). `HandoffMiddleware` adds the checkpoint tool and, once the agent has called
it, replaces the thread's stored history with the handed-off one (what was removed is archived in
ipse's home folder). `TwinMiddleware` puts the twin `example-twin` (stored in ipse's home folder)
at the front of the system prompt and offers its transitions as tools. Two turns run on one
thread, with the history kept by LangGraph's in-memory checkpointer.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.chat_models import init_chat_model
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from ipse.adapters.langchain import HandoffMiddleware, TwinMiddleware
from ipse.twin import TwinConfig, open_store

MODEL = os.environ.get("IPSE_EXAMPLE_MODEL", "claude-sonnet-4-6")
SYSTEM = (
    "Read the files you need with read_file. Once you have read them, call micro_handoff with "
    "your notes, then answer in a few lines. Record what you learn about the user with "
    "establish_fact."
)


@tool
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


def main() -> None:
    question = " ".join(sys.argv[1:]) or "What is this project? Read README.md, then answer."
    model = init_chat_model(f"anthropic:{MODEL}", max_tokens=1024)
    twin = TwinMiddleware(None, "example-twin", TwinConfig(role="You are a helpful engineer."))
    agent = create_agent(
        model,
        tools=[read_file],
        system_prompt=SYSTEM,
        middleware=[HandoffMiddleware(session="langchain-example"), twin],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "example"}, "recursion_limit": 20}
    for text in (question, "Thanks. What should I read next?"):
        out = agent.invoke({"messages": [{"role": "user", "content": text}]}, config)
        messages = out["messages"]
        kinds = " ".join(m.type for m in messages)
        print(f"{len(messages)} messages stored: {kinds}")
        print(messages[-1].text)
    latest = open_store().latest("example-twin")
    print(f"twin example-twin: {'v' + str(latest.version) if latest else 'no snapshot yet'}")


if __name__ == "__main__":
    main()
