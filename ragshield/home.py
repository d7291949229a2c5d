"""Where ragshield keeps what it writes: one home folder for the database, the ingested
corpora and (when RAGSHIELD_HOME is set) the caches.

The home is RAGSHIELD_HOME, else the user's data folder (platformdirs: ~/.local/share/ragshield
on Linux). Caches (assembled models, trained judges, the call cache) stay in the user's cache
folder unless RAGSHIELD_HOME is set, so that one variable moves everything.

Versions before the home kept the database and corpora in the checkout's `db/` folder. A
database found there keeps working when the home has none (with a warning saying how to move
it); when both hold one, ragshield stops and says which to keep: it never picks one silently.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

import platformdirs

from ragshield.errors import UserError

log = logging.getLogger(__name__)

DATABASE_FILE = "ragshield.db"
# The folder of the releases that resolved everything against the source tree.
OLD_DATA_DIR = Path(__file__).resolve().parent.parent / "db"


class HomeError(UserError, OSError):
    """The home folder cannot be used as it is."""


def _chosen_home() -> str:
    """RAGSHIELD_HOME as set, "" when it is not."""
    return os.environ.get("RAGSHIELD_HOME", "").strip()


def home_dir() -> Path:
    chosen = _chosen_home()
    return Path(chosen).expanduser() if chosen else Path(platformdirs.user_data_dir("ragshield"))


def cache_dir() -> Path:
    if _chosen_home():
        return home_dir() / "cache"
    return Path(platformdirs.user_cache_dir("ragshield"))


def data_dir() -> Path:
    """The folder of the database and the corpora: the home, or the old `db/` folder when it
    holds the only database. Made when missing; a folder that cannot be written is an error."""
    home = home_dir()
    old = OLD_DATA_DIR / DATABASE_FILE
    if not _chosen_home() and old.is_file():
        if (home / DATABASE_FILE).is_file():
            raise HomeError(
                f"two ragshield databases: {old} (the old place) and {home / DATABASE_FILE};"
                " keep one: move the old one away, or set RAGSHIELD_DATABASE_URL to the one"
                " to use")
        log.warning("using the database in %s (the old place); to move it and its corpora to"
                    " %s: mv %s %s %s/", OLD_DATA_DIR, home, old, OLD_DATA_DIR / "corpora",
                    home)
        return OLD_DATA_DIR
    return writable(home)


def default_database_url() -> str:
    return f"sqlite:///{data_dir() / DATABASE_FILE}"


def writable(folder: Path) -> Path:
    """`folder`, made if missing, once a file could be written there. Each check writes a
    probe of its own name: processes that start together (the app, a CLI call, test
    workers) must not remove each other's."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".ragshield-write-check-"):
            pass
    except OSError as error:
        raise HomeError(
            f"cannot write to the ragshield home {folder} ({error.strerror or error}): set"
            " RAGSHIELD_HOME to a folder you can write") from error
    return folder
