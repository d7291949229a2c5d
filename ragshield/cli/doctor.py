"""`ragshield doctor`."""

from __future__ import annotations

import typer

from ragshield.cli.output import emit_parts, exit_unless_all_ok
from ragshield.config import Settings


def doctor(as_json: bool = typer.Option(False, "--json", help="Print one JSON object.")) -> None:
    """Check the LLM, the smallest and the larger packaged LLMs, the embeddings and the
    database."""
    from ragshield.doctor import run_doctor

    report = run_doctor(Settings())
    emit_parts(report, as_json)
    exit_unless_all_ok(report)
