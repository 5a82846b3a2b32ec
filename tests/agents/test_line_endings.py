"""Install and uninstall keep each file's line endings and byte order mark, and Gemini's comments:
what install adds uses the file's own newline, and uninstall gives every file back byte for byte,
for CRLF, LF and mixed files, with or without a BOM (and, for Gemini's JSON with comments,
comments anywhere a person writes them)."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ipse.agents import _jsonedit as jsonedit
from ipse.agents import install_agent, uninstall_agent
from ipse.errors import InputError
from tests.agents.test_install_agents import snapshot

ENDINGS = st.sampled_from(["lf", "crlf", "mixed"])


def _endings(text: str, style: str, flips: list[bool]) -> str:
    """``text`` (LF) with CRLF everywhere, or on the lines ``flips`` picks (mixed)."""
    if style == "lf":
        return text
    if style == "crlf":
        return text.replace("\n", "\r\n")
    lines = text.split("\n")
    picked = [(flips[i % len(flips)] if flips else True) for i in range(len(lines) - 1)]
    out = [line + ("\r\n" if crlf else "\n") for line, crlf in zip(lines, picked, strict=False)]
    return "".join(out) + lines[-1]


def _bytes(text: str) -> bytes:
    return text.encode("utf-8")


def _lf_only_added(before: bytes, after: bytes) -> bool:
    """Whether a CRLF file (every line CRLF before) got a bare LF from install."""
    return (
        b"\r\n" in before
        and before.count(b"\n") == before.count(b"\r\n")
        and (after.count(b"\n") != after.count(b"\r\n"))
    )


JSON_DOCS = st.dictionaries(
    st.sampled_from(["model", "theme", "env", "permissions", "mcpServers"]),
    st.none() | st.integers() | st.text(max_size=4) | st.just({"other": {"command": "x"}}),
    max_size=4,
)
COMMENTS = st.sampled_from(
    [
        None,
        "// my settings\n{BODY}",
        "{BODY}\n// trailing note",
        "/* block\n   comment */\n{BODY}",
    ]
)


def _json_file(value: dict[str, Any], indent: Any, comment: str | None) -> str:
    body = json.dumps(value, indent=indent)
    if comment is None:
        return body + "\n"
    text = comment.replace("{BODY}", body)
    if "\n" in body and "{\n" in body:  # a comment between members too
        text = text.replace("{\n", "{\n  // why: keep this\n", 1)
    return text + "\n"


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    agent=st.sampled_from(["claude-code", "gemini", "codex"]),
    proxy=st.booleans(),
    config=JSON_DOCS,
    indent=st.sampled_from([2, 4, "\t", None]),
    comment=COMMENTS,
    ending=ENDINGS,
    flips=st.lists(st.booleans(), min_size=1, max_size=5),
    bom=st.booleans(),
    doc=st.sampled_from([None, "# Notes\n\nBuild with make.\n", "# Notes", "a\n\n"]),
    toml=st.sampled_from(
        [
            None,
            '# my codex config\nmodel = "o4"  # a comment\n\n[tui]\nnotifications = true\n',
            "# only a comment\n",
            '[projects."/w"]\ntrust_level = "trusted"',
        ]
    ),
)
def test_install_then_uninstall_keeps_endings_bom_and_comments(
    agent: str,
    proxy: bool,
    config: dict[str, Any],
    indent: Any,
    comment: str | None,
    ending: str,
    flips: list[bool],
    bom: bool,
    doc: str | None,
    toml: str | None,
) -> None:
    proxy = proxy and agent != "gemini"
    comment = comment if agent == "gemini" else None  # Gemini CLI reads JSON with comments
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as patch:
        project, home = Path(folder) / "p", Path(folder) / "h"
        project.mkdir()
        home.mkdir()
        patch.setenv("HOME", str(home))
        for name in ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "GEMINI_CLI_HOME"):
            patch.delenv(name, raising=False)

        def put(path: Path, text: str | None) -> None:
            if text is None:
                return
            text = ("\ufeff" if bom else "") + _endings(text, ending, flips)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(_bytes(text))

        if agent == "codex":
            put(home / ".codex" / "config.toml", toml)
            put(project / "AGENTS.md", doc)
        else:
            folder_name = ".gemini" if agent == "gemini" else ""
            config_path = project / (f"{folder_name}/settings.json" if folder_name else ".mcp.json")
            put(config_path, _json_file(config, indent, comment))
            put(project / ("GEMINI.md" if agent == "gemini" else "CLAUDE.md"), doc)
            if agent == "claude-code":
                put(project / ".claude" / "settings.json", _json_file(config, indent, None))
        before = snapshot(project, home)
        try:
            install_agent(agent, project, proxy=proxy, port=9876)
        except InputError:  # a value ipse would have to overwrite: refused, nothing written
            assert snapshot(project, home) == before
            return
        installed = snapshot(project, home)
        for path, data in installed.items():
            old = before.get(path)
            if data is None or old is None:
                continue
            assert not _lf_only_added(old, data), (path, data)
            if old.startswith(b"\xef\xbb\xbf"):
                assert data.startswith(b"\xef\xbb\xbf"), path
            if path.endswith(".json"):
                jsonedit.parse(data.decode(), comments=agent == "gemini")
        install_agent(agent, project, proxy=proxy, port=9876)
        assert snapshot(project, home) == installed  # idempotent
        uninstall_agent(agent, project)
        assert snapshot(project, home) == before


def test_a_crlf_agents_md_and_config_toml_keep_crlf(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shapes the issue met: CRLF AGENTS.md and a commented CRLF config.toml."""
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    config = tmp_path / "codex" / "config.toml"
    config.parent.mkdir()
    config.write_bytes(b'# mine\r\nmodel = "o4"  # keep\r\n\r\n[tui]\r\nnotifications = true\r\n')
    agents = tmp_path / "AGENTS.md"
    agents.write_bytes(b"# Project\r\n\r\nRun make.\r\n")
    before = {p: p.read_bytes() for p in (config, agents)}
    install_agent("codex", tmp_path, proxy=True)
    for path in (config, agents):
        data = path.read_bytes()
        assert data.count(b"\n") == data.count(b"\r\n"), data
    assert re.search(rb'model_provider = "ipse"  # ipse\r\n', config.read_bytes())
    uninstall_agent("codex", tmp_path)
    assert {p: p.read_bytes() for p in (config, agents)} == before
