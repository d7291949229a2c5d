"""Turning the errors a user can cause or fix into a one-line message and exit status 1."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, NoReturn

import typer

from sqlalchemy.exc import SQLAlchemyError

from ragshield.llm.base import LLMError
from ragshield.llm.packaged_models import ChecksumError, ModelPackageMissing
from ragshield.store.database import StoreError

# ValueError covers bad option values, dataset and corpus errors (both subclass it);
# LookupError covers unknown datasets, samples and corpora.
USER_ERRORS = (ValueError, LookupError, LLMError, StoreError, ModelPackageMissing, ChecksumError)


@contextmanager
def user_errors() -> Iterator[None]:
    try:
        yield
    except USER_ERRORS as exc:
        fail(str(exc))
    except SQLAlchemyError as exc:
        fail(f"database error: {getattr(exc, 'orig', None) or exc}")


def fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=1)
