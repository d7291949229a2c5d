"""Logins for `ragshield app --auth FILE`: one `name:password` or `name:password:role` per
line (blank lines and lines starting with # are ignored). The name is then attached to
every label the person writes; the role says what they may do (services/annotation/people.py).

A line is split at its first colon. The name is what comes before it, stripped of
surrounding white space (Gradio strips the name typed at login too), so it cannot hold a
colon. The rest is the password, exactly as written, spaces included at either end (only
the line ending, LF or CRLF, is removed), except for a role at its end: when the rest ends
in `:admin` or `:annotator` and something is left before that, the last field is the role
and the password is what comes before it. Without a role a person is an annotator. So
`bob:pa:ss` is an annotator with the password `pa:ss`, `bob:pa:ss:admin` an admin with the
same password, and `bob:admin` an annotator whose password is `admin`. A password that
itself ends in `:admin` or `:annotator` needs the role written after it
(`bob:x:admin:annotator`). A last field that reads as a role only once stripped or in
lower case (`:Admin`, `:admin `) is refused rather than taken into the password: write the
role exactly, or add one after it. A UTF-8 byte order mark at the start of the file is
ignored."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import NamedTuple

import anyio.to_thread

from ragshield.services.annotation.people import ACCOUNT_ROLES, ANNOTATOR
from ragshield.web.secret_files import SecretFileError, read_secret_text

AuthFileError = SecretFileError


class FileLogin(NamedTuple):
    name: str
    password: str
    role: str


def _password_and_role(rest: str) -> tuple[str, str, str | None]:
    """(password, role, what is wrong) of what follows the name's colon."""
    password, colon, last = rest.rpartition(":")
    if colon and password and last in ACCOUNT_ROLES:
        return password, last, None
    if colon and password and last.strip().lower() in ACCOUNT_ROLES:
        return rest, ANNOTATOR, (f"role {last!r}: write it as {' or '.join(ACCOUNT_ROLES)}, "
                                 "in lower case and without spaces")
    return rest, ANNOTATOR, None


def read_auth_file(path: Path) -> list[FileLogin]:
    """The (name, password, role) of each user of an auth file; errors name the file and
    the line."""
    users: list[FileLogin] = []
    seen: set[str] = set()
    for number, line in enumerate(read_secret_text(path, "auth file").split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip() or line.strip().startswith("#"):
            continue
        name, colon, rest = line.partition(":")
        name = name.strip()
        if not colon or not name or not rest:
            raise AuthFileError(f"{path}:{number}: expected name:password")
        password, role, wrong = _password_and_role(rest)
        if wrong:
            raise AuthFileError(f"{path}:{number}: {wrong}")
        if name in seen:
            raise AuthFileError(f"{path}:{number}: user {name!r} is listed twice")
        seen.add(name)
        users.append(FileLogin(name, password, role))
    if not users:
        raise AuthFileError(f"{path}: no users (one name:password per line)")
    return users


def gradio_auth(check: Callable[[str, str], bool]) -> Callable[[str, str], Awaitable[bool]]:
    """The login check as Gradio's `auth`. Gradio calls it in its event loop; a check may
    hash a password (some 50 ms) and query the database, so it runs in a worker thread,
    and other requests go on meanwhile."""
    async def auth(name: str, password: str) -> bool:
        return await anyio.to_thread.run_sync(check, name, password)
    return auth
