"""Reading verdicts produced elsewhere (one JSON object per line) for `ragshield metrics`."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ragshield import strict_json
from ragshield.datasets.reading import utf8_problem
from ragshield.errors import UserError
from ragshield.metrics.summary import VerdictTableError, validate_verdict_table


class VerdictFileError(UserError, ValueError):
    """A verdict file that cannot be used; the message names the file, line and field."""


def read_verdicts_file(path: Path) -> pd.DataFrame:
    """The file's verdicts as a table for `judge_metrics`. Blank lines are skipped; errors
    name the file's own line numbers."""
    rows, lines = [], []
    try:
        with open(path, encoding="utf-8-sig") as handle:  # a BOM, as Windows tools write
            for number, text in enumerate(handle, start=1):
                if not text.strip():
                    continue
                try:
                    rows.append(strict_json.loads(text))
                except json.JSONDecodeError as exc:
                    raise VerdictFileError(
                        f"{path}, line {number}: not valid JSON ({exc.msg})") from None
                except ValueError as exc:
                    raise VerdictFileError(f"{path}, line {number}: {exc}") from None
                lines.append(number)
    except OSError as exc:
        raise VerdictFileError(f"cannot read {path}: {exc}") from None
    except UnicodeDecodeError:
        raise VerdictFileError(f"{utf8_problem(path)}; save the file as UTF-8") from None
    if not rows:
        raise VerdictFileError(f"{path}: no verdicts in the file")
    try:
        return validate_verdict_table(rows)
    except VerdictTableError as exc:
        line = lines[exc.line - 1] if exc.line else None
        reason = str(exc).split(": ", 1)[1] if exc.line else str(exc)
        where = f"{path}, line {line}" if line else str(path)
        raise VerdictFileError(f"{where}: {reason}") from None
