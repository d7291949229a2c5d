"""`ragshield models ...`: the packaged models."""

from __future__ import annotations

import typer

from ragshield.cli.output import emit_json, emit_parts, exit_unless_all_ok, print_table
from ragshield.config import Settings

app = typer.Typer(no_args_is_help=True, help="The packaged models.")


@app.command("list")
def list_(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """The packaged models: the name that --model and --judge-model take, the model, its
    file, and whether the packages that carry it are installed."""
    from ragshield.services.models import packaged_models

    rows = packaged_models()
    if as_json:
        emit_json(rows)
    else:
        print_table(rows, ["name", "model", "file", "installed"])


@app.command("prepare")
def prepare(as_json: bool = typer.Option(False, "--json", help="Print one JSON object.")) -> None:
    """Assemble and verify the packaged GGUF models in the cache directory."""
    from ragshield.services.models import prepare_models

    report = prepare_models(Settings())
    emit_parts(report, as_json)
    exit_unless_all_ok(report)
