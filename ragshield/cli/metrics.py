"""`ragshield metrics` (per-judge metrics of a run or of a verdict file) and
`ragshield report` (Markdown, HTML and PNG figures of a run)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ragshield.cli.errors import fail, user_errors
from ragshield.cli.output import emit_json, print_table
from ragshield.cli.store import opened_store

TRUTH_HELP = ("auto: automatic labels only; human: human labels win where a sample has them "
              "(majority of annotators), automatic elsewhere.")


def metrics(
    run: Optional[int] = typer.Argument(None, help="The run id (see `runs list`)."),
    verdicts: Optional[Path] = typer.Option(None, "--verdicts",
                                            help="Or a JSONL file of verdicts made elsewhere."),
    truth: str = typer.Option("auto", "--truth", help=TRUTH_HELP),
    resamples: int = typer.Option(1000, "--resamples", min=0,
                                  help="Bootstrap resamples for the 95% intervals (0: none)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON: judge -> metrics."),
) -> None:
    """Risk, carefulness, alignment, coverage, precision/recall/F1, max F1, PR-AUC per judge."""
    from ragshield.evaluation import run_tables
    from ragshield.metrics.summary import judge_metrics
    from ragshield.verdict_files import read_verdicts_file

    if (run is None) == (verdicts is None):
        fail("give a run id or --verdicts FILE (one of them)")
    with user_errors():
        if verdicts is not None:
            table = read_verdicts_file(verdicts)
        else:
            with opened_store() as store:
                table = run_tables(store, run, truth).verdicts
        result = judge_metrics(table, n_resamples=resamples, seed=seed)
    if as_json:
        emit_json(result)
        return
    rows = [{"judge": judge, "n": m["n"], **{k: "n/a" if m[k] is None else round(m[k], 3)
                                             for k in ("risk", "carefulness", "coverage",
                                                       "precision", "recall", "f1", "pr_auc")}}
            for judge, m in result.items()]
    print_table(rows, ["judge", "n", "risk", "carefulness", "coverage", "precision", "recall",
                       "f1", "pr_auc"])


def report(
    run: int = typer.Argument(..., help="The run id (see `runs list`)."),
    out: Path = typer.Option(..., "--out", help="Folder for report.md, report.html and PNGs."),
    truth: str = typer.Option("auto", "--truth", help=TRUTH_HELP),
    resamples: int = typer.Option(1000, "--resamples", min=0),
    seed: int = typer.Option(0, "--seed"),
) -> None:
    """Write a run's report: risk, AwF and CRAG tables, PR / risk-coverage / fallback /
    switch figures."""
    from ragshield.evaluation import run_tables
    from ragshield.reports.build import write_report

    with user_errors(), opened_store() as store:
        tables = run_tables(store, run, truth)
        if tables.samples.empty:
            fail(f"run {run} has no saved answers yet")
        files = write_report(tables, out, n_resamples=resamples, seed=seed)
    typer.echo(f"wrote {files.markdown}, {files.html}, {files.metrics} and "
               f"{len(files.figures)} figures")
