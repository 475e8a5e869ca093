"""Where scholarflow keeps its data on disk."""

from __future__ import annotations

import os
from pathlib import Path

HOME_ENV = "SCHOLARFLOW_HOME"
DEFAULT_HOME = Path(".scholarflow")
DATABASE_FILENAME = "scholarflow.db"


def home_path() -> Path:
    """The data folder: `$SCHOLARFLOW_HOME`, else `./.scholarflow`; not created here.

    Async code uses this: creating the folder is file I/O, which the stores
    do in their worker thread.
    """
    raw = os.environ.get(HOME_ENV, "").strip()
    return Path(raw).expanduser() if raw else DEFAULT_HOME


def home_dir() -> Path:
    """The data folder, created when missing."""
    path = home_path()
    path.mkdir(parents=True, exist_ok=True)
    return path


def database_path() -> Path:
    """The SQLite file that holds sessions and the summary cache."""
    return home_dir() / DATABASE_FILENAME
