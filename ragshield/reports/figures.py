"""PNG figures of a run: PR curves, risk-coverage curves, and the fallback and switch curves
when the run stored the answers they need. `dpi` sets the resolution (the report's by
default; the dashboard draws smaller ones, faster).

A curve has a point per distinct score (10k for 10k samples); it is drawn through at most
MAX_POINTS of them, evenly spaced along the sweep and always with both ends, which looks
the same at these sizes and draws many times faster. The exact values are in the tables."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display on servers
# Titles and labels carry names people chose (a policy, a judge, a run): a "$" in them is a
# dollar sign, not mathtext (which failed to parse "a$\foo$b" and broke the Policy panel).
matplotlib.rcParams["text.parse_math"] = False

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ragshield.evaluation import RunTables  # noqa: E402
from ragshield.metrics.curves import (random_switch_accuracy, replacement_curve,  # noqa: E402
                                      risk_coverage_curve)
from ragshield.metrics.precision_recall import pr_curve  # noqa: E402
from ragshield.reports.tables import JudgeSeries  # noqa: E402

REPORT_DPI = 110
MAX_POINTS = 400  # per curve drawn
# What tight_layout() finds for every figure here (same size, fonts and axis limits),
# given at once: computing it costs as much as drawing the figure.
MARGINS = {"left": 0.105, "right": 0.975, "bottom": 0.127, "top": 0.92}


def save_figure(figure, path: Path, dpi: int) -> Path:
    figure.savefig(path, dpi=dpi)
    plt.close(figure)
    return path


def _axes(title: str, xlabel: str, ylabel: str):
    figure, axes = plt.subplots(figsize=(6.4, 4.6))
    figure.subplots_adjust(**MARGINS)
    axes.set(title=title, xlabel=xlabel, ylabel=ylabel, xlim=(0, 1.02), ylim=(0, 1.02))
    axes.grid(alpha=0.3)
    return figure, axes


def thinned(*values: np.ndarray) -> tuple[np.ndarray, ...]:
    """The arrays (a curve's coordinates) at no more than MAX_POINTS evenly spaced indices,
    the first and the last included."""
    size = len(values[0])
    if size <= MAX_POINTS:
        return values
    index = np.unique(np.linspace(0, size - 1, MAX_POINTS).round().astype(int))
    return tuple(v[index] for v in values)


def _plot(axes, judge: str, series: JudgeSeries, x: np.ndarray, y: np.ndarray) -> None:
    if series.scored:
        axes.plot(*thinned(x, y), drawstyle="steps-post", label=judge)
    else:  # a hard judge is one operating point: its keep decisions
        axes.plot(x, y, "o", label=judge)


def pr_figure(tables: RunTables, series: dict[str, JudgeSeries], path: Path, *,
              dpi: int = REPORT_DPI) -> Path:
    figure, axes = _axes("Precision-recall (AwF truth)", "recall", "precision")
    correct = tables.samples["answer_correct"].to_numpy(dtype=bool)
    support = tables.samples["passages_support"].to_numpy(dtype=bool)
    for judge, s in series.items():
        curve = pr_curve(s.score, correct[s.rows] & support[s.rows], support[s.rows])
        # A hard judge's "score" is its keep bit: the first sweep point (threshold 1) is it.
        x, y = ((curve.recall, curve.precision) if s.scored
                else (curve.recall[:1], curve.precision[:1]))
        _plot(axes, judge, s, x, y)
    axes.legend(fontsize=7, loc="best")
    return save_figure(figure, path, dpi)


def risk_coverage_figure(tables: RunTables, series: dict[str, JudgeSeries], path: Path, *,
                         dpi: int = REPORT_DPI) -> Path:
    figure, axes = _axes("Risk-coverage", "coverage", "risk (share of kept answers wrong)")
    correct = tables.samples["answer_correct"].to_numpy(dtype=bool)
    for judge, s in series.items():
        curve = risk_coverage_curve(s.score, correct[s.rows])
        x, y = (curve.coverage, curve.risk) if s.scored else (curve.coverage[:1], curve.risk[:1])
        _plot(axes, judge, s, x, y)
    axes.legend(fontsize=7, loc="best")
    return save_figure(figure, path, dpi)


def _replacement_figure(tables: RunTables, series: dict[str, JudgeSeries], path: Path, *,
                        title: str, rate: str, other: str, random_baseline: bool,
                        dpi: int) -> Path:
    """Accuracy against the share of answers replaced by the `other` answers' column."""
    figure, axes = _axes(title, rate, "accuracy")
    own = tables.samples["answer_correct"].to_numpy(dtype=bool)
    new = tables.samples[other].to_numpy(dtype=bool)
    if random_baseline:
        rates = np.linspace(0, 1, 11)
        axes.plot(rates, random_switch_accuracy(rates, own, new), "k--", label="random")
    for judge, s in series.items():
        curve = replacement_curve(s.score, own[s.rows], new[s.rows])
        axes.plot(*thinned(curve.rate, curve.accuracy), marker="." if not s.scored else None,
                  label=judge)
    axes.legend(fontsize=7, loc="best")
    return save_figure(figure, path, dpi)


def fallback_figure(tables: RunTables, series: dict[str, JudgeSeries], path: Path, *,
                    dpi: int = REPORT_DPI) -> Path:
    return _replacement_figure(tables, series, path, title="No-RAG fallback",
                               rate="fallback rate", other="norag_correct", random_baseline=False,
                               dpi=dpi)


def switch_figure(tables: RunTables, series: dict[str, JudgeSeries], path: Path, *,
                  dpi: int = REPORT_DPI) -> Path:
    return _replacement_figure(tables, series, path, title="Switch to a larger model",
                               rate="switch rate", other="larger_correct", random_baseline=True,
                               dpi=dpi)
