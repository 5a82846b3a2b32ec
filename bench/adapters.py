"""The in-process adapters' own cost, against the library call they wrap, in the same run.

LangChain: a generated agent history (N rounds: a human turn, four tool calls with results, a
checkpoint, an answer) handed off by `ipse.adapters.langchain.hand_off` (convert to the neutral
model, `ipse.handoff.run`, convert back) against the baseline: `ipse.handoff.run` alone on the
same conversation already converted. Also the per-model-call cost when there is nothing to do
(`newest_checkpoint` on the handed-off history) against the baseline.

OpenAI Agents SDK: `hand_off_items` on the equivalent Responses items (read with the codec, run,
write back) against the same baseline shape: `ipse.handoff.run` on the conversation read once.

Best of ``--repeat`` runs each, interleaved. Prints milliseconds and ratios.

    python bench/adapters.py [--rounds N] [--repeat N]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ipse.adapters.langchain import hand_off, newest_checkpoint, to_conversation
from ipse.adapters.openai_agents import hand_off_items
from ipse.handoff import HandoffOptions, run
from ipse.transcript._codec import codec

NOTES = {"done": ["step"], "open": ["next"]}


def history(rounds: int) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for r in range(rounds):
        out.append(HumanMessage(f"Round {r}: please look at module {r}."))
        for k in range(4):
            call = {"name": "read", "args": {"path": f"m{r}/{k}.py"}, "id": f"c{r}-{k}"}
            out.append(AIMessage(f"Reading file {k}.", tool_calls=[call]))
            out.append(ToolMessage("x = 1\n" * 40, tool_call_id=f"c{r}-{k}"))
        checkpoint = {"name": "micro_handoff", "args": NOTES, "id": f"h{r}"}
        out.append(AIMessage("Done with this module.", tool_calls=[checkpoint]))
        out.append(ToolMessage("Handoff notes\nDone:\n- step", tool_call_id=f"h{r}"))
        out.append(AIMessage(f"Module {r} is fine."))
    return out


def items(rounds: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for r in range(rounds):
        out.append({"role": "user", "content": f"Round {r}: please look at module {r}."})
        for k in range(4):
            out.append(
                {
                    "type": "function_call",
                    "call_id": f"c{r}-{k}",
                    "name": "read",
                    "arguments": f'{{"path":"m{r}/{k}.py"}}',
                }
            )
            out.append(
                {"type": "function_call_output", "call_id": f"c{r}-{k}", "output": "x = 1\n" * 40}
            )
        out.append(
            {
                "type": "function_call",
                "call_id": f"h{r}",
                "name": "micro_handoff",
                "arguments": '{"done":["step"],"open":["next"]}',
            }
        )
        out.append({"type": "function_call_output", "call_id": f"h{r}", "output": "notes"})
        out.append({"role": "assistant", "content": [{"type": "output_text", "text": "fine"}]})
    return out


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    messages = history(args.rounds)
    found = newest_checkpoint(messages)
    assert found is not None
    cut = found[1]
    conversation = to_conversation(messages)
    options = HandoffOptions(at=cut)
    handed, _ = hand_off(messages, cut, session="bench")

    adapter = best(lambda: hand_off(messages, cut, session="bench"), args.repeat)
    baseline = best(lambda: run(conversation, options, session="bench"), args.repeat)
    idle = best(lambda: newest_checkpoint(handed), args.repeat)
    print(f"LangChain, {len(messages)} messages:")
    print(
        f"  hand_off {adapter * 1e3:.1f} ms; ipse.handoff.run alone {baseline * 1e3:.1f} ms; "
        f"ratio {adapter / baseline:.2f}"
    )
    print(
        f"  nothing to do (newest_checkpoint) {idle * 1e6:.1f} us; {idle / baseline:.5f} of a run"
    )

    raw = items(args.rounds)
    responses = codec("openai-responses")
    read_once = responses.read_body({"input": raw})
    agents = best(lambda: hand_off_items(raw, session="bench"), args.repeat)
    agents_base = best(
        lambda: run(read_once, HandoffOptions(at="checkpoint"), session="bench"), args.repeat
    )
    print(f"OpenAI Agents SDK, {len(raw)} items:")
    print(
        f"  hand_off_items {agents * 1e3:.1f} ms; ipse.handoff.run alone "
        f"{agents_base * 1e3:.1f} ms; ratio {agents / agents_base:.2f}"
    )


if __name__ == "__main__":
    main()
