"""Where ipse keeps its own data: ``IPSE_HOME``, else the platform's user data folder."""

from __future__ import annotations

import os
from pathlib import Path


def home_dir(create: bool = True) -> Path:
    """The ipse home folder (holds ``ipse.db``); created on first use unless ``create`` is off."""
    env = os.environ.get("IPSE_HOME")
    if env:
        path = Path(env).expanduser()
    else:
        import platformdirs

        path = Path(platformdirs.user_data_dir("ipse", appauthor=False))
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path


def default_db_path() -> Path:
    """The default SQLite database: ``ipse.db`` in the home folder."""
    return home_dir() / "ipse.db"
