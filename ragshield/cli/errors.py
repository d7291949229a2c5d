"""Turning the errors a user can cause or fix into a one-line message and exit status 1.

Only UserError (ragshield.errors) and database errors are caught: any other exception is a
bug and propagates with its traceback."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, NoReturn

import typer

from ragshield.errors import UserError
from ragshield.services.database import DatabaseError


@contextmanager
def user_errors() -> Iterator[None]:
    try:
        yield
    except UserError as exc:
        fail(str(exc))
    except DatabaseError as exc:
        fail(f"database error: {getattr(exc, 'orig', None) or exc}")


def fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=1)
