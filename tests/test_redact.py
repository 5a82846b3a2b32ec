"""Passwords never reach a message: `ipse.redact` alone, and every URL shape through the CLI."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ipse.redact import fingerprint, redact

SECRET = "S3cretPass"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"postgresql://postgres:{SECRET}@db:5432/test", "postgresql://postgres:***@db:5432/test"),
        ("postgresql://u:p@ssw0rd@db/x", "postgresql://u:***@db/x"),
        (f"postgresql://db/x?sslmode=require&password={SECRET}", None),
        (f"postgres://db/x?PASSWORD={SECRET}&a=b", None),
        (f"mysql://root:{SECRET}@db/x", "mysql://root:***@db/x"),
        (f"host=db password={SECRET} dbname=x", "host=db password=*** dbname=x"),
        (f"host=db password='{SECRET} x' dbname=x", "host=db password=*** dbname=x"),
        ("postgresql://u@db/x", "postgresql://u@db/x"),
        ("sqlite:///tmp/ipse.db", "sqlite:///tmp/ipse.db"),
    ],
)
def test_every_shape_is_masked(url: str, shown: str | None) -> None:
    masked = redact(url)
    assert SECRET not in masked and "ssw0rd" not in masked
    if shown is not None:
        assert masked == shown
    assert redact(masked) == masked  # idempotent


def test_a_url_inside_a_message_is_masked() -> None:
    text = f'invalid dsn: "postgresql://u:{SECRET}@db/x" near "x"'
    assert redact(text) == 'invalid dsn: "postgresql://u:***@db/x" near "x"'


def test_pieces_of_a_known_password_are_masked() -> None:
    url = "postgresql://postgres:p@ssw0rd@127.0.0.1:5432/test"
    assert "ssw0rd" not in redact("failed to resolve host 'ssw0rd@127.0.0.1'", url=url)


def test_a_fingerprint_tells_values_apart_without_showing_them() -> None:
    a, b = fingerprint("token-aaaa"), fingerprint("token-bbbb")
    assert a != b and "token" not in a and a == fingerprint("token-aaaa")
    assert a.startswith("<10 chars, sha256:")


def _ipse(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ipse.cli.main", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=False,
    )


def _with_password(pg_url: str, password: str) -> str:
    scheme, rest = pg_url.split("://", 1)
    userinfo, host = rest.split("@", 1)
    return f"{scheme}://{userinfo.split(':')[0]}:{password}@{host}"


def _assert_clean(done: subprocess.CompletedProcess[str], *secrets: str) -> None:
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert "Traceback" not in out and len(done.stderr.strip().splitlines()) == 1, out
    for secret in secrets:
        assert secret not in out, out


def test_store_option_with_a_password(pg_url: str) -> None:
    url = _with_password(pg_url, SECRET)
    done = _ipse("twin", "show", "nobody", "--store", url)
    _assert_clean(done, SECRET)
    # a reader on a database without ipse's tables: refused, the URL shown without its password
    assert "no ipse data in that database" in done.stderr and ":***@" in done.stderr


def test_database_url_variable_with_a_password(pg_url: str) -> None:
    env = {"IPSE_DATABASE_URL": _with_password(pg_url, SECRET)}
    done = _ipse("twin", "show", "nobody", env=env)
    _assert_clean(done, SECRET)
    assert "no ipse data" in done.stderr


def test_password_as_a_query_parameter(pg_url: str) -> None:
    done = _ipse("twin", "show", "nobody", "--store", f"{pg_url}&password={SECRET}")
    _assert_clean(done, SECRET)
    assert "password=***" in done.stderr


def test_an_unescaped_at_sign_in_the_password(pg_url: str) -> None:
    done = _ipse("twin", "show", "nobody", "--store", _with_password(pg_url, "p@ssw0rd"))
    _assert_clean(done, "ssw0rd")


def test_a_refused_connection_names_the_server_without_the_password(pg_url: str) -> None:
    url = _with_password(pg_url, SECRET).replace(":5432/", ":1/")
    done = _ipse("twin", "history", "nobody", "--store", url)
    _assert_clean(done, SECRET)
    assert "cannot connect to" in done.stderr


@pytest.mark.parametrize(
    "command",
    [["twin", "show", "nobody"], ["archive", "list"], ["recall", "toolu_1"]],
)
def test_an_unknown_scheme(command: list[str]) -> None:
    done = _ipse(*command, "--store", f"mysql://root:{SECRET}@db/x")
    _assert_clean(done, SECRET)
    assert "mysql://root:***@db/x" in done.stderr
