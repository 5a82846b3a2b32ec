"""The twin's TOML configuration."""

from __future__ import annotations

from pathlib import Path

import pytest

from ipse.errors import InputError
from ipse.twin._config import load_config
from ipse.twin._identity import IdentityPolicy


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "twin.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_full_config(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path,
            'id = "ada"\nrole = "You are Ada."\n[identity]\nfields = ["counterparty", "facts"]\n'
            "[decay]\nmax_facts = 10\nhalf_life_days = 2\n",
        )
    )
    assert config.role == "You are Ada." and config.twin_id == "ada"
    assert config.identity == IdentityPolicy(("facts", "counterparty"))
    assert config.decay.max_facts == 10 and config.decay.half_life == 2 * 86400


def test_minimal_config_has_defaults(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, 'role = "You are Ada."\n'))
    assert config.identity == IdentityPolicy()
    assert config.decay.max_facts is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "role: missing"),
        ('role = "x"\ncolour = 1\n', "colour: unknown setting"),
        ('role = "x"\n[identity]\nfields = ["tone"]\n', "identity.fields: unknown field 'tone'"),
        ('role = "x"\n[decay]\nmax_facts = "ten"\n', "decay.max_facts"),
        ('role = "x"\n[decay]\nhalf_life_days = "a"\n', "decay.half_life_days"),
        ('role = "x"\n[decay]\nspeed = 1\n', "decay.speed: unknown setting"),
        ("role = ", "not valid TOML"),
    ],
)
def test_bad_config_names_the_key_and_file(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(InputError, match=message) as info:
        load_config(path)
    assert str(path) in str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        load_config(tmp_path / "nope.toml")
