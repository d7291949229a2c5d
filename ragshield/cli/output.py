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
