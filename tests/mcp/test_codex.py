"""The real Codex CLI with ``ipse mcp``: Codex does not wait for a slow server, so the tools are
in its first request only when the server answers at once (the SDK's server lost that race:
the request went out with Codex's own tools alone)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import ipse
from tests.support.clients import codex_binary
from tests.support.openai_upstream import openai_upstream

SOURCE = Path(ipse.__file__).resolve().parents[1]
OURS = [
    "micro_handoff",
    "recall",
    "state_resume",
    "state_next",
    "state_invariant",
    "state_checkpoint",
]


def test_the_first_request_already_carries_the_tools(tmp_path: Path, _isolated_home: Path) -> None:
    codex = codex_binary()
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    for run in range(3):
        with openai_upstream(["Hi."]) as upstream:
            (codex_home / "config.toml").write_text(
                'model = "gpt-5"\nmodel_provider = "scripted"\n\n'
                "[model_providers.scripted]\n"
                f'name = "scripted"\nbase_url = "{upstream.url}/v1"\n'
                'wire_api = "responses"\nenv_key = "OPENAI_API_KEY"\n\n'
                f'[mcp_servers.ipse]\ncommand = "{sys.executable}"\nargs = ["-m", "ipse", "mcp"]\n'
                # Codex hands its servers a few variables only: this checkout's ipse and home
                f'env = {{ PYTHONPATH = "{SOURCE}", IPSE_HOME = "{_isolated_home}" }}\n'
            )
            env = {
                **os.environ,
                "HOME": str(tmp_path),
                "CODEX_HOME": str(codex_home),
                "OPENAI_API_KEY": "sk-test",
            }
            done = subprocess.run(
                [codex, "exec", "--skip-git-repo-check", "Say hi."],
                env=env,
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=180,
            )
            bodies = upstream.bodies("/responses")
        assert done.returncode == 0, done.stderr
        first = bodies[0].get("tools", [])
        spaces = [t for t in first if t.get("name") == "mcp__ipse"]
        assert spaces, (run, [t.get("name") for t in first])
        assert sorted(t["name"] for t in spaces[0]["tools"]) == sorted(OURS)
