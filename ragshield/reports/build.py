"""`write_report`: a run's tables and figures into a folder as report.md, report.html and
PNG files."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from ragshield.errors import UserError
from ragshield.evaluation import RunTables
from ragshield.metrics.summary import judge_metrics
from ragshield.reports import figures
from ragshield.reports.render import html_page, markdown
from ragshield.reports.stacking import with_stacked_judge
from ragshield.reports.tables import (crag_tables, fallback_table, grader_table, judge_series,
                                      overview_table, quality_table, risk_table, switch_table,
                                      threshold_table)


# Figures drawn only for some runs: a report without one removes an earlier report's.
FALLBACK_FIGURE, SWITCH_FIGURE = "fallback.png", "switch.png"


class ReportError(UserError, ValueError):
    """The report cannot be written where asked."""


@dataclass(frozen=True)
class ReportFiles:
    markdown: Path
    html: Path
    metrics: Path
    figures: list[Path]


def report_folder(out_dir: Path) -> None:
    """The report's folder, created if missing; ReportError naming the path when it cannot be
    (a file of that name, no permission), checked before any metric is computed."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ReportError(f"cannot write the report to {out_dir}: it is a file, not a "
                         "folder") from None
    except OSError as exc:
        raise ReportError(f"cannot write the report to {out_dir}: {exc.strerror}") from None


def write_report(tables: RunTables, out_dir: Path, *, n_resamples: int = 1000,
                 seed: int = 0) -> ReportFiles:
    report_folder(out_dir)
    verdicts, stacking_note = with_stacked_judge(tables.verdicts, seed=seed)
    tables = replace(tables, verdicts=verdicts)
    metrics = judge_metrics(tables.verdicts, n_resamples=n_resamples, seed=seed)
    series = judge_series(tables)
    risk = risk_table(metrics)
    risk.note += " " + stacking_note
    sections = [overview_table(tables), risk, quality_table(metrics),
                threshold_table(tables, series), *crag_tables(tables, series)]
    grader = grader_table(tables)
    if grader is not None:
        sections.append(grader)
    pictures = [figures.pr_figure(tables, series, out_dir / "pr_curves.png"),
                figures.risk_coverage_figure(tables, series, out_dir / "risk_coverage.png")]
    fallback = fallback_table(tables, series)
    if fallback is not None:
        sections.append(fallback)
        pictures.append(figures.fallback_figure(tables, series, out_dir / FALLBACK_FIGURE))
    switch = switch_table(tables, series)
    if switch is not None:
        sections.append(switch)
        pictures.append(figures.switch_figure(tables, series, out_dir / SWITCH_FIGURE))
    for name in (FALLBACK_FIGURE, SWITCH_FIGURE):  # one of an earlier report in this folder
        if out_dir / name not in pictures:
            (out_dir / name).unlink(missing_ok=True)
    title = f"ragshield run {tables.run_id} ({tables.config.get('dataset')})"
    files = ReportFiles(markdown=out_dir / "report.md", html=out_dir / "report.html",
                        metrics=out_dir / "metrics.json", figures=pictures)
    files.markdown.write_text(markdown(title, sections, pictures), encoding="utf-8")
    files.html.write_text(html_page(title, sections, pictures), encoding="utf-8")
    files.metrics.write_text(json.dumps({"run": tables.run_id, "truth": tables.truth,
                                         "judges": metrics}, indent=2), encoding="utf-8")
    return files
