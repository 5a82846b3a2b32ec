"""The micro-handoff on the wire: a provider request's bytes in, the handed-off bytes out.

What a proxy or an SDK hook calls, not what a reader of transcripts needs: `rewrite_request`
hands off a request body at its newest checkpoint call (`Rewrite` says what it did);
`conversation_key` is the key a request's conversation is cached and counted under (the
harness's session header, `SESSION_HEADER` for Claude Code, else the body); `binds_thinking`
says whether a model binds thinking to its prefix; `clear_cache` forgets the cached rewritten
prefixes (for measuring the cold path). `CHECKPOINT_TOOLS`: the tool names a proxy or hook
recognises as the checkpoint by default; `DEFAULT_MAX_TOKENS`: the ``max_tokens`` a handed-off
Anthropic body without one is given.

The autopilot on the wire: `autopilot_request` plans a body's conversation and writes the plan
into it (`AutopilotRewrite` says what it did: a nudge, a cut, nothing, and why); `autopilot_cut`
and `place_nudges` are the two writes it makes, which ``ipse replay`` makes alike.
"""

from __future__ import annotations

from ipse.handoff._autopilot_body import AutopilotRewrite, autopilot_request
from ipse.handoff._autopilot_parts import autopilot_cut, could_act, item_starts, place_nudges
from ipse.handoff._recognise import CHECKPOINT_TOOLS
from ipse.handoff._rewrite import (
    SESSION_HEADER,
    Rewrite,
    binds_thinking,
    clear_cache,
    conversation_key,
    rewrite_request,
)
from ipse.handoff._run import DEFAULT_MAX_TOKENS

__all__ = [
    "CHECKPOINT_TOOLS",
    "DEFAULT_MAX_TOKENS",
    "SESSION_HEADER",
    "AutopilotRewrite",
    "Rewrite",
    "autopilot_cut",
    "autopilot_request",
    "binds_thinking",
    "clear_cache",
    "conversation_key",
    "could_act",
    "item_starts",
    "place_nudges",
    "rewrite_request",
]
