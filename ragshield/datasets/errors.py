"""What goes wrong when reading a dataset file, each with the file, place and field at fault."""

from __future__ import annotations

from pathlib import Path

from ragshield.errors import UserError


class DatasetError(UserError, ValueError):
    """A dataset cannot be loaded; the message is meant for the person who gave the file."""


class DatasetFileError(DatasetError):
    """The file itself is missing or unreadable (as opposed to its content being wrong)."""


class UnknownFormatError(DatasetError):
    """No loader is registered under a name, or the format of a file cannot be told."""


class DatasetFormatError(DatasetError):
    """The content of a file is wrong: bad bytes, bad JSON, a missing or mistyped field."""

    def __init__(self, path: Path | str, reason: str, *, where: str | None = None,
                 field: str | None = None) -> None:
        self.path = Path(path)
        self.where = where  # "line 12", "record index 3", ...
        self.field = field
        self.reason = reason
        place = "".join(
            part for part in (f", {where}" if where else "", f", field {field!r}" if field else "")
        )
        super().__init__(f"{self.path}{place}: {reason}")
