"""Printing command results: JSON for machines, one line per part for people."""

from __future__ import annotations

import json
from typing import Any

import typer


def emit_json(payload: Any) -> None:
    typer.echo(json.dumps(payload, indent=2, ensure_ascii=False))


def emit_parts(payload: dict[str, dict[str, Any]], as_json: bool) -> None:
    """A report made of parts that each carry `ok` (and `error` when not ok)."""
    if as_json:
        emit_json(payload)
        return
    for part, result in payload.items():
        status = "ok  " if result.get("ok") else "FAIL"
        detail = result.get("error") or ", ".join(
            f"{k}={v}" for k, v in result.items() if k not in {"ok", "error"}
        )
        typer.echo(f"[{status}] {part}: {detail}")


def exit_unless_all_ok(payload: dict[str, dict[str, Any]]) -> None:
    if not all(part.get("ok") for part in payload.values()):
        raise typer.Exit(code=1)


def plain(value: Any) -> str:
    """A value as one line of text for the terminal. Dataset text is untrusted: control
    characters (terminal escapes, newlines) become spaces; None becomes "-"."""
    return "-" if value is None else "".join(
        char if char.isprintable() else " " for char in str(value))


def print_table(rows: list[dict[str, Any]], columns: list[str],
                max_widths: dict[str, int] | None = None) -> None:
    """Rows as aligned columns (their cells `plain`); cells wider than max_widths are cut
    with an ellipsis."""
    widths = {
        c: min(max([len(c), *(len(plain(row[c])) for row in rows)]), (max_widths or {}).get(c, 200))
        for c in columns
    }

    def line(values: list[Any]) -> str:
        cells = [plain(v) for v in values]
        return "  ".join(
            (cell if len(cell) <= widths[c] else cell[: widths[c] - 1] + "…").ljust(widths[c])
            for c, cell in zip(columns, cells, strict=True)
        ).rstrip()

    typer.echo(line(columns))
    for row in rows:
        typer.echo(line([row[c] for c in columns]))
