"""The micro-handoff on the wire: a provider request's bytes in, the handed-off bytes out.

What a proxy or an SDK hook calls, not what a reader of transcripts needs: `rewrite_request`
hands off a request body at its newest checkpoint call (`Rewrite` says what it did). What the
proxy uses besides (the key a request's conversation is cached and counted under, the tool
names recognised as the checkpoint by default, whether a model binds thinking to its prefix,
forgetting the cached rewritten prefixes) is in ``ipse.handoff._shared``.

The autopilot on the wire: `autopilot_request` plans a body's conversation and writes the plan
into it (`AutopilotRewrite` says what it did: a nudge, a cut, nothing, and why); the two writes
it makes, which ``ipse replay`` makes alike, are in ``ipse.handoff._shared``.
"""

from __future__ import annotations

from ipse.handoff._autopilot_body import AutopilotRewrite, autopilot_request
from ipse.handoff._rewrite import Rewrite, rewrite_request

__all__ = ["AutopilotRewrite", "Rewrite", "autopilot_request", "rewrite_request"]
