"""Fixtures for the adapter tests: the real llama.cpp server with SmolLM2 (``IPSE_TEST_MODEL``
names the gguf file; ``../shared/tools/llama-server`` the binary). Without them the tests that
need the server skip, saying why, unless ``IPSE_REQUIRE_CLIENTS`` is set (CI), where they fail."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.llama import llama_server, model_path


@pytest.fixture(scope="session")
def llama() -> Iterator[str]:
    """The base URL of a real llama-server with SmolLM2, one per test session."""
    with llama_server(model_path()) as url:
        yield url
