"""Writing a file the person named (`--out`): a path that cannot take a file is refused with
one line naming it, and the file is written beside it under a temporary name and renamed
over it at the end, so a full disk or a crash leaves an earlier file there whole."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable

from ragshield.errors import UserError


class OutputFileError(UserError, ValueError):
    """The output file cannot be written; an earlier file there is unchanged."""


def writable_target(path: Path, error: type[UserError] = OutputFileError) -> Path:
    """`path` when a file can be written there, else `error` saying why."""
    if path.is_dir():
        raise error(f"{path} is a folder; --out takes a file name")
    if not path.parent.is_dir():
        raise error(f"cannot write {path}: the folder {path.parent} does not exist")
    return path


def write_atomically(path: Path, write: Callable[[Path], None],
                     error: type[UserError] = OutputFileError) -> None:
    """Have `write` fill a temporary file beside `path`, then rename it over `path` (an
    existing file keeps its permissions); `error` naming the path when that fails."""
    target = writable_target(path, error)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.",
                                         suffix=".partial")
    os.close(handle)
    try:
        write(Path(temporary))
        os.chmod(temporary, target.stat().st_mode & 0o777 if target.exists() else 0o644)
        os.replace(temporary, target)
    except OSError as exc:
        raise error(f"cannot write {path}: {exc.strerror or exc}; "
                    "an earlier file there is unchanged") from None
    finally:
        Path(temporary).unlink(missing_ok=True)
