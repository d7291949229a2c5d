"""`ragshield doctor`."""

from __future__ import annotations

from typing import Optional

import typer

from ragshield.cli.errors import user_errors
from ragshield.cli.output import emit_parts, exit_unless_all_ok
from ragshield.config import Settings


def doctor(
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    only: Optional[str] = typer.Option(
        None, "--only", help="Check only these parts, comma-separated: llm, small_llm, "
                             "larger_llm, embeddings, database."),
) -> None:
    """Check the LLM, the smallest and the larger packaged LLMs, the embeddings and the
    database."""
    from ragshield.services.models import check_health

    with user_errors():
        report = check_health(Settings(), only)
    emit_parts(report, as_json)
    exit_unless_all_ok(report)
