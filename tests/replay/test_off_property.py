"""With the autopilot off, the replay's policy side is the session as recorded: at the recorded
prices it bills exactly what ``ipse prefix``'s replay bills for the same session, and as the
cache model prices it, exactly what the model makes of the session, whatever the session
(requests with and without usage, 5-minute and 1-hour writes, idle gaps, compactions)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ipse.handoff._autopilot import AutopilotPolicy
from ipse.prefix import analyze, read_requests
from ipse.replay import ReplayOptions, document, replay_log
from tests.prefix.sessions import Session, text, tool_use, usage

from .build import bodies, log_of

OFF = ReplayOptions(policy=AutopilotPolicy(mode="off"), continuity=False)
GAPS = st.sampled_from([3.0, 90.0, 299.0, 301.0, 3_000.0, 4_000.0])


def _usage(read: int, write: int, uncached: int, hour: bool) -> dict[str, Any]:
    return usage(read, write, uncached, hour=hour)


@st.composite
def _logged(draw: st.DrawFn) -> Any:
    turns = draw(st.integers(1, 4))
    sent = bodies(turns, draw(st.integers(200, 12_000)))
    gaps = {i: draw(GAPS) for i in range(1, len(sent))}
    recorded = draw(st.booleans())
    used = [
        _usage(
            draw(st.integers(0, 30_000)),
            draw(st.integers(0, 30_000)),
            draw(st.integers(0, 500)),
            draw(st.booleans()),
        )
        if recorded or draw(st.booleans())
        else None
        for _ in sent
    ]
    return log_of(sent, gaps, used)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_logged())
def test_off_bills_what_the_prefix_replay_bills(log: Any) -> None:
    expected = analyze(log.requests).summary()["cost_usd"]
    found = document(replay_log(log, OFF))
    assert found["recorded"]["input_usd"] == expected
    assert found["with_policy_at_recorded"]["input_usd"] == expected
    assert found["with_policy"] == found["recorded_as_modelled"]
    assert found["ratio"]["input"] in (1.0, None)
    assert found["cuts"] == [] and found["nudges"] == 0


@st.composite
def _session(draw: st.DrawFn) -> Session:
    s = Session()
    total = draw(st.integers(1_000, 5_000))
    for n in range(draw(st.integers(1, 5))):
        s.user(f"task {n} " * draw(st.integers(1, 40)), after=draw(GAPS))
        total += draw(st.integers(100, 9_000))
        s.assistant(tool_use(f"c{n}"), usage(total - 200, 200, hour=draw(st.booleans())),
                    message_id=f"m{n}a")  # fmt: skip
        s.result(f"c{n}", "output " * draw(st.integers(1, 400)))
        total += draw(st.integers(100, 9_000))
        s.assistant(text(f"done {n}"), usage(total - 150, 150), message_id=f"m{n}b")
        if draw(st.integers(0, 4)) == 0:
            s.compact()
            total = draw(st.integers(1_000, 5_000))
    return s


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_session())
def test_off_bills_what_the_prefix_replay_bills_on_sessions(session: Session) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = session.write(Path(folder) / "session.jsonl")
        log = read_requests(path)
        expected = analyze(log.requests, warnings=log.warnings).summary()["cost_usd"]
        found = document(replay_log(log, OFF, session=path))
    assert found["with_policy_at_recorded"]["input_usd"] == expected
    assert found["recorded"]["input_usd"] == expected
    assert found["with_policy"] == found["recorded_as_modelled"]
    assert found["requests"]["compaction_calls_dropped"] == []
    assert found["requests"]["compactions_prevented"] == []
