"""The Dashboard's pictures of what a shield trades: wrong answers among those shown against
the share of answers shown. One large figure for the rule's operating point, showing
everything as the reference and the strongest judges' curves; and small multiples, one
panel per judge on the same axes. Colours are the Okabe-Ito palette (told apart with the
common colour-vision deficiencies) and every line also differs in dash and marker, so no
curve is told by colour alone. Each figure carries a text alternative with its numbers."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ragshield.reports.figures import plt, save_figure, thinned
from ragshield.reports.tradeoff import JudgeCurve, Tradeoff, shown_percent

# Okabe & Ito (2008), "Color universal design": black is kept for the rule.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442"]
DASHES = ["-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 1))]
MARKERS = ["o", "s", "^", "D", "v", "P", "X"]
KEEP_ALL_COLOUR = "#666666"
PANEL_COLUMNS = 4
CELL, CELL_HIGH = 1.12, 1.22  # a panel's width and height with the gaps, in its own units


def _style(index: int) -> dict:
    return {"color": PALETTE[index % len(PALETTE)], "linestyle": DASHES[index % len(DASHES)]}


def _curve(axes, curve: JudgeCurve, index: int, *, label: str | None, width: float) -> None:
    style = _style(index)
    if not math.isnan(curve.area):
        axes.plot(*thinned(curve.shown, curve.wrong), drawstyle="steps-post",
                  linewidth=width, label=label, **style)
        label = None  # the curve carries the legend entry
    axes.plot(*curve.point, marker=MARKERS[index % len(MARKERS)], color=style["color"],
              markersize=6, linestyle="none", label=label)


def _keep_all_line(axes, keep_all: tuple[float, float], label: str | None) -> None:
    if not math.isnan(keep_all[1]):
        axes.axhline(keep_all[1], color=KEEP_ALL_COLOUR, linestyle="--", linewidth=1,
                     label=label)


def tradeoff_figure(tradeoff: Tradeoff, path: Path, *, dpi: int) -> Path:
    figure, axes = plt.subplots(figsize=(11.5, 4.3))
    figure.subplots_adjust(left=0.06, right=0.73, bottom=0.13, top=0.93)
    axes.set(title="What the shield trades: wrong answers among those shown",
             xlabel="answers shown (share of all questions)",
             ylabel="wrong among shown", xlim=(0, 1.02), ylim=(0, 1.02))
    axes.grid(alpha=0.3)
    for index, curve in enumerate(tradeoff.drawn()):
        _curve(axes, curve, index, label=curve.judge, width=1.8)
    _keep_all_line(axes, tradeoff.keep_all, None)
    keep_shown, keep_wrong = tradeoff.keep_all
    axes.plot(keep_shown, keep_wrong, marker="s", markersize=10, color=KEEP_ALL_COLOUR,
              linestyle="none", label=f"everything shown ({shown_percent(keep_wrong)} wrong)")
    shown, wrong = tradeoff.rule_point
    axes.plot(shown, wrong, marker="*", markersize=18, color="black", linestyle="none",
              label=f"the shield ({shown_percent(shown)} shown, {shown_percent(wrong)} wrong)")
    axes.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return save_figure(figure, path, dpi)


def judges_figure(tradeoff: Tradeoff, path: Path, *, dpi: int) -> Path:
    """One small panel per judge, PANEL_COLUMNS a row, each with its curve, its own point and
    the dashed line of showing everything, on the same scales: answers shown 0 to 1 left to
    right, wrong among shown 0 to 1 bottom to top. The panels are cells of one plot (a plot
    each took most of a Dashboard paint's time)."""
    count = max(len(tradeoff.judges), 1)
    rows, columns = math.ceil(count / PANEL_COLUMNS), min(count, PANEL_COLUMNS)
    figure = plt.figure(figsize=(2.85 * columns, 2.1 * rows))
    axes = figure.add_axes((0.01, 0.01, 0.98, 0.98))
    axes.set_axis_off()
    axes.set(xlim=(-0.05, columns * CELL - 0.1), ylim=(-0.3, rows * CELL_HIGH))
    axes.text(0, -0.2, "Each panel: answers shown from 0 to 100% left to right, wrong among them "
              "from 0 to 100% bottom to top; dashed: showing everything; the dot: the judge's "
              "own decisions.", fontsize=7, color="#444444")
    if not tradeoff.judges:
        axes.text(0.5, 0.5, "no judge decided any answer", ha="center")
    style = _style(0)
    for index, curve in enumerate(tradeoff.judges):
        x0, y0 = (index % PANEL_COLUMNS) * CELL, (rows - 1 - index // PANEL_COLUMNS) * CELL_HIGH
        axes.add_patch(plt.Rectangle((x0, y0), 1, 1, fill=False, linewidth=0.6,
                                     edgecolor="#999999"))
        axes.plot([x0 + 0.5, x0 + 0.5], [y0, y0 + 1], color="#dddddd", linewidth=0.5)
        axes.plot([x0, x0 + 1], [y0 + 0.5, y0 + 0.5], color="#dddddd", linewidth=0.5)
        keep_wrong = tradeoff.keep_all[1]
        if not math.isnan(keep_wrong):
            axes.plot([x0, x0 + 1], [y0 + keep_wrong] * 2, color=KEEP_ALL_COLOUR, linestyle="--",
                      linewidth=0.8)
        if not math.isnan(curve.area):
            shown, wrong = thinned(curve.shown, curve.wrong)
            axes.plot(x0 + shown, y0 + np.clip(wrong, 0, 1), drawstyle="steps-post",
                      linewidth=1.2, **style)
        if not math.isnan(curve.point[1]):
            axes.plot(x0 + curve.point[0], y0 + curve.point[1], marker=MARKERS[0],
                      color=style["color"], markersize=5, linestyle="none")
        axes.text(x0 + 0.5, y0 + 1.04, f"{curve.judge}: {shown_percent(curve.point[0])} shown, "
                  f"{shown_percent(curve.point[1])} wrong", ha="center", fontsize=8)
    return save_figure(figure, path, dpi)

