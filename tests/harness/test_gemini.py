"""The real Gemini CLI connects to the server ``ipse install --agent gemini`` registered, with
the user's virtual environment not active."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import CliRun
from tests.support.clients import gemini_binary


def test_gemini_connects_to_the_installed_server(
    cli: CliRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gemini = gemini_binary()
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    done = cli("install", "--agent", "gemini", cwd=project)
    assert done.returncode == 0, done.stderr
    # Gemini CLI loads a project's servers only in a folder the user trusts
    trusted = {str(project.resolve()): "TRUST_FOLDER"}
    (home / ".gemini").mkdir()
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps(trusted))
    node = os.path.dirname(shutil.which("node") or "/usr/bin/node")
    env = {"HOME": str(home), "PATH": f"/usr/bin:/bin:{node}"}  # no virtual environment
    listed = subprocess.run(
        [gemini, "mcp", "list"], env=env, cwd=project, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    output = listed.stdout + listed.stderr
    line = next((ln for ln in output.splitlines() if "ipse:" in ln), output)
    assert "Connected" in line, output
