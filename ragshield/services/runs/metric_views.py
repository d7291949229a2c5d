"""Per-judge metrics of a stored run or of a verdict file, and a run's report folder: what
`ragshield metrics` and `ragshield report` show."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragshield.config import Settings
from ragshield.errors import UserError
from ragshield.evaluation import RunTables, run_tables
from ragshield.metrics.summary import judge_metrics
from ragshield.reports.build import ReportFiles, report_folder, write_report
from ragshield.services.runs.llm_grading import configured_grader
from ragshield.store.database import Store
from ragshield.store.runs import get_run
from ragshield.verdict_files import read_verdicts_file


class EmptyRunError(UserError, ValueError):
    """The run has no saved answer to report on."""


@dataclass(frozen=True)
class JudgeMetrics:
    """judge -> its metrics (ragshield.metrics.summary.judge_metrics), and with the LLM grader
    the agreement of the grading rules and the grader on the run's answers."""
    by_judge: dict[str, dict[str, Any]]
    grader_agreement: dict[str, Any] | None = None


@dataclass(frozen=True)
class RunReport:
    files: ReportFiles
    grader_agreement: dict[str, Any] | None


def _tables(store: Store, settings: Settings, run_id: int, truth: str,
            llm_grader: bool) -> RunTables:
    """The run's tables under `truth`; with `llm_grader`, answers are also graded by the
    configured model through the call cache."""
    grader = configured_grader(settings, store) if llm_grader else None
    return run_tables(store, run_id, truth, grader=grader)


def run_metrics(store: Store, settings: Settings, run_id: int, *, truth: str = "auto",
                n_resamples: int = 1000, seed: int = 0,
                llm_grader: bool = False) -> JudgeMetrics:
    """Every judge's metrics on a stored run, with bootstrap intervals of `n_resamples`."""
    tables = _tables(store, settings, run_id, truth, llm_grader)
    if tables.samples.empty:  # not an empty table that reads as a result
        raise EmptyRunError(f"run {run_id} has no saved answers yet")
    return JudgeMetrics(judge_metrics(tables.verdicts, n_resamples=n_resamples, seed=seed),
                        tables.grader_agreement)


def file_metrics(path: Path, *, n_resamples: int = 1000, seed: int = 0) -> JudgeMetrics:
    """Every judge's metrics on a JSONL file of verdicts made elsewhere (which carry their
    own truth)."""
    return JudgeMetrics(judge_metrics(read_verdicts_file(path), n_resamples=n_resamples,
                                      seed=seed))


def write_run_report(store: Store, settings: Settings, run_id: int, out: Path, *,
                     truth: str = "auto", n_resamples: int = 1000, seed: int = 0,
                     llm_grader: bool = False) -> RunReport:
    """Write the run's report.md, report.html, metrics and figures into the folder `out`,
    which is checked (after the run is known) before anything is computed. A folder made for
    a run with nothing to report is removed again."""
    get_run(store, run_id)  # an unknown run leaves no folder behind
    made = not out.exists()
    report_folder(out)
    tables = _tables(store, settings, run_id, truth, llm_grader)
    if tables.samples.empty:
        if made:
            out.rmdir()
        raise EmptyRunError(f"run {run_id} has no saved answers yet")
    return RunReport(write_report(tables, out, n_resamples=n_resamples, seed=seed),
                     tables.grader_agreement)
