"""``ipse twin`` without reading the code: init, the transitions as tools, the operations in
``apply --help``, the config's id, and changes outside the identity fields said out loud."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ipse.twin import anthropic_tools, openai_tools
from ipse.twin._tools import TOOL_SPECS
from ipse.twin._transitions import OPS


def ipse(*args: str, stdin: str | None = None, cwd: Path | None = None) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "ipse.cli.main", *args],
        capture_output=True,
        text=True,
        input=stdin,
        cwd=cwd,
        env=os.environ.copy(),
        timeout=60,
    )


@pytest.fixture
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'twins.db'}"


def test_every_operation_is_a_tool_and_listed_with_its_arguments_in_apply_help() -> None:
    assert sorted(name for name, _, _ in TOOL_SPECS) == sorted(OPS)
    shown = ipse("twin", "apply", "--help")
    assert shown.returncode == 0
    for name, _, schema in TOOL_SPECS:
        line = next(x for x in shown.stdout.splitlines() if x.strip().startswith(name + " "))
        for argument in schema["properties"]:
            assert argument in line


@pytest.mark.parametrize("fmt", ["anthropic", "openai"])
def test_twin_tools_prints_the_definitions(fmt: str) -> None:
    shown = ipse("twin", "tools", "--format", fmt)
    assert shown.returncode == 0, shown.stderr
    expected = anthropic_tools() if fmt == "anthropic" else openai_tools()
    assert json.loads(shown.stdout) == expected


def test_init_writes_the_config_and_a_cold_start_then_refuses_a_second_time(
    tmp_path: Path, store: str
) -> None:
    config = tmp_path / "twin.toml"
    first = ipse(
        "twin",
        "init",
        "acme-ada",
        "--config",
        str(config),
        "--role",
        "You are Ada [b]x[/b]",
        "--counterparty",
        "dana@example.com",
        "--store",
        store,
        "--json",
    )
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["version"] == 1
    assert json.loads(first.stdout)["wrote_config"] is True
    import tomllib

    doc = tomllib.loads(config.read_text())
    assert doc["id"] == "acme-ada" and doc["role"] == "You are Ada [b]x[/b]"
    shown = json.loads(ipse("twin", "show", "acme-ada", "--store", store, "--json").stdout)
    assert shown["version"] == 1
    again = ipse("twin", "init", "--config", str(config), "--store", store)
    assert again.returncode == 2
    assert "already exists" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1


def test_init_without_an_id_or_role_for_a_new_config_is_a_usage_error(
    tmp_path: Path, store: str
) -> None:
    result = ipse("twin", "init", "--config", str(tmp_path / "new.toml"), "--store", store)
    assert result.returncode == 2
    assert not (tmp_path / "new.toml").exists()


def test_apply_takes_the_twin_id_from_the_config(tmp_path: Path, store: str) -> None:
    config = tmp_path / "twin.toml"
    config.write_text('id = "acme-7"\nrole = "You are Ada."\n')
    line = json.dumps({"op": "establish_fact", "text": "Prefers email"})
    result = ipse(
        "twin", "apply", "--config", str(config), "-", "--store", store, "--json", stdin=line
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["twin_id"] == "acme-7"
    bare = ipse("twin", "apply", "-", "--store", store, stdin=line)
    assert bare.returncode == 2
    assert "TWIN_ID" in bare.stderr


def test_a_change_outside_the_identity_fields_is_reported_not_silently_dropped(
    tmp_path: Path, store: str
) -> None:
    config = tmp_path / "twin.toml"
    config.write_text('id = "x"\nrole = "r"\n[identity]\nfields = ["facts"]\n')
    first = json.dumps({"op": "establish_fact", "text": "Prefers email"})
    assert ipse("twin", "apply", "--config", str(config), "-", "--store", store, stdin=first)
    later = json.dumps({"op": "make_commitment", "text": "Call back on Monday"})
    result = ipse(
        "twin", "apply", "--config", str(config), "-", "--store", store, "--json", stdin=later
    )
    document = json.loads(result.stdout)
    assert document["written"] is False
    assert document["ignored_fields"] == ["commitments"]
    human = ipse("twin", "apply", "--config", str(config), "-", "--store", store, stdin=later)
    assert "[identity]" in human.stdout and "commitments" in human.stdout
