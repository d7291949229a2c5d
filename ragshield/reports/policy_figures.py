"""PNG figures of a policy: the scores of its calibration answers, good and bad, under the
answer / defer / withhold bands its thresholds make; and its watch, the observed risk on
labels it was not fitted on as they came, against its promise.

Drawn on a Figure of their own (no pyplot), so that two pages may draw at once."""

from __future__ import annotations

import io

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ragshield.reports.figures import MARGINS

BANDS = {"answer": "#2ca02c", "defer": "#ff9f1c", "withhold": "#d62728"}
BINS = 30


def _png(figure: Figure, dpi: int) -> bytes:
    buffer = io.BytesIO()
    FigureCanvasAgg(figure)
    figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def _figure(title: str, xlabel: str, ylabel: str):
    figure = Figure(figsize=(6.4, 4.6))
    figure.subplots_adjust(**MARGINS)
    axes = figure.add_subplot()
    axes.set(title=title, xlabel=xlabel, ylabel=ylabel)
    axes.grid(alpha=0.3)
    return figure, axes


def score_histogram(scores: np.ndarray, good: np.ndarray, judge: str,
                    answer_at: float | None = None, withhold_below: float | None = None, *,
                    dpi: int) -> bytes:
    """How many good and bad calibration answers have each score (refusals and answers
    without a score left out), with the bands of the thresholds when there are some."""
    shown = np.isfinite(scores)
    scores, good = scores[shown], good[shown]
    thresholds = [t for t in (answer_at, withhold_below) if t is not None]
    low = min([*scores, *thresholds], default=0.0)
    high = max([*scores, *thresholds], default=1.0)
    pad = (high - low) * 0.02 or 0.01
    low, high = low - pad, high + pad
    figure, axes = _figure(f"Calibration answers by {judge} score", "score", "answers")
    edges = np.linspace(low, high, BINS + 1)
    axes.hist(scores[good], bins=edges, histtype="stepfilled", alpha=0.55, color="#1f77b4",
              label=f"good ({int(good.sum())})")
    axes.hist(scores[~good], bins=edges, histtype="stepfilled", alpha=0.55, color="#7f7f7f",
              label=f"bad ({int((~good).sum())})")
    if answer_at is not None:
        below = withhold_below if withhold_below is not None else low
        axes.axvspan(answer_at, high, color=BANDS["answer"], alpha=0.12, label="answer")
        if below < answer_at:
            axes.axvspan(below, answer_at, color=BANDS["defer"], alpha=0.12, label="defer")
        if withhold_below is not None:
            axes.axvspan(low, withhold_below, color=BANDS["withhold"], alpha=0.12,
                         label="withhold")
        for threshold in thresholds:
            axes.axvline(threshold, color="black", linewidth=1)
    axes.set_xlim(low, high)
    axes.legend(fontsize=7, loc="best")
    return _png(figure, dpi)


def watch_figure(labels: np.ndarray, risk: np.ndarray, low: np.ndarray, high: np.ndarray,
                 alpha: float, title: str, *, dpi: int) -> bytes:
    """Observed risk (wrong among answered) after each label, its 95% interval, and the
    promise: the line a breach crosses with the whole interval."""
    figure, axes = _figure(title, "labels it was not fitted on, in the order they came",
                           "wrong among the answers shown")
    axes.fill_between(labels, low, high, step="post", color="#1f77b4", alpha=0.2,
                      label="95% interval")
    axes.plot(labels, risk, drawstyle="steps-post", color="#1f77b4", label="observed risk")
    axes.axhline(alpha, color=BANDS["withhold"], linestyle="--",
                 label=f"promise: at most {alpha * 100:.3g}%")
    axes.set(xlim=(0, max(float(labels[-1]) if len(labels) else 1.0, 1.0)), ylim=(0, 1.02))
    axes.legend(fontsize=7, loc="best")
    return _png(figure, dpi)
