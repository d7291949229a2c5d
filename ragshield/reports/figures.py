"""PNG figures of a run: PR curves, risk-coverage curves, and the fallback and switch curves
when the run stored the answers they need."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display on servers

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ragshield.evaluation import RunTables  # noqa: E402
from ragshield.metrics.curves import (fallback_curve, random_switch_accuracy,  # noqa: E402
                                      risk_coverage_curve, switch_curve)
from ragshield.metrics.precision_recall import pr_curve  # noqa: E402
from ragshield.reports.tables import JudgeSeries  # noqa: E402


def _save(figure, path: Path) -> Path:
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def _axes(title: str, xlabel: str, ylabel: str):
    figure, axes = plt.subplots(figsize=(6.4, 4.6))
    axes.set(title=title, xlabel=xlabel, ylabel=ylabel, xlim=(0, 1.02), ylim=(0, 1.02))
    axes.grid(alpha=0.3)
    return figure, axes


def _plot(axes, judge: str, series: JudgeSeries, x: np.ndarray, y: np.ndarray) -> None:
    if series.scored:
        axes.plot(x, y, drawstyle="steps-post", label=judge)
    else:  # a hard judge is one operating point: its keep decisions
        axes.plot(x, y, "o", label=judge)


def pr_figure(tables: RunTables, series: dict[str, JudgeSeries], path: Path) -> Path:
    figure, axes = _axes("Precision-recall (AwF truth)", "recall", "precision")
    correct = tables.samples["answer_correct"].to_numpy(dtype=bool)
    support = tables.samples["passages_support"].to_numpy(dtype=bool)
    for judge, s in series.items():
        curve = pr_curve(s.score, correct[s.rows] & support[s.rows], support[s.rows])
        # A hard judge's "score" is its keep bit: the first sweep point (threshold 1) is it.
        x, y = (curve.recall, curve.precision) if s.scored else (curve.recall[:1], curve.precision[:1])
        _plot(axes, judge, s, x, y)
    axes.legend(fontsize=7, loc="best")
    return _save(figure, path)


def risk_coverage_figure(tables: RunTables, series: dict[str, JudgeSeries], path: Path) -> Path:
    figure, axes = _axes("Risk-coverage", "coverage", "risk (share of kept answers wrong)")
    correct = tables.samples["answer_correct"].to_numpy(dtype=bool)
    for judge, s in series.items():
        curve = risk_coverage_curve(s.score, correct[s.rows])
        x, y = (curve.coverage, curve.risk) if s.scored else (curve.coverage[:1], curve.risk[:1])
        _plot(axes, judge, s, x, y)
    axes.legend(fontsize=7, loc="best")
    return _save(figure, path)


def fallback_figure(tables: RunTables, series: dict[str, JudgeSeries], path: Path) -> Path:
    figure, axes = _axes("No-RAG fallback", "fallback rate", "accuracy")
    samples = tables.samples
    rag, norag = (samples[c].to_numpy(dtype=bool) for c in ("answer_correct", "norag_correct"))
    for judge, s in series.items():
        curve = fallback_curve(s.score, rag[s.rows], norag[s.rows])
        axes.plot(curve.rate, curve.accuracy, marker="." if not s.scored else None, label=judge)
    axes.legend(fontsize=7, loc="best")
    return _save(figure, path)


def switch_figure(tables: RunTables, series: dict[str, JudgeSeries], path: Path) -> Path:
    figure, axes = _axes("Switch to a larger model", "switch rate", "accuracy")
    samples = tables.samples
    small, large = (samples[c].to_numpy(dtype=bool) for c in ("answer_correct", "larger_correct"))
    rates = np.linspace(0, 1, 11)
    axes.plot(rates, random_switch_accuracy(rates, small, large), "k--", label="random")
    for judge, s in series.items():
        curve = switch_curve(s.score, small[s.rows], large[s.rows])
        axes.plot(curve.rate, curve.accuracy, marker="." if not s.scored else None, label=judge)
    axes.legend(fontsize=7, loc="best")
    return _save(figure, path)
