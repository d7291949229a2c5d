"""No NUL character reaches the database: PostgreSQL's text cannot hold one, and a row that carries
one fails with a DataError after the other writes of its transaction. The faces and importers refuse
NUL where they read text (strict_json, datasets/validation.py,
services/questions/asking.check_request); this check, run on every flush of a store's sessions, is
the last line for any text field they missed (an annotator's note, a policy's name), as one error
naming the table and the column."""

from __future__ import annotations

from typing import Any

from sqlalchemy import inspect
from sqlalchemy.orm import Session

from ragshield.errors import UserError


class UnstorableTextError(UserError, ValueError):
    """A text field holds a character no store keeps."""


def refuse_nul(session: Session, _context: Any, _instances: Any) -> None:
    """A before_flush listener: UnstorableTextError for a new or changed row whose text
    column holds a NUL character."""
    for row in (*session.new, *session.dirty):
        mapper = inspect(row).mapper
        for column in mapper.column_attrs:
            value = getattr(row, column.key, None)
            if isinstance(value, str) and "\x00" in value:
                raise UnstorableTextError(
                    f"{mapper.local_table.name}.{column.key} holds a NUL character "
                    "(\\u0000), which no store keeps; nothing was written")
