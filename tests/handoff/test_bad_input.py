"""Bad input: a clear one-line message, exit 2, no output file, nothing archived."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ipse.errors import CutError, InvalidConversation, UsageError
from ipse.handoff import strip
from tests.conftest import OPENAI_TRAJ, SHARED, run_cli
from tests.handoff.build import anthropic_conv, assistant, call, result, text, user


def _write(tmp_path: Path, messages: list[dict[str, object]]) -> Path:
    path = tmp_path / "in.json"
    path.write_text(json.dumps({"model": "m", "messages": messages}))
    return path


GOOD = [
    user(text("go")),
    assistant(text("ok"), call("t1")),
    user(result("t1")),
    assistant(text("done")),
]


@pytest.mark.parametrize("at", [-1, 5, 99])
def test_cut_out_of_range(at: int) -> None:
    with pytest.raises(CutError, match="out of range"):
        strip(anthropic_conv(*GOOD), at)


def test_checkpoint_tool_that_never_appears() -> None:
    with pytest.raises(CutError, match="no call of the checkpoint tool 'micro_handoff'"):
        strip(anthropic_conv(*GOOD))


def test_end_cuts_after_every_message() -> None:
    after, report = strip(anthropic_conv(*GOOD), "end")
    assert report.cut == 4 and report.cut_kind == "end" and len(after.messages) == 2


@pytest.mark.parametrize("at", ["yesterday", "³", "--3", "+3", "1.5", "-"])
def test_bad_at_value(at: str) -> None:
    with pytest.raises(UsageError):
        strip(anthropic_conv(*GOOD), at)


@pytest.mark.parametrize(("at", "cut"), [(" 2 ", 2), ("04", 4), ("0", 0)])
def test_at_index_as_text(at: str, cut: int) -> None:
    assert strip(anthropic_conv(*GOOD), at)[1].requested_cut == cut


def test_orphan_result_before_the_cut_is_removed_and_archived() -> None:
    out, report = strip(anthropic_conv(user(result("ghost")), *GOOD[1:]), "now")
    orphan = [r for r in report.removed if r.id == "ghost"]
    assert len(orphan) == 1 and orphan[0].result is not None
    assert out.messages[0].role == "user"  # a harness line opens what only results opened
    assert not any(b.kind == "tool_result" for m in out.messages for b in m.blocks)


def test_orphan_result_after_the_cut_is_refused() -> None:
    with pytest.raises(InvalidConversation, match="orphan_result"):
        strip(anthropic_conv(*GOOD, user(result("ghost")), assistant(text("x"))), 2)


def test_invalid_before_stripping() -> None:
    messages = [user(text("go")), {"role": "robot", "content": "x"}, *GOOD[1:]]
    with pytest.raises(InvalidConversation, match="invalid before stripping"):
        strip(anthropic_conv(*messages), "now")


def test_empty_conversation() -> None:
    with pytest.raises(InvalidConversation):
        strip(anthropic_conv(), "now")


def _run(args: list[str]) -> tuple[int, str]:
    result = run_cli(*args)
    if result.returncode:
        assert result.stderr.count("\n") == 1, result.stderr
        return result.returncode, result.stderr.removesuffix("\n")
    return 0, result.stdout


@pytest.mark.parametrize(
    ("messages", "args", "message"),
    [
        (GOOD, ["--at", "99"], "out of range"),
        (GOOD, [], "no call of the checkpoint tool"),
        ([*GOOD, user(result("ghost"))], ["--at", "now"], "has no matching"),
        (
            [user(text("go")), {"role": "robot", "content": "x"}, *GOOD[1:]],
            ["--at", "end"],
            "invalid",
        ),
    ],
)
def test_cli_bad_input_exits_2_without_output_or_archive(
    tmp_path: Path, messages: list[dict[str, object]], args: list[str], message: str
) -> None:
    source = _write(tmp_path, messages)
    out = tmp_path / "out.json"
    code, text_ = _run(["handoff", str(source), "-o", str(out), *args])
    assert code == 2 and message in text_ and "\n" not in text_
    assert not out.exists()
    home = Path(__import__("os").environ["IPSE_HOME"])
    assert not (home / "ipse.db").exists()


@SHARED
def test_cli_trajectory_read_as_a_raw_chat_body_refuses_its_exit_record(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    args = ["handoff", str(OPENAI_TRAJ), "--format", "openai-chat", "--at", "end", "-o", str(out)]
    code, message = _run(args)
    assert code == 2 and "role 'exit'" in message and not out.exists()


def test_cli_missing_file(tmp_path: Path) -> None:
    code, message = _run(["handoff", str(tmp_path / "nope.json")])
    assert code == 2 and "no such file" in message
