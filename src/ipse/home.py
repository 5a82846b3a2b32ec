"""Where ipse keeps its own data: ``IPSE_HOME``, else the platform's user data folder.

The home folder holds the archive of removed tool output and thinking, which often carries
secrets, so it is private: created 0700, and tightened to 0700 when found more open.
"""

from __future__ import annotations

import os
from pathlib import Path

from ipse.fileio import private_dir


def home_dir(create: bool = True) -> Path:
    """The ipse home folder (holds ``ipse.db``); created 0700 on first use unless ``create``
    is off, and tightened to owner-only when it exists with wider permissions."""
    env = os.environ.get("IPSE_HOME")
    if env:
        path = Path(env).expanduser()
    else:
        import platformdirs

        path = Path(platformdirs.user_data_dir("ipse", appauthor=False))
    if create:
        private_dir(path)
    return path


def default_db_path(create: bool = True) -> Path:
    """The default SQLite database: ``ipse.db`` in the home folder (created unless ``create``
    is off)."""
    return home_dir(create) / "ipse.db"
