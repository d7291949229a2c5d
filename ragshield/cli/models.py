"""`ragshield models ...`: the packaged models."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from ragshield.cli.output import emit_json, emit_parts, exit_unless_all_ok, print_table
from ragshield.config import Settings

if TYPE_CHECKING:
    from ragshield.llm.packaged_models import PackagedModel

app = typer.Typer(no_args_is_help=True, help="The packaged models.")


def _installed(model: PackagedModel) -> bool:
    """Whether every package that carries the model's bytes is installed."""
    from ragshield.llm.packaged_models import ModelPackageMissing, locate_part

    try:
        for part in model.parts:
            locate_part(part)
    except ModelPackageMissing:
        return False
    return True


@app.command("list")
def list_(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """The packaged models: the name that --model and --judge-model take, the model, its
    file, and whether the packages that carry it are installed."""
    from ragshield.llm.packaged_models import PACKAGED_MODELS

    rows = [{"name": name, "model": model.name, "file": model.filename,
             "installed": _installed(model)} for name, model in PACKAGED_MODELS.items()]
    if as_json:
        emit_json(rows)
    else:
        print_table(rows, ["name", "model", "file", "installed"])


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
