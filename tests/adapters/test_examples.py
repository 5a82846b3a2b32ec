"""The adapters' examples run as they are, configured only by the SDKs' usual environment
variables, here pointing at the real llama-server."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

EXAMPLES = [
    ("anthropic_handoff.py", "anthropic", {"ANTHROPIC_BASE_URL": "{url}"}),
    ("langchain_handoff.py", "langchain_anthropic", {"ANTHROPIC_BASE_URL": "{url}"}),
    ("openai_agents_handoff.py", "agents", {"OPENAI_BASE_URL": "{url}/v1"}),
]


@pytest.mark.parametrize(("example", "needs", "variables"), EXAMPLES)
def test_the_example_runs_against_the_server_the_variables_name(
    llama: str, example: str, needs: str, variables: dict[str, str]
) -> None:
    pytest.importorskip(needs)
    env = {**os.environ, "ANTHROPIC_API_KEY": "test", "OPENAI_API_KEY": "test"}
    env.update({k: v.format(url=llama) for k, v in variables.items()})
    done = subprocess.run(
        [sys.executable, str(REPO / "examples" / example), "Say hello."],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip()
