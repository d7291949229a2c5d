"""Python's csv module refuses a cell over 131,072 characters by default: a valid file with
one long passage (or the passages a label export keeps) could not be read back. Readers of
CSV raise the limit first; the file's own bounds (an upload's size) bound a cell instead."""

from __future__ import annotations

import csv

CSV_FIELD_LIMIT = 1 << 30  # characters; within a C long everywhere


def allow_long_fields() -> None:
    """Raise csv's field size limit (process-wide, so every reader agrees) to CSV_FIELD_LIMIT."""
    csv.field_size_limit(CSV_FIELD_LIMIT)
