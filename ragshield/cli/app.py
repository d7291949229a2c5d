"""The root command and the registration of every command group."""

from __future__ import annotations

import typer

from ragshield.cli import (ask, corpus, datasets, doctor, judges, labels, metrics, models,
                           policy, run, search)

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="ragshield: risk control for RAG.")
app.command()(doctor.doctor)
app.add_typer(models.app, name="models")
app.add_typer(corpus.app, name="corpus")
app.command()(search.search)
app.add_typer(datasets.app, name="datasets")
app.command()(ask.ask)
app.command()(run.run)
app.add_typer(run.runs_app, name="runs")
app.command()(metrics.metrics)
app.command()(metrics.report)
app.add_typer(labels.app, name="labels")
app.add_typer(policy.app, name="policy")
app.add_typer(judges.app, name="judges")


def main() -> None:
    app(prog_name="python -m ragshield")
