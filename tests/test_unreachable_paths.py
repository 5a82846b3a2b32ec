"""A path ipse cannot reach is bad input, said in one line naming it (exit 2), in every command
form: under a folder the user may not search, or with a name too long for the file system.

Before, a ``Path.exists()``, a ``mkdir`` or sqlite's open met the ``PermissionError`` first and
the command ended in "internal error" (exit 3). Permission bits do not stop root, so as root the
commands run without the capabilities that let root read and search anything (``setpriv``);
where that cannot be done the permission cases are skipped, saying why, and the cases of a name
too long (which no capability changes) still run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE_SESSION

# {L}: a folder the user may not search; {G}: a folder they may use
FORMS = [
    "inspect {L}/s.jsonl",
    "inspect {L}/dir",
    "handoff {L}/s.jsonl --at now -o {G}/o.json",
    "handoff {G}/s.jsonl --at now -o {L}/o.json",
    "lint {L}/req.json",
    "prefix {L}/s.jsonl",
    "prefix {L}/dir",
    "probe {L}/s.jsonl",
    "report {L}/s.jsonl -o {G}/r.html",
    "report {G}/s.jsonl -o {L}/r.html",
    "verify {L}/s.jsonl {G}/s.jsonl",
    "verify {G}/s.jsonl {L}/s.jsonl",
    "micro-handoff render-notes {L}/n.md",
    "twin init t2 --config {L}/c.toml",
    "twin apply t1 {L}/turn.jsonl",
    "twin export t1 -o {L}/t.json",
    "twin rehydrate t1 --config {L}/c.toml",
    "state init --goal g --dir {L}/state",
    "state verify --dir {L}/state",
    "state resume --dir {L}/state",
    "state next x --dir {L}/state",
    "state stamp claim --artifact {L}/s.jsonl --dir {G}/state",
    "archive list --store sqlite:///{L}/db.sqlite",
    "recall abc --store sqlite:///{L}/db.sqlite",
    "twin show t1 --store sqlite:///{L}/db.sqlite",
    "HOME={L}/home archive list",
    "HOME={L}/home twin show t1",
]
NO_SEARCH = ["setpriv", "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search"]


def _ipse(
    form: str, home: Path, *, prefix: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "IPSE_HOME": str(home)}
    env.pop("IPSE_DATABASE_URL", None)
    args = form.split()
    if args[0].startswith("HOME="):
        env["IPSE_HOME"] = args.pop(0).removeprefix("HOME=")
    return subprocess.run(
        [*(prefix or []), sys.executable, "-m", "ipse", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, Path]]:
    """(the folder that may not be searched, a usable folder, IPSE_HOME), the home holding a
    twin ``t1`` and the usable folder a state directory."""
    root = tmp_path_factory.mktemp("unreachable")
    locked, good, home = root / "locked", root / "good", root / "home"
    for folder in (locked / "dir", locked / "state", good, home):
        folder.mkdir(parents=True)
    for folder in (locked, good):
        shutil.copy(EXAMPLE_SESSION, folder / "s.jsonl")
    (locked / "req.json").write_text('{"model": "x", "messages": []}')
    (locked / "n.md").write_text("# notes\n")
    (locked / "c.toml").write_text("")
    (locked / "turn.jsonl").write_text('{"op": "establish_fact", "text": "x"}\n')
    for form in ("twin init t1", f"state init --goal g --dir {good}/state"):
        assert _ipse(form, home).returncode == 0
    for path in (root, good, home, *good.rglob("*"), *home.rglob("*")):
        path.chmod(0o777 if path.is_dir() else 0o666)
    locked.chmod(0)
    yield locked, good, home
    locked.chmod(0o700)


def _without_search(locked: Path) -> list[str] | None:
    """What runs a process that the folder's permissions stop: nothing as another user than
    root; as root, ``setpriv`` dropping the capabilities to read and search anything; None
    when neither can be had."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        return None
    probe = subprocess.run([*NO_SEARCH, "ls", str(locked)], capture_output=True, check=False)
    return NO_SEARCH if probe.returncode != 0 and probe.stderr else None


@pytest.mark.parametrize("form", FORMS)
def test_a_path_under_a_folder_that_cannot_be_searched_is_one_line_exit_2(
    form: str, folders: tuple[Path, Path, Path]
) -> None:
    locked, good, home = folders
    prefix = _without_search(locked)
    if prefix is None:
        pytest.skip("running as root without setpriv: permission bits do not stop root")
    command = form.format(L=locked, G=good)
    done = _ipse(command, home, prefix=prefix)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("ipse: error: "), done.stderr
    assert str(locked) in lines[0] and "internal error" not in lines[0]


LONG = "n" * 300  # over NAME_MAX (255) of every common file system


@pytest.mark.parametrize(
    "form",
    [
        "inspect {G}/{N}/s.jsonl",
        "prefix {G}/{N}",
        "probe {G}/{N}/s.jsonl",
        "report {G}/{N}/s.jsonl -o {G}/r.html",
        "verify {G}/s.jsonl {G}/{N}",
        "state verify --dir {G}/{N}",
        "archive list --store sqlite:///{G}/{N}/db.sqlite",
        "HOME={G}/{N} twin show t1",
    ],
)
def test_a_name_too_long_is_one_line_exit_2(form: str, folders: tuple[Path, Path, Path]) -> None:
    _, good, home = folders
    done = _ipse(form.format(G=good, N=LONG), home)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("ipse: error: "), done.stderr
    assert LONG in lines[0] and "internal error" not in lines[0]
