"""``ipse twin`` as the executable runs it: JSON output, exit codes, nothing stored on bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import CliResult, run_cli

ROLE = "You are Ada, Acme's support twin."


def ipse(*args: str, env: dict[str, str] | None = None) -> CliResult:
    return run_cli(*args, env=env)


def ok_json(*args: str) -> Any:
    result = ipse(*args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture
def setup(tmp_path: Path) -> dict[str, str]:
    url = f"sqlite:///{tmp_path / 'ipse.db'}"
    (tmp_path / "twin.toml").write_text(f'role = "{ROLE}"\n[decay]\nmax_facts = 5\n')
    (tmp_path / "turn.jsonl").write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"op": "set_counterparty", "account": "Dana Reyes"},
                {"op": "establish_fact", "text": "prefers email"},
                {"op": "make_commitment", "text": "keep replies short"},
                {"op": "open_loop", "text": "confirm refund 2231"},
            ]
        )
        + "\n\n"
    )
    return {"url": url, "dir": str(tmp_path)}


def test_apply_show_history_rehydrate_export(setup: dict[str, str]) -> None:
    url, d = setup["url"], setup["dir"]
    first = ok_json(
        "twin", "apply", "ada", f"{d}/turn.jsonl", "--store", url, "--config", f"{d}/twin.toml"
    )
    assert first["written"] is True and first["version"] == 1
    again = ok_json("twin", "apply", "ada", f"{d}/turn.jsonl", "--store", url)
    assert again["written"] is False and again["version"] == 1
    shown = ok_json("twin", "show", "ada", "--store", url)
    assert shown["version"] == 1 and shown["state"]["counterparty"]["account"] == "Dana Reyes"
    history = ok_json("twin", "history", "ada", "--store", url)
    assert [s["version"] for s in history["snapshots"]] == [1]
    r = ok_json("twin", "rehydrate", "ada", "--store", url, "--config", f"{d}/twin.toml")
    assert r["cold"] is False
    assert r["prefix"]["system"][0]["text"] == ROLE
    plain = ipse(
        "twin",
        "rehydrate",
        "ada",
        "--store",
        url,
        "--config",
        f"{d}/twin.toml",
        "--format",
        "openai",
    )
    assert plain.returncode == 0
    assert json.loads(plain.stdout)["messages"][0] == {"role": "system", "content": ROLE}
    text = ipse(
        "twin", "rehydrate", "ada", "--store", url, "--config", f"{d}/twin.toml", "--format", "text"
    )
    assert text.stdout.startswith(ROLE) and "ACTIVE: confirm refund 2231" in text.stdout
    v2 = ok_json("twin", "export", "ada", "--schema", "2", "--store", url)
    assert v2["schema"] == 2 and v2["counterparty"]["established_facts"] == ["prefers email"]
    assert v2["open_loop"] == "confirm refund 2231"
    out = Path(d) / "v2.json"
    ok_json("twin", "export", "ada", "--schema", "2", "--store", url, "-o", str(out))
    assert json.loads(out.read_text()) == v2


def test_cold_rehydrate(setup: dict[str, str]) -> None:
    r = ok_json(
        "twin",
        "rehydrate",
        "ghost",
        "--store",
        setup["url"],
        "--config",
        f"{setup['dir']}/twin.toml",
    )
    assert r["cold"] is True and r["prefix"]["system"][0]["text"] == ROLE


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ('{"op": "close_loop", "loop": "ghost"}', "transition 1: loop: unknown loop 'ghost'"),
        ('{"op": "supersede_fact", "fact": "ghost", "text": "x"}', "fact: unknown fact"),
        ('{"op": "make_commitment"}', "text: missing"),
        ('{"op": "make_commitment", "text": 3}', "text: expected a string"),
        ("{not json", "line 1: not valid JSON"),
    ],
)
def test_bad_transitions_exit_2_and_store_nothing(
    setup: dict[str, str], lines: str, message: str
) -> None:
    url, d = setup["url"], setup["dir"]
    bad = Path(d) / "bad.jsonl"
    bad.write_text('{"op": "make_commitment", "text": "fine"}\n' + lines + "\n")
    result = ipse("twin", "apply", "ada", str(bad), "--store", url)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and message.split(": ")[-1] in result.stderr
    assert "Traceback" not in result.stderr
    if not (Path(d) / "ipse.db").exists():  # refused before the store was opened
        return
    history = ok_json("twin", "history", "ada", "--store", url)
    assert history["snapshots"] == []


def test_other_bad_input(setup: dict[str, str]) -> None:
    url, d = setup["url"], setup["dir"]
    ok_json("twin", "init", "somebody", "--store", url)
    for args, message in [
        (("twin", "show", "nobody", "--store", url), "no snapshot"),
        (("twin", "export", "nobody", "--store", url), "no snapshot"),
        (("twin", "show", "x", "--store", "mysql://h"), "unknown scheme"),
        (
            ("twin", "rehydrate", "x", "--store", url, "--config", f"{d}/missing.toml"),
            "no such file",
        ),
    ]:
        result = ipse(*args)
        assert result.returncode == 2, args
        assert message in result.stderr and result.stderr.startswith("ipse: error:")
    ok_json("twin", "apply", "ada", f"{d}/turn.jsonl", "--store", url)
    result = ipse("twin", "export", "ada", "--schema", "1", "--store", url)
    assert result.returncode == 2 and "schema" in result.stderr


def test_help_has_examples() -> None:
    for command in ("show", "history", "apply", "rehydrate", "export"):
        result = ipse("twin", command, "--help")
        assert result.returncode == 0
        assert f"ipse twin {command}" in result.stdout and "--json" in result.stdout


def test_cli_on_postgres(setup: dict[str, str], pg_url: str) -> None:
    turn = f"{setup['dir']}/turn.jsonl"
    first = ok_json("twin", "apply", "ada", turn, "--store", pg_url)
    assert first["written"] is True
    assert ok_json("twin", "apply", "ada", turn, "--store", pg_url)["written"] is False
    assert ok_json("twin", "show", "ada", "--store", pg_url)["version"] == 1


def test_apply_while_another_writer_holds_the_lease_exits_75(setup: dict[str, str]) -> None:
    from ipse.twin import open_store

    with open_store(setup["url"]) as store:
        store.acquire("ada", "someone-else", ttl=600)
        result = ipse("twin", "apply", "ada", f"{setup['dir']}/turn.jsonl", "--store", setup["url"])
        assert result.returncode == 75  # busy, try again: not 1, "a check found a problem"
        assert "being written by 'someone-else'" in result.stderr
        assert store.history("ada") == []
