"""What the autopilot would have done to a recorded session, priced: ``ipse replay``.

`replay_session` reads a session (Claude Code, sub-agents included; a Codex rollout; a log of
requests such as the proxy's record), sends its requests through the autopilot's policy offline
(`ipse.handoff.plan_autopilot`) at their recorded times, and prices both sides with the prefix
replay (`ipse.prefix.analyze`: the provider's cache rules and the model's prices); `document`
is what ``ipse replay --json`` prints: the bill as recorded and with the policy, the cache, the
context's size, the nudges and cuts, what each cut keeps (`ipse.probe`), the targets, and why a
session falls short of half its conversation's cost.
"""

from __future__ import annotations

from ipse.replay._document import document
from ipse.replay._replay import Replayed, ReplayOptions, replay_log, replay_session

__all__ = ["ReplayOptions", "Replayed", "document", "replay_log", "replay_session"]
