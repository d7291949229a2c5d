"""`ragshield metrics` (per-judge metrics of a run or of a verdict file) and
`ragshield report` (Markdown, HTML and PNG figures of a run)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer

from ragshield.cli.errors import fail, user_errors
from ragshield.cli.llm_options import Backend, BaseUrl, Model, NoLLMCache, settings_with
from ragshield.cli.output import emit_json, print_table
from ragshield.cli.store import opened_store

TRUTH_HELP = ("auto: automatic labels only; human: human labels win where a sample has them "
              "(majority of annotators), automatic elsewhere.")
# numpy and scikit-learn take seeds from 0 to 2**32 - 1; a bootstrap of more resamples than
# this is hours of work for no better interval.
MAX_SEED, MAX_RESAMPLES = 2**32 - 1, 100_000
LLM_GRADER_HELP = ("Also grade answers with the LLM (docs/METHODS.md 2): correct if the rules "
                   "match or the model says accurate; prints the agreement of rules and grader. "
                   "The model is chosen with --backend/--base-url/--model; grades are cached.")


def _agreement_line(agreement: dict[str, Any]) -> str:
    return "llm grader vs rules: " + json.dumps(agreement, separators=(", ", ": "))


def metrics(
    run: Optional[int] = typer.Argument(None, help="The run id (see `runs list`)."),
    verdicts: Optional[Path] = typer.Option(None, "--verdicts",
                                            help="Or a JSONL file of verdicts made elsewhere."),
    truth: str = typer.Option("auto", "--truth", help=TRUTH_HELP),
    resamples: int = typer.Option(1000, "--resamples", min=0, max=MAX_RESAMPLES,
                                  help="Bootstrap resamples for the 95% intervals (0: none)."),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_SEED, help="Seed of the bootstrap."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON: judge -> metrics."),
    llm_grader: bool = typer.Option(False, "--llm-grader", help=LLM_GRADER_HELP),
    backend: Backend = None, base_url: BaseUrl = None, model: Model = None,
    no_llm_cache: NoLLMCache = False,
) -> None:
    """Risk, carefulness, alignment, coverage, precision/recall/F1, max F1, PR-AUC per judge."""
    if (run is None) == (verdicts is None):
        fail("give a run id or --verdicts FILE (one of them)")
    if llm_grader and verdicts is not None:
        fail("--llm-grader grades a stored run's answers: give a run id, not --verdicts "
             "(a verdict file carries its own answer_correct labels)")
    from ragshield.services.runs.metric_views import file_metrics, run_metrics

    with user_errors():
        if verdicts is not None:
            result = file_metrics(verdicts, n_resamples=resamples, seed=seed)
        else:
            assert run is not None  # a run id, or --verdicts
            settings = settings_with(backend, base_url, model, no_llm_cache)
            with opened_store(settings) as store:
                result = run_metrics(store, settings, run, truth=truth, n_resamples=resamples,
                                     seed=seed, llm_grader=llm_grader)
    if result.grader_agreement is not None:
        typer.echo(_agreement_line(result.grader_agreement), err=True)
    if as_json:
        emit_json(result.by_judge)
        return
    rows = [{"judge": judge, "n": m["n"], **{k: "n/a" if m[k] is None else round(m[k], 3)
                                             for k in ("risk", "carefulness", "coverage",
                                                       "precision", "recall", "f1", "pr_auc",
                                                       "qpp_pr_auc")}}
            for judge, m in result.by_judge.items()]
    print_table(rows, ["judge", "n", "risk", "carefulness", "coverage", "precision", "recall",
                       "f1", "pr_auc", "qpp_pr_auc"])


def report(
    run: int = typer.Argument(..., help="The run id (see `runs list`)."),
    out: Path = typer.Option(..., "--out", help="Folder for report.md, report.html and PNGs."),
    truth: str = typer.Option("auto", "--truth", help=TRUTH_HELP),
    resamples: int = typer.Option(1000, "--resamples", min=0, max=MAX_RESAMPLES),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_SEED),
    llm_grader: bool = typer.Option(False, "--llm-grader", help=LLM_GRADER_HELP),
    backend: Backend = None, base_url: BaseUrl = None, model: Model = None,
    no_llm_cache: NoLLMCache = False,
) -> None:
    """Write a run's report: risk, AwF and CRAG tables, PR / risk-coverage / fallback /
    switch figures (and rules vs LLM grader with --llm-grader)."""
    from ragshield.services.runs.metric_views import write_run_report

    with user_errors():
        settings = settings_with(backend, base_url, model, no_llm_cache)
    with user_errors(), opened_store(settings) as store:
        written = write_run_report(store, settings, run, out, truth=truth,
                                   n_resamples=resamples, seed=seed, llm_grader=llm_grader)
    if written.grader_agreement is not None:
        typer.echo(_agreement_line(written.grader_agreement), err=True)
    files = written.files
    typer.echo(f"wrote {files.markdown}, {files.html}, {files.metrics} and "
               f"{len(files.figures)} figures")
