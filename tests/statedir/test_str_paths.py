"""Every public statedir function takes the folder (and paths) as a ``str`` as well as a
``Path``: the library is called from scripts that build paths as strings."""

from __future__ import annotations

from pathlib import Path

import ipse.statedir as statedir
from ipse.statedir._files import state_files
from ipse.statedir._receipts import check_receipts


def test_a_whole_cycle_with_str_paths(repo: Path) -> None:
    folder = str(repo / "state")
    statedir.init(folder, "Port the parser", "all parser tests pass")
    statedir.set_next(folder, "write the lexer")
    statedir.add_invariant(folder, "no regex in the lexer", "too slow on long inputs")
    statedir.log_transition(folder, "lexer skeleton in place")
    (repo / "lexer.py").write_text("def lex(): ...\n")
    receipt = statedir.stamp(folder, "the lexer exists", [str(repo / "lexer.py")])

    assert state_files(folder)[0] == "00_goal.md"
    view = statedir.resume(folder)
    assert (view.next_step.text or "").strip() == "write the lexer"
    assert check_receipts(folder, {receipt["id"]}) == []
    assert statedir.verify_state(folder).ok
    old_name, _ = statedir.rotate(folder)
    assert (repo / "state" / old_name).is_file()
    assert statedir.verify_state(folder).ok


def test_install_takes_str_paths(repo: Path) -> None:
    statedir.init(repo / "state", "Port the parser")
    added = statedir.install(str(repo), str(repo / "state"), agent="claude-code")
    assert added
    removed = statedir.uninstall(str(repo), str(repo / "state"), agent="claude-code")
    assert removed
