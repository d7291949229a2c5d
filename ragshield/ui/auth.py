"""Annotator logins for `app.py --auth FILE`: one `name:password` per line (blank lines and
lines starting with # are ignored). Gradio checks the password; the name is then attached
to every label the annotator writes."""

from __future__ import annotations

from pathlib import Path


class AuthFileError(ValueError):
    pass


def read_auth_file(path: Path) -> list[tuple[str, str]]:
    """The (name, password) pairs of an auth file; errors name the file and the line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AuthFileError(f"{path}: no such auth file") from None
    except UnicodeDecodeError as error:
        raise AuthFileError(f"{path}: not UTF-8 text ({error.reason})") from None
    users: list[tuple[str, str]] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, colon, password = line.partition(":")
        name = name.strip()
        if not colon or not name or not password:
            raise AuthFileError(f"{path}:{number}: expected name:password")
        if name in seen:
            raise AuthFileError(f"{path}:{number}: user {name!r} is listed twice")
        seen.add(name)
        users.append((name, password))
    if not users:
        raise AuthFileError(f"{path}: no users (one name:password per line)")
    return users
