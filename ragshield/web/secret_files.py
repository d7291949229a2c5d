"""Reading the small files that hold secrets (annotator logins, API keys): every failure is
one line naming the file, and the text comes back exactly as written (a password or key may
end in any character); only a UTF-8 byte order mark at the start is dropped."""

from __future__ import annotations

from pathlib import Path

from ragshield.errors import UserError


class SecretFileError(UserError, ValueError):
    pass


def read_secret_text(path: Path, what: str) -> str:
    """The text of `path`, `what` naming the kind of file in errors ("auth file")."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise SecretFileError(f"{path}: no such {what}") from None
    except IsADirectoryError:
        article = "an" if what[0] in "aeiou" else "a"
        raise SecretFileError(f"{path}: is a folder, not {article} {what}") from None
    except OSError as error:
        raise SecretFileError(f"{path}: cannot read the {what} ({error.strerror})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise SecretFileError(f"{path}: not UTF-8 text ({error.reason})") from None
