"""`ragshield metrics` (per-judge metrics of a run or of a verdict file) and
`ragshield report` (Markdown, HTML and PNG figures of a run)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from ragshield.cli.errors import fail, user_errors
from ragshield.cli.llm_options import Backend, BaseUrl, Model, NoLLMCache, settings_with
from ragshield.cli.output import emit_json, print_table
from ragshield.cli.store import opened_store

if TYPE_CHECKING:
    from ragshield.config import Settings
    from ragshield.grading import LLMGrader
    from ragshield.store.database import Store

TRUTH_HELP = ("auto: automatic labels only; human: human labels win where a sample has them "
              "(majority of annotators), automatic elsewhere.")
LLM_GRADER_HELP = ("Also grade answers with the LLM (docs/METHODS.md 2): correct if the rules match or "
                   "the model says accurate; prints the agreement of rules and grader. The "
                   "model is chosen with --backend/--base-url/--model; grades are cached.")


def _grader(enabled: bool, settings: Settings, store: Store) -> LLMGrader | None:
    """The LLM grader on the chosen model (through the call cache), or None."""
    if not enabled:
        return None
    from ragshield.grading import LLMGrader
    from ragshield.llm.factory import make_llm

    return LLMGrader(make_llm(settings, store=store))


def _agreement_line(agreement: dict[str, Any]) -> str:
    return "llm grader vs rules: " + json.dumps(agreement, separators=(", ", ": "))


def metrics(
    run: Optional[int] = typer.Argument(None, help="The run id (see `runs list`)."),
    verdicts: Optional[Path] = typer.Option(None, "--verdicts",
                                            help="Or a JSONL file of verdicts made elsewhere."),
    truth: str = typer.Option("auto", "--truth", help=TRUTH_HELP),
    resamples: int = typer.Option(1000, "--resamples", min=0,
                                  help="Bootstrap resamples for the 95% intervals (0: none)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON: judge -> metrics."),
    llm_grader: bool = typer.Option(False, "--llm-grader", help=LLM_GRADER_HELP),
    backend: Backend = None, base_url: BaseUrl = None, model: Model = None,
    no_llm_cache: NoLLMCache = False,
) -> None:
    """Risk, carefulness, alignment, coverage, precision/recall/F1, max F1, PR-AUC per judge."""
    from ragshield.evaluation import run_tables
    from ragshield.metrics.summary import judge_metrics
    from ragshield.verdict_files import read_verdicts_file

    if (run is None) == (verdicts is None):
        fail("give a run id or --verdicts FILE (one of them)")
    if llm_grader and verdicts is not None:
        fail("--llm-grader grades a stored run's answers: give a run id, not --verdicts "
             "(a verdict file carries its own answer_correct labels)")
    agreement = None
    with user_errors():
        if verdicts is not None:
            table = read_verdicts_file(verdicts)
        else:
            settings = settings_with(backend, base_url, model, no_llm_cache)
            with opened_store(settings) as store:
                tables = run_tables(store, run, truth, grader=_grader(llm_grader, settings, store))
            table, agreement = tables.verdicts, tables.grader_agreement
        result = judge_metrics(table, n_resamples=resamples, seed=seed)
    if agreement is not None:
        typer.echo(_agreement_line(agreement), err=True)
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
    llm_grader: bool = typer.Option(False, "--llm-grader", help=LLM_GRADER_HELP),
    backend: Backend = None, base_url: BaseUrl = None, model: Model = None,
    no_llm_cache: NoLLMCache = False,
) -> None:
    """Write a run's report: risk, AwF and CRAG tables, PR / risk-coverage / fallback /
    switch figures (and rules vs LLM grader with --llm-grader)."""
    from ragshield.evaluation import run_tables
    from ragshield.reports.build import report_folder, write_report

    with user_errors():
        settings = settings_with(backend, base_url, model, no_llm_cache)
    with user_errors(), opened_store(settings) as store:
        report_folder(out)
        tables = run_tables(store, run, truth, grader=_grader(llm_grader, settings, store))
        if tables.samples.empty:
            fail(f"run {run} has no saved answers yet")
        files = write_report(tables, out, n_resamples=resamples, seed=seed)
    if tables.grader_agreement is not None:
        typer.echo(_agreement_line(tables.grader_agreement), err=True)
    typer.echo(f"wrote {files.markdown}, {files.html}, {files.metrics} and "
               f"{len(files.figures)} figures")
