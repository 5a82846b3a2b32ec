"""Format adapters, one module per format: each reads into the neutral model. ``anthropic``,
``openai_chat`` and ``openai_responses`` also write back; the harness readers (``claude_code``,
``codex``, ``cline``, ``swe_agent``) give conversations in one of those dialects, so they write
back through its codec; ``openhands`` and ``gemini_cli`` conversations are read only. Which
module reads which format, and how each is recognised, is the format table's
(`ipse.transcript._table`)."""
