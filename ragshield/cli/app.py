"""The root command and the registration of every command group."""

from __future__ import annotations

from typing import Optional

import typer

from ragshield import __version__
from ragshield.cli import (ask, corpus, datasets, doctor, judges, keys, labels, metrics,
                           models, policy, run, search, serve)

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="ragshield: risk control for RAG.")


def _print_version(wanted: bool) -> None:
    if wanted:
        typer.echo(f"ragshield {__version__}")
        raise typer.Exit()


@app.callback()
def root(version: bool = typer.Option(False, "--version", callback=_print_version,
                                      is_eager=True, help="Print the version and exit.")
         ) -> None:
    pass


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
app.command("app")(serve.web_app)
app.command()(serve.serve)
app.add_typer(keys.app, name="keys")


def main(args: Optional[list[str]] = None, prog_name: str = "ragshield") -> None:
    """Run the command line on `args` (default: sys.argv[1:]); usage lines name the command
    as `prog_name` (the installed script, or `python -m ragshield`)."""
    app(args=args, prog_name=prog_name)
