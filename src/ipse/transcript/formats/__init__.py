"""Format adapters, one module per format: each reads into the neutral model, and
``anthropic`` and ``openai_chat`` also write back."""
