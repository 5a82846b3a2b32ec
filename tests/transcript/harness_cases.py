"""Generated files in the shapes the harnesses write (see each reader's module docstring):
small, but with every record kind the readers rely on, so the general shape is what is tested."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HUMAN = "Please fix the failing test in parser.py"
AGENT = "I'll read the parser first."
AGENT_END = "The test passes now."


def cline_history(*, extras: bool = True) -> list[dict[str, Any]]:
    """A Cline 4.x task history: native tool calls, Cline's own fields on messages and blocks."""
    meta: dict[str, Any] = {}
    if extras:
        meta = {
            "modelInfo": {"modelId": "claude-sonnet-4-5", "providerId": "anthropic", "mode": "act"},
            "metrics": {"tokens": {"prompt": 1200, "completion": 40, "cached": 1000}, "cost": 0.01},
        }
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": f"<task>\n{HUMAN}\n</task>"},
                {
                    "type": "text",
                    "text": "<environment_details>\n# cwd: /repo\n</environment_details>",
                },
            ],
            **({"ts": 1764000000000} if extras else {}),
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "no signature here", "summary": []},
                {"type": "text", "text": AGENT, "call_id": "resp_1", "signature": "sig-gemini"},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "read_file",
                    "input": {"path": "parser.py"},
                    "call_id": "resp_1",
                    "reasoning_details": [],
                },
            ],
            **({"ts": 1764000001000, "id": "resp_1"} if extras else {}),
            **meta,
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "def parse(): ..."},
            ],
            **({"ts": 1764000002000} if extras else {}),
        },
        {
            "role": "assistant",
            "content": [{"type": "text", "text": AGENT_END}],
            **({"ts": 1764000003000} if extras else {}),
            **meta,
        },
    ]


def ui_messages() -> list[dict[str, Any]]:
    return [
        {
            "ts": 1764000000500,
            "type": "say",
            "say": "text",
            "text": HUMAN,
            "conversationHistoryIndex": -1,
        },
        {
            "ts": 1764000000900,
            "type": "say",
            "say": "api_req_started",
            "conversationHistoryIndex": 0,
        },
        {"ts": 1764000001500, "type": "say", "say": "text", "conversationHistoryIndex": 1},
        {"ts": 1764000002500, "type": "say", "say": "tool", "conversationHistoryIndex": 2},
        {
            "ts": 1764000003500,
            "type": "say",
            "say": "completion_result",
            "conversationHistoryIndex": 3,
        },
    ]


def roo_history() -> list[dict[str, Any]]:
    """A Roo Code 3.5x history with a condense summary, a truncation and a reasoning item."""
    return [
        {"role": "user", "content": "old request", "ts": 1, "condenseParent": "c1"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "old", "name": "list_files", "input": {}}],
            "ts": 2,
            "condenseParent": "c1",
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Summary of the conversation so far."},
            ],
            "ts": 3,
            "isSummary": True,
            "condenseId": "c1",
        },
        {"type": "reasoning", "summary": [], "encrypted_content": "gAAA", "id": "rs_1"},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": AGENT}],
            "ts": 4,
            "truncationParent": "t1",
        },
        {
            "role": "user",
            "content": "[truncated]",
            "ts": 5,
            "isTruncationMarker": True,
            "truncationId": "t1",
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "old", "content": "condensed away"},
                {"type": "text", "text": f"<user_message>\n{HUMAN}\n</user_message>"},
            ],
            "ts": 6,
        },
        {"role": "assistant", "content": [{"type": "text", "text": AGENT_END}], "ts": 7},
    ]


def swe_agent_traj() -> dict[str, Any]:
    """A SWE-agent 1.1 .traj with function calling, a demonstration and a retry's fields."""
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "bash", "arguments": '{"command": "ls"}'},
    }
    return {
        "trajectory": [
            {
                "action": "ls",
                "observation": "parser.py",
                "response": AGENT,
                "thought": AGENT,
                "state": {"working_dir": "/repo"},
                "execution_time": 0.1,
                "query": [{"role": "system", "content": "You are a helpful assistant."}],
                "extra_info": {},
            }
        ],
        "history": [
            {
                "role": "system",
                "content": "You are a helpful assistant.",
                "agent": "main",
                "message_type": "system_prompt",
            },
            {
                "role": "user",
                "content": [{"type": "text", "text": HUMAN}],
                "agent": "main",
                "message_type": "observation",
                "cache_control": {"type": "ephemeral"},
            },
            {
                "role": "assistant",
                "content": AGENT,
                "thought": AGENT,
                "action": "ls",
                "agent": "main",
                "tool_calls": [call],
                "message_type": "action",
                "thinking_blocks": [],
            },
            {
                "role": "tool",
                "content": [
                    {"type": "text", "text": "parser.py", "cache_control": {"type": "ephemeral"}}
                ],
                "agent": "main",
                "message_type": "observation",
                "tool_call_ids": ["call_1"],
            },
            {
                "role": "assistant",
                "content": AGENT_END,
                "agent": "main",
                "message_type": "action",
                "tool_calls": None,
            },
        ],
        "info": {
            "exit_status": "submitted",
            "submission": "diff",
            "swe_agent_version": "1.1.0",
            "model_stats": {"api_calls": 2},
        },
        "replay_config": json.dumps({"agent": {"model": {"name": "claude-sonnet-4-20250514"}}}),
        "environment": "main",
    }


CLASSIC_TASK = (
    "We're currently solving the following issue within our repository. Here's the issue "
    "text:\nISSUE:\nSyntaxError in tests/missing_colon.py\n\nINSTRUCTIONS:\nNow, you're "
    "going to solve this issue on your own."
)
CLASSIC_THOUGHTS = (
    "First I'll find the file the issue names.",
    "The file is in tests; I'll open it.",
    "Line 4 lacks its colon; I'll add it.",
    "The colon is there now; I'll submit.",
)
CLASSIC_ACTIONS = (
    "find_file missing_colon.py",
    "open tests/missing_colon.py",
    "edit 4:4\ndef division(dividend: int, divisor: int) -> float:\nend_of_edit",
    "submit",
)
CLASSIC_OBSERVATIONS = (
    'Found 1 matches for "missing_colon.py" in /repo:\n/repo/tests/missing_colon.py'
    "\n(Open file: n/a)\n(Current directory: /repo)\nbash-$",
    "[File: /repo/tests/missing_colon.py (10 lines total)]\n1:#!/usr/bin/env python3\n2:\n"
    "3:\n4:def division(dividend: int, divisor: int) -> float\n5:    answer = dividend / "
    "divisor\n(Open file: /repo/tests/missing_colon.py)\n(Current directory: /repo)\nbash-$",
    "File updated. Please review the changes and make sure they are correct.\n"
    "(Open file: /repo/tests/missing_colon.py)\n(Current directory: /repo)\nbash-$",
    "diff --git a/tests/missing_colon.py b/tests/missing_colon.py\n-def division(dividend: "
    "int, divisor: int) -> float\n+def division(dividend: int, divisor: int) -> float:",
)


def swe_agent_classic_traj() -> dict[str, Any]:
    """A SWE-agent .traj of the classic text-action shape (0.7 and the 1.0 ``thought_action``
    parser): no function calls; the assistant's reply holds its thought and a command in a
    code block (``thought``, ``action``), and the environment's answer comes back as a
    ``user`` item. A demonstration (``is_demo``) precedes the task statement."""
    history: list[dict[str, Any]] = [
        {
            "role": "system",
            "content": "SETTING: You are an autonomous programmer...",
            "agent": "primary",
        },
        {
            "role": "user",
            "content": "Here is a demonstration of how to correctly accomplish "
            "this task.\n--- DEMONSTRATION ---\n...\n--- END OF DEMONSTRATION ---",
            "agent": "primary",
            "is_demo": True,
        },
        {"role": "user", "content": CLASSIC_TASK, "agent": "primary"},
    ]
    steps = []
    for thought, action, observation in zip(
        CLASSIC_THOUGHTS, CLASSIC_ACTIONS, CLASSIC_OBSERVATIONS, strict=True
    ):
        response = f"{thought}\n```\n{action}\n```"
        history.append(
            {
                "role": "assistant",
                "content": response,
                "thought": thought,
                "action": action + "\n",
                "agent": "primary",
            }
        )
        history.append({"role": "user", "content": observation, "agent": "primary"})
        steps.append(
            {
                "response": response,
                "thought": thought,
                "action": action + "\n",
                "observation": observation,
                "state": "{}",
            }
        )
    return {
        "environment": "swe_main",
        "trajectory": steps,
        "history": history,
        "info": {
            "exit_status": "submitted",
            "submission": CLASSIC_OBSERVATIONS[-1],
            "model_stats": {"api_calls": 4},
        },
    }


def mini_swe_agent_traj(*, with_model: bool = True) -> dict[str, Any]:
    """A mini-swe-agent 1.1 trajectory: litellm message dicts with ``extra`` and an exit record."""
    config = {"model": {"model_name": "deepseek/deepseek-chat"}} if with_model else {}
    return {
        "info": {"model_stats": {"api_calls": 1}, "config": config, "exit_status": "Submitted"},
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": HUMAN},
            {
                "content": AGENT,
                "role": "assistant",
                "tool_calls": [
                    {
                        "index": 0,
                        "function": {"arguments": '{"command": "ls"}', "name": "bash"},
                        "id": "call_1",
                        "type": "function",
                    }
                ],
                "function_call": None,
                "provider_specific_fields": None,
                "extra": {"actions": [{"command": "ls", "tool_call_id": "call_1"}]},
            },
            {
                "content": "parser.py",
                "extra": {"raw_output": "parser.py"},
                "tool_call_id": "call_1",
                "role": "tool",
            },
            {"content": AGENT_END, "role": "assistant", "extra": {}},
            {
                "role": "exit",
                "content": "diff --git a/x b/x",
                "extra": {"exit_status": "Submitted", "submission": "diff"},
            },
        ],
        "trajectory_format": "mini-swe-agent-1.1",
        "instance_id": "repo__repo-1",
    }


def _tool_meta(name: str, call_id: str, response_id: str, total: int = 1) -> dict[str, Any]:
    return {
        "function_name": name,
        "tool_call_id": call_id,
        "model_response": {"id": response_id, "model": "claude-sonnet-4-5", "choices": []},
        "total_calls_in_response": total,
    }


def openhands_events() -> list[dict[str, Any]]:
    """An OpenHands 0.6x event list: system prompt, a user message, two parallel calls from one
    response, their observations, bookkeeping events, an agent message and a finish call."""
    return [
        {
            "id": 0,
            "timestamp": "2025-11-01T10:00:00",
            "source": "agent",
            "message": "",
            "action": "system",
            "args": {
                "content": "You are OpenHands agent.",
                "tools": [],
                "openhands_version": "0.62.0",
                "agent_class": "CodeActAgent",
            },
        },
        {
            "id": 1,
            "timestamp": "2025-11-01T10:00:01",
            "source": "user",
            "message": HUMAN,
            "action": "message",
            "args": {
                "content": HUMAN,
                "image_urls": [],
                "file_urls": [],
                "wait_for_response": False,
            },
        },
        {
            "id": 2,
            "timestamp": "2025-11-01T10:00:01",
            "source": "user",
            "message": "",
            "action": "recall",
            "args": {"recall_type": "workspace_context", "query": HUMAN},
        },
        {
            "id": 3,
            "timestamp": "2025-11-01T10:00:02",
            "source": "environment",
            "message": "",
            "observation": "agent_state_changed",
            "content": "",
            "extras": {"agent_state": "running"},
        },
        {
            "id": 4,
            "timestamp": "2025-11-01T10:00:03",
            "source": "agent",
            "message": "Running command: ls",
            "action": "run",
            "args": {"command": "ls", "is_input": False, "thought": AGENT, "blocking": False},
            "tool_call_metadata": _tool_meta("execute_bash", "toolu_a", "resp_1", 2),
        },
        {
            "id": 5,
            "timestamp": "2025-11-01T10:00:03",
            "source": "agent",
            "message": "Reading parser.py",
            "action": "read",
            "args": {"path": "/repo/parser.py", "thought": ""},
            "tool_call_metadata": _tool_meta("str_replace_editor", "toolu_b", "resp_1", 2),
        },
        {
            "id": 6,
            "timestamp": "2025-11-01T10:00:04",
            "source": "agent",
            "message": "Command finished",
            "cause": 4,
            "observation": "run",
            "content": "parser.py",
            "extras": {"command": "ls", "metadata": {"exit_code": 0}},
            "success": True,
            "tool_call_metadata": _tool_meta("execute_bash", "toolu_a", "resp_1", 2),
        },
        {
            "id": 7,
            "timestamp": "2025-11-01T10:00:04",
            "source": "agent",
            "message": "I read parser.py",
            "cause": 5,
            "observation": "read",
            "content": "def parse(): ...",
            "extras": {"path": "/repo/parser.py"},
            "tool_call_metadata": _tool_meta("str_replace_editor", "toolu_b", "resp_1", 2),
        },
        {
            "id": 8,
            "timestamp": "2025-11-01T10:00:05",
            "source": "agent",
            "message": AGENT_END,
            "action": "message",
            "args": {
                "content": AGENT_END,
                "image_urls": None,
                "file_urls": None,
                "wait_for_response": True,
            },
        },
        {
            "id": 9,
            "timestamp": "2025-11-01T10:00:06",
            "source": "agent",
            "message": "",
            "action": "finish",
            "args": {"final_thought": "Done.", "outputs": {}, "thought": ""},
            "tool_call_metadata": _tool_meta("finish", "toolu_c", "resp_2"),
        },
        {
            "id": 10,
            "timestamp": "2025-11-01T10:00:06",
            "source": "environment",
            "message": "",
            "action": "change_agent_state",
            "args": {"agent_state": "finished", "thought": ""},
        },
    ]


def gemini_session_jsonl() -> list[dict[str, Any]]:
    """A Gemini CLI 0.5x session: metadata, messages, a record rewritten, a rewind, an update."""
    return [
        {
            "sessionId": "s-1",
            "projectHash": "abc123",
            "startTime": "2026-08-01T10:00:00Z",
            "lastUpdated": "2026-08-01T10:00:00Z",
            "kind": "main",
        },
        {
            "id": "m1",
            "timestamp": "2026-08-01T10:00:01Z",
            "type": "user",
            "content": [{"text": "a question I take back"}],
        },
        {
            "id": "m2",
            "timestamp": "2026-08-01T10:00:02Z",
            "type": "gemini",
            "content": "an answer",
            "model": "gemini-2.5-pro",
        },
        {"$rewindTo": "m1"},
        {
            "id": "m3",
            "timestamp": "2026-08-01T10:00:03Z",
            "type": "user",
            "content": [{"text": HUMAN}],
        },
        {
            "id": "m4",
            "timestamp": "2026-08-01T10:00:04Z",
            "type": "info",
            "content": "Switched to fallback model.",
        },
        {
            "id": "m5",
            "timestamp": "2026-08-01T10:00:05Z",
            "type": "gemini",
            "content": "",
            "model": "gemini-2.5-pro",
        },
        {
            "id": "m5",
            "timestamp": "2026-08-01T10:00:05Z",
            "type": "gemini",
            "content": [{"text": AGENT}],
            "model": "gemini-2.5-pro",
            "thoughts": [
                {
                    "subject": "Reading",
                    "description": "Look at the parser.",
                    "timestamp": "2026-08-01T10:00:05Z",
                }
            ],
            "tokens": {
                "input": 900,
                "output": 20,
                "cached": 0,
                "thoughts": 10,
                "tool": 0,
                "total": 930,
            },
            "toolCalls": [
                {
                    "id": "read_file-1",
                    "name": "read_file",
                    "args": {"absolute_path": "/repo/parser.py"},
                    "result": [
                        {
                            "functionResponse": {
                                "id": "read_file-1",
                                "name": "read_file",
                                "response": {"output": "def parse(): ..."},
                            }
                        }
                    ],
                    "status": "success",
                    "timestamp": "2026-08-01T10:00:06Z",
                    "displayName": "ReadFile",
                },
                {
                    "id": "run_shell_command-2",
                    "name": "run_shell_command",
                    "args": {"command": "pytest"},
                    "result": [
                        {
                            "functionResponse": {
                                "id": "run_shell_command-2",
                                "name": "run_shell_command",
                                "response": {"error": "exit 1"},
                            }
                        }
                    ],
                    "status": "error",
                    "timestamp": "2026-08-01T10:00:07Z",
                },
            ],
        },
        {
            "id": "m6",
            "timestamp": "2026-08-01T10:00:08Z",
            "type": "gemini",
            "content": AGENT_END,
            "model": "gemini-2.5-pro",
        },
        {"$set": {"lastUpdated": "2026-08-01T10:00:08Z", "summary": "Fix the parser"}},
    ]


SESSION_CONTEXT = (
    "<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\n"
    "Today's date is Monday, March 2, 2026 (formatted according to the user's locale).\n"
    "My operating system is: linux\nThe project's temporary directory is: /home/u/.gemini/"
    "tmp/proj\n- **Workspace Directories:**\n  - /home/u/proj\n- **Directory Structure:**"
    "\n\nShowing up to 200 items (files + folders).\n\n/home/u/proj/\n├───README.md\n"
    "└───parser.py\n\n\n</session_context>"
)


def gemini_061_session_jsonl() -> list[dict[str, Any]]:
    """A Gemini CLI 0.61 session of one prompt and two tool calls, as its chat recording
    writes it (``chatRecordingService``, ``geminiChat``, bundled in @google/gemini-cli 0.61):
    the history set at start (``$set.messages``) holding the injected ``<session_context>``
    as a user message, the prompt, the model's calls (``toolCalls`` with their results), and
    each function response sent back recorded again as a synthetic ``user`` message whose
    only parts are ``functionResponse``."""

    def stamp(n: int) -> str:
        return f"2026-03-02T10:00:{n:02d}.000Z"

    def call(n: int, name: str, args: dict[str, Any], output: str) -> dict[str, Any]:
        response = {
            "functionResponse": {"id": f"{name}-{n}", "name": name, "response": {"output": output}}
        }
        return {
            "id": f"{name}-{n}",
            "name": name,
            "args": args,
            "result": [response],
            "status": "success",
            "timestamp": stamp(n),
            "displayName": name,
            "description": "",
            "renderOutputAsMarkdown": False,
        }

    calls = [
        call(3, "read_file", {"file_path": "README.md"}, "# proj\nA parser."),
        call(6, "read_file", {"file_path": "parser.py"}, "def parse(): ..."),
    ]
    context = {
        "id": "env-8c1b",
        "timestamp": stamp(1),
        "type": "user",
        "content": [{"text": SESSION_CONTEXT}],
    }
    tokens = {"input": 847, "output": 20, "cached": 0, "thoughts": 0, "tool": 0, "total": 867}
    records: list[dict[str, Any]] = [
        {
            "sessionId": "6f0c",
            "projectHash": "9a7e",
            "startTime": stamp(0),
            "lastUpdated": stamp(0),
            "kind": "main",
        },
        {"$set": {"messages": [context], "lastUpdated": stamp(1)}},
        {"id": "u-1", "timestamp": stamp(2), "type": "user", "content": [{"text": HUMAN}]},
        {"$set": {"lastUpdated": stamp(2)}},
    ]
    for n, (record, text) in enumerate(zip(calls, (AGENT, "Now the parser."), strict=True)):
        gemini = {
            "id": f"g-{n}",
            "timestamp": record["timestamp"],
            "type": "gemini",
            "content": text,
            "thoughts": [],
            "tokens": tokens,
            "model": "gemini-3-pro-preview",
        }
        records.append(gemini)
        records.append({**gemini, "toolCalls": [record]})
        records.append(
            {
                "id": f"r-{n}",
                "timestamp": record["timestamp"],
                "type": "user",
                "content": record["result"],
            }
        )
        records.append({"$set": {"lastUpdated": record["timestamp"]}})
    records.append(
        {
            "id": "g-end",
            "timestamp": stamp(9),
            "type": "gemini",
            "content": AGENT_END,
            "thoughts": [],
            "tokens": tokens,
            "model": "gemini-3-pro-preview",
        }
    )
    return records


def gemini_contents() -> list[dict[str, Any]]:
    """Gemini API Content, as ``/chat save`` and ``/restore`` checkpoints hold it."""
    return [
        {"role": "user", "parts": [{"text": HUMAN}]},
        {
            "role": "model",
            "parts": [
                {"text": "Reading the parser", "thought": True},
                {"text": AGENT},
                {
                    "functionCall": {
                        "name": "read_file",
                        "args": {"absolute_path": "/repo/parser.py"},
                    }
                },
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "read_file",
                        "response": {"output": "def parse(): ..."},
                    }
                }
            ],
        },
        {"role": "model", "parts": [{"text": AGENT_END}]},
    ]


def write_json(path: Path, value: Any, *, indent: int | None = 2) -> Path:
    path.write_text(json.dumps(value, indent=indent))
    return path


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _text_part(text: str) -> dict[str, Any]:
    return {"cache_prompt": False, "type": "text", "text": text}


def openhands_v1_events() -> list[dict[str, Any]]:
    """OpenHands 1.x (software-agent-sdk) events: ``kind``-tagged, parallel calls by response."""

    def action(n: int, call_id: str, name: str, args: str, thought: str) -> dict[str, Any]:
        return {
            "kind": "ActionEvent",
            "id": f"e{n}",
            "timestamp": f"2026-08-01T10:00:0{n}",
            "source": "agent",
            "thought": [_text_part(thought)] if thought else [],
            "reasoning_content": None,
            "thinking_blocks": [{"type": "thinking", "thinking": "plan", "signature": "s"}]
            if thought
            else [],
            "action": {"kind": "TerminalAction", "command": "ls"},
            "tool_name": name,
            "tool_call_id": call_id,
            "tool_call": {"id": call_id, "name": name, "arguments": args, "origin": "completion"},
            "llm_response_id": "resp-1",
            "security_risk": "LOW",
        }

    def observation(n: int, call_id: str, name: str, text: str, error: bool) -> dict[str, Any]:
        return {
            "kind": "ObservationEvent",
            "id": f"e{n}",
            "timestamp": f"2026-08-01T10:00:0{n}",
            "source": "environment",
            "tool_name": name,
            "tool_call_id": call_id,
            "observation": {
                "kind": "TerminalObservation",
                "content": [_text_part(text)],
                "is_error": error,
            },
            "action_id": "e3",
        }

    return [
        {
            "kind": "SystemPromptEvent",
            "id": "e0",
            "timestamp": "2026-08-01T10:00:00",
            "source": "agent",
            "system_prompt": _text_part("You are OpenHands agent."),
            "tools": [],
        },
        {
            "kind": "MessageEvent",
            "id": "e1",
            "timestamp": "2026-08-01T10:00:01",
            "source": "user",
            "llm_message": {"role": "user", "content": [_text_part(cases_human())]},
            "activated_skills": [],
            "extended_content": [_text_part("<REPOSITORY_INFO>repo</REPOSITORY_INFO>")],
        },
        {
            "kind": "ConversationStateUpdateEvent",
            "id": "e2",
            "timestamp": "2026-08-01T10:00:02",
            "source": "environment",
            "key": "execution_status",
            "value": "running",
        },
        action(3, "call_a", "terminal", '{"command": "ls"}', AGENT),
        action(4, "call_b", "file_editor", '{"command": "view", "path": "/repo/parser.py"}', ""),
        observation(5, "call_a", "terminal", "parser.py", False),
        observation(6, "call_b", "file_editor", "no such file", True),
        {
            "kind": "MessageEvent",
            "id": "e7",
            "timestamp": "2026-08-01T10:00:07",
            "source": "agent",
            "llm_message": {"role": "assistant", "content": [_text_part(AGENT_END)]},
            "llm_response_id": "resp-2",
            "activated_skills": [],
            "extended_content": [],
        },
    ]


def cases_human() -> str:
    return HUMAN


def cline_text_results() -> list[dict[str, Any]]:
    """Cline 3.x with native tool calls: results it could not tie to an id written as text."""
    return [
        {
            "role": "user",
            "content": [{"type": "text", "text": f"<task>\n{HUMAN}\n</task>"}],
            "ts": 1764000000000,
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": AGENT, "call_id": "r1"},
                {
                    "type": "tool_use",
                    "id": "tooluse_a",
                    "name": "read_file",
                    "input": {"path": "parser.py"},
                    "call_id": "r1",
                },
                {
                    "type": "tool_use",
                    "id": "tooluse_b",
                    "name": "ask_followup_question",
                    "input": {"question": "Run the tests?"},
                    "call_id": "r1",
                },
            ],
            "modelInfo": {"modelId": "claude-sonnet-4-5", "providerId": "anthropic", "mode": "act"},
            "ts": 1764000001000,
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "[read_file for 'parser.py'] Result:\ndef parse(): ..."},
                {
                    "type": "text",
                    "text": "[ask_followup_question for 'Run the tests?'] Result:\n"
                    "<answer>\nyes, all of them\n</answer>",
                },
                {"type": "text", "text": "# TODO LIST UPDATE REQUIRED - update task_progress"},
                {
                    "type": "text",
                    "text": "<environment_details>\n# cwd: /repo\n</environment_details>",
                },
            ],
            "ts": 1764000002000,
        },
        {
            "role": "assistant",
            "content": [{"type": "text", "text": AGENT_END}],
            "ts": 1764000003000,
        },
    ]
