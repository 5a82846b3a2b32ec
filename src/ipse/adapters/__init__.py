"""In-process adapters: the micro-handoff and the twins inside agent frameworks, without a proxy.

One public module per framework, each an optional extra that imports its framework when the
module itself is imported (importing ``ipse.adapters`` imports none of them); a missing framework
raises `MissingExtra` naming the extra to install:

- ``ipse.adapters.langchain`` (``ipse[langchain]``): LangChain v1 agent middleware.
- ``ipse.adapters.openai_agents`` (``ipse[openai-agents]``): an OpenAI Agents SDK session.
- ``ipse.adapters.anthropic`` (``ipse[anthropic]``): Anthropic SDK client middleware.
- ``ipse.adapters.litellm`` (``ipse[litellm]``): a LiteLLM gateway hook (a ``CustomLogger``
  named in the gateway's ``config.yaml``), with the proxy's bookkeeping.

The adapters are thin: they translate the framework's messages to and from the neutral
`ipse.transcript.Conversation` and call the library pipeline (`ipse.handoff.run`,
`ipse.twin.apply_turn`, `ipse.twin.rehydrate`); they never strip, verify or archive themselves.
"""

from __future__ import annotations

__all__: list[str] = []
