"""Passwords never reach a message: `ipse._redact` alone, and every URL shape through the CLI."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipse._redact import RequestSecrets, fingerprint, mask_text, masked_body, masked_headers, redact

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


# ---------------------------------------------------------------------------- linear work

_OLD_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<info>[^\s'\"<>]*)@")
_OLD_PARAM = re.compile(
    r"(?P<key>\b[A-Za-z_]*(?:password|passwd|pwd|secret|token|api_?key)[A-Za-z_]*\s*=\s*)"
    r"(?P<value>'(?:[^'\\]|\\.)*'|[^&\s'\"#]+)",
    re.IGNORECASE,
)


def _old_redact(text: str) -> str:
    """The patterns redaction used to be (quadratic in a long run of letters), as the
    reference of what is masked on short texts."""

    def userinfo(match: re.Match[str]) -> str:
        user, colon, _ = match.group("info").partition(":")
        if "/" in user or "?" in user or "#" in user:
            user, colon = "", ":"
        return match.group("scheme") + user + (":***" if colon else "") + "@"

    text = _OLD_USERINFO.sub(userinfo, text)
    return _OLD_PARAM.sub(lambda m: m.group("key") + "***", text)


# pieces that mean something to a pattern, and runs of every kind of character
PIECES = st.sampled_from(
    ["://", *"@:/?#=&'\"\\ \n<>", "password", "Token", "api_key", "postgresql", *"aZ9_-+.é\t"]
)
CLASSES = ["a", "Z", "9", "_", " ", "'", "\\", ":", "/", "@", "=", "é", "-", "\x00", "\ud800"]


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(st.lists(st.tuples(PIECES, st.integers(1, 4)), max_size=40))
def test_redaction_masks_what_the_old_patterns_masked(parts: list[tuple[str, int]]) -> None:
    text = "".join(piece * count for piece, count in parts)
    assert redact(text) == _old_redact(text)


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(st.lists(st.tuples(st.sampled_from(CLASSES), st.integers(1, 60_000)), max_size=4))
def test_long_runs_of_every_character_class(runs: list[tuple[str, int]]) -> None:
    # the old patterns took seconds per 40,000 letters and minutes for a megabyte; these runs
    # (up to 240,000 characters an example) pass through the same masking in one pass
    text = "".join(char * count for char, count in runs)
    assert redact(text) == text  # no URL with user info, no credential key: unchanged
    with_secret = text + " postgresql://u:hunter2@db/x password=hunter2 " + text
    assert "hunter2" not in redact(with_secret)


def _repeats(pattern: re.Pattern[str]) -> list[tuple[str, int]]:
    """Every repeat in a compiled pattern's parse tree, as (kind, upper bound)."""
    from re import _parser  # type: ignore[attr-defined]

    found: list[tuple[str, int]] = []

    def walk(items: Any) -> None:
        for op, arg in items:
            name = str(op)
            if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                found.append((name, arg[1]))
                walk(arg[2])
            elif name == "BRANCH":
                for branch in arg[1]:
                    walk(branch)
            elif name in ("SUBPATTERN",):
                walk(arg[-1])
            elif name in ("ATOMIC_GROUP", "ASSERT", "ASSERT_NOT"):
                walk(arg if name == "ATOMIC_GROUP" else arg[1])

    walk(_parser.parse(pattern.pattern, pattern.flags))
    return found


def test_no_pattern_can_backtrack_over_a_long_run() -> None:
    # linear by construction: every unbounded repeat in redaction's patterns is possessive (it
    # never gives back what it read), so a match attempt reads a run once, and the code that
    # drives them looks at each run of URL characters and each key once
    import ipse._redact as module

    patterns = [v for v in vars(module).values() if isinstance(v, re.Pattern)]
    assert len(patterns) >= 5
    for pattern in patterns:
        for kind, upper in _repeats(pattern):
            assert kind == "POSSESSIVE_REPEAT" or upper <= 1, (pattern.pattern, kind)
    for pattern in (_OLD_USERINFO, _OLD_PARAM):  # what the test would have caught
        assert any(k == "MAX_REPEAT" and u > 1 for k, u in _repeats(pattern))


def test_a_providers_error_is_masked_whatever_key_it_quotes() -> None:
    """An error quotes keys no request here carried (a gateway's own upstream key, a Google
    ``?key=``): masked by their shape, a scheme's token or a URL's credential parameter."""
    error = (
        "401 Incorrect API key: Authorization: Bearer sk-proj-Zq8r2Lm4Np6Qs8Tu0Vw2X at "
        "https://g.example/v1beta/models/m:generate?alt=sse&key=AIzaSyD3f8h2K9m4N6p8Q1r3S5t7V9w "
        "(anthropic sk-ant-api03-aaaaaaaaaaaaaaaaaaaa) for postgresql://u:pw@db/x"
    )
    shown = mask_text(error)
    for secret in ("Zq8r2Lm4", "AIzaSy", "api03", ":pw@"):
        assert secret not in shown
    assert "Bearer ***" in shown and "?alt=sse&key=***" in shown and "Incorrect API key" in shown
    plain = "the model answered 40 tokens in 12.5 s; bearer of news, see https://x.org/a?page=2"
    assert mask_text(plain) == plain


def test_a_requests_credentials_are_gathered_once_for_every_front_end() -> None:
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "my password is in the conversation"}],
        "password": "hunter2-gateway",
        "auth_token": "tok-5d8e1f2a3b4c",
        "x-api-key": "sk-body-key-0a1b2c",
        "access_token": "ya29.a0AfH6SMBx",
        "metadata": {"user_api_key": "sk-litellm-master-5f0c", "user_id": "u-1"},
        "prompt_cache_key": "conversation-7",
    }
    headers = [("Authorization", "Bearer sk-ant-header-secret"), ("x-session", "s-1")]
    secrets = RequestSecrets.of_request(headers, "key=query-secret-1&page=2", body)
    line = f"sk-ant-header-secret hunter2-gateway query-secret-1 tok-5d8e1f2a3b4c {body}"
    masked = secrets.text(line)
    for value in ("sk-ant-header-secret", "hunter2-gateway", "query-secret-1", "tok-5d8e1f2a3b4c",
                  "sk-body-key-0a1b2c", "ya29.a0AfH6SMBx", "sk-litellm-master-5f0c"):  # fmt: skip
        assert value not in masked
        assert value.encode() not in secrets.bytes(line.encode())
    assert "conversation-7" in masked and "u-1" in masked
    kept = masked_body(body)
    assert kept["messages"] == body["messages"] and kept["prompt_cache_key"] == "conversation-7"
    assert {kept[k] for k in ("password", "auth_token", "x-api-key", "access_token")} == {"***"}
    assert kept["metadata"] == {"user_api_key": "***", "user_id": "u-1"}
    assert masked_headers(headers) == {"authorization": "***", "x-session": "s-1"}
