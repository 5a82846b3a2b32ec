"""The library's notes reach the command line's stderr whether the logger was made before or after
the command line asked for them, once; and a command that never notes anything does not import
`logging` (nor the readers of formats it does not read)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import EXAMPLE_SESSION


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


def test_a_logger_made_after_the_request_sends_its_notes_once() -> None:
    done = _python(
        "from ipse import _notes\n"
        "lines = []\n"
        "_notes.to_stderr(lines.append)\n"
        "_notes.logger('ipse.a').warning('first %s', 1)\n"
        "_notes.logger('ipse.b').warning('second')\n"
        "_notes.logger('ipse.a').info('not a warning')\n"
        "print(lines)\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['first 1', 'second']"
    assert done.stderr == ""  # not also on to logging's own last resort


def test_a_logger_made_before_the_request_sends_its_notes_too() -> None:
    done = _python(
        "from ipse import _notes\n"
        "log = _notes.logger('ipse.statedir')\n"
        "lines = []\n"
        "_notes.to_stderr(lines.append)\n"
        "_notes.to_stderr(lines.append)\n"
        "log.warning('recovered')\n"
        "print(lines)\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['recovered']"


def test_the_prefix_analysis_of_a_session_imports_only_what_it_reads() -> None:
    done = _python(
        "import sys\n"
        "from ipse.cli.main import main\n"
        f"try:\n    main(['prefix', {str(EXAMPLE_SESSION)!r}, '--json'])\n"
        "except SystemExit as exc:\n    assert exc.code == 0, exc.code\n"
        "loaded = [m for m in ('logging', 'ipse.transcript._formats.http_log',\n"
        "          'ipse.transcript._formats.codex', 'ipse.transcript._load')\n"
        "          if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    assert done.returncode == 0, done.stderr
    assert '"requests"' in done.stdout
