"""Annotator logins for `app.py --auth FILE`: one `name:password` per line (blank lines and
lines starting with # are ignored). Gradio checks the password; the name is then attached
to every label the annotator writes.

A line is split at its first colon. The name is what comes before it, stripped of
surrounding white space (Gradio strips the name typed at login too), so it cannot hold a
colon. The password is everything after it exactly as written, spaces included at either
end: only the line ending (LF or CRLF) is removed. A UTF-8 byte order mark at the start of
the file is ignored."""

from __future__ import annotations

from pathlib import Path

from ragshield.web.secret_files import SecretFileError, read_secret_text

AuthFileError = SecretFileError


def read_auth_file(path: Path) -> list[tuple[str, str]]:
    """The (name, password) pairs of an auth file; errors name the file and the line."""
    users: list[tuple[str, str]] = []
    seen: set[str] = set()
    for number, line in enumerate(read_secret_text(path, "auth file").split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip() or line.strip().startswith("#"):
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
