"""Where scholarflow keeps its data on disk, and the one line when that is not a folder."""

from __future__ import annotations

from pathlib import Path

from scholarflow.errors import ConfigurationError
from scholarflow.settings import Settings, get_settings

HOME_ENV = Settings.home.env
DATABASE_FILENAME = "scholarflow.db"


def home_path() -> Path:
    """The data folder: `$SCHOLARFLOW_HOME`, else `./.scholarflow`; not created here.

    Async code uses this: creating the folder is file I/O, which the caches
    do in their worker thread.
    """
    return get_settings().home


def home_dir() -> Path:
    """The data folder, created when missing."""
    path = home_path()
    ensure_folder(path)
    return path


def database_path() -> Path:
    """The SQLite file of the summary cache (the sessions are in checkpoints.sqlite)."""
    return home_dir() / DATABASE_FILENAME


def ensure_folder(path: Path) -> None:
    """Create the folder `path` (the data folder or one in it) when missing; a file in the
    way, or no permission, is one ConfigurationError that names SCHOLARFLOW_HOME."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise _not_a_folder(path) from None
    except PermissionError:
        raise ConfigurationError(
            f"cannot create the folder {path}: permission denied; point {HOME_ENV} at a "
            "folder you can write to") from None
    if not path.is_dir():  # a symlink to a file, say
        raise _not_a_folder(path)


def _not_a_folder(path: Path) -> ConfigurationError:
    """The error for a file where a folder must be: which file, and what to do."""
    home = home_path()
    blocking = next((p for p in [path, *path.parents] if p.exists() and not p.is_dir()), path)
    setting = f"{HOME_ENV}={home}" if get_settings().is_set(Settings.home) else (
        f"the data folder {home} ({HOME_ENV} is unset)")
    if blocking == home:
        return ConfigurationError(f"{setting} is a file, not a folder: point {HOME_ENV} at a "
                                  "folder (or move the file away)")
    if blocking in home.parents:
        return ConfigurationError(f"{setting} is inside {blocking}, which is a file: point "
                                  f"{HOME_ENV} at a folder")
    return ConfigurationError(f"{blocking} is a file where scholarflow keeps a folder: move "
                              f"it aside, or point {HOME_ENV} at another folder")
