"""Cells of table files (CSV, Parquet) as the column mapping reads them: text that holds a
JSON list read as one, the JSON of the given answer's log-probs, cited passages, passage
scores and history parsed, and an empty cell of a mapped optional column read as none."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ragshield.conversation import HISTORY
from ragshield.datasets.column_mapping import OPTIONAL_FIELDS, ColumnMapping
from ragshield.datasets.errors import DatasetFormatError
from ragshield.datasets.reading import parse_json

LIST_FIELDS = ("answers", "passages")  # a cell holding a JSON list is read as one
# Text cells of these are JSON.
JSON_FIELDS = ("answer_logprobs", "cited_passages", "passage_scores", HISTORY)
LIST, JSON, OPTIONAL = "list", "json", "optional"  # how a column's text cells are read


def cell_kinds(columns: ColumnMapping) -> dict[str, str]:
    """Column -> how its text cells are read, for the columns not read as plain text."""
    kinds = {columns[field]: LIST for field in LIST_FIELDS}
    kinds.update({columns[field]: JSON if field in JSON_FIELDS else OPTIONAL
                  for field in OPTIONAL_FIELDS if field in columns})
    return kinds


def text_cell(path: Path, where: str, column: str, text: str, kind: str | None) -> Any:
    """The value of a text cell of `column`, read as `kind` says (None: as it is)."""
    stripped = text.strip()
    if kind in (JSON, OPTIONAL) and not stripped:
        return None
    if kind == JSON:
        return parse_json(path, stripped, where, column)
    if kind == LIST and stripped.startswith("["):
        try:
            return parse_json(path, stripped, where, column)
        except DatasetFormatError as error:
            # Not JSON at all ("[Source: Wikipedia] Paris is...") is text; JSON holding a
            # refused value (1e999, NaN) is still an error.
            if isinstance(error.__cause__, json.JSONDecodeError):
                return text
            raise
    return text
