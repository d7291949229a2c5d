"""The Demo tab's threshold panel: what keep = score >= t would have done on a stored run
(coverage and risk, beside the judge's own decisions), live as the slider moves."""

from __future__ import annotations

from dataclasses import dataclass, field

import gradio as gr
import pandas as pd

from ragshield.errors import UserError
from ragshield.metrics.risk import risk_metrics
from ragshield.store.runs import list_runs
from ragshield.ui.context import UiContext
from ragshield.ui.demo_render import operating_points_html
from ragshield.ui.html_render import message_html

NO_RUNS = ("No stored runs yet: start one with `python -m ragshield run --dataset demo` and "
           "refresh.")


class ThresholdInputError(UserError, ValueError):
    """The chosen run or judge has no scores to threshold."""


def run_choices(context: UiContext) -> list[tuple[str, int]]:
    """The stored runs, latest first."""
    return [(f"run {run.id}: {run.name or run.dataset} ({run.done}/{run.total}, {run.status})",
             run.id) for run in reversed(list_runs(context.store))]


def _decided(context: UiContext, run_id: int) -> pd.DataFrame:
    """The run's verdicts that reached a decision (unavailable and failed ones left out)."""
    verdicts = context.tables.get(int(run_id), "auto").verdicts
    return verdicts[verdicts["keep"].notna()]


def scored_judges(context: UiContext, run_id: int) -> list[str]:
    decided = _decided(context, run_id)
    return list(dict.fromkeys(decided.loc[decided["score"].notna(), "judge"]))


@dataclass(frozen=True)
class ScoreRange:
    low: float
    high: float
    middle: float  # the median score, where the slider starts


def _judge_rows(context: UiContext, run_id: int, judge: str | None) -> pd.DataFrame:
    """The judge's decided verdicts in the run; ThresholdInputError if it has no scores there."""
    decided = _decided(context, run_id)
    rows = decided[decided["judge"] == judge]
    if judge is None or rows["score"].notna().sum() == 0:
        scored = ", ".join(scored_judges(context, run_id)) or "none"
        raise ThresholdInputError(f"run {run_id} has no scores from judge {judge!r}; judges with "
                             f"scores: {scored}")
    return rows


def score_range(context: UiContext, run_id: int, judge: str) -> ScoreRange:
    scores = _judge_rows(context, run_id, judge)["score"].dropna()
    low, high = float(scores.min()), float(scores.max())
    return ScoreRange(low, high if high > low else low + 1.0, float(scores.median()))


def threshold_html(context: UiContext, run_id: int | None, judge: str | None,
                   threshold: float) -> str:
    """Coverage and risk of the judge's own decisions and of keep = score >= threshold."""
    if run_id is None:
        return message_html(NO_RUNS)
    try:
        rows = _judge_rows(context, run_id, judge)
    except UserError as exc:
        return message_html(str(exc), "error")
    answerable = rows["answer_correct"].to_numpy(dtype=bool)
    scores = rows["score"].to_numpy(dtype=float)
    at_threshold = scores >= threshold  # NaN (unscored) compares False: never kept
    return operating_points_html(str(judge), {
        "the judge's own": risk_metrics(answerable, rows["keep"].to_numpy(dtype=bool)),
        f"score >= {threshold:.4g}": risk_metrics(answerable, at_threshold),
    })


@dataclass
class ThresholdPanel:
    """The threshold panel's state: runs, the chosen run's scored judges, the slider range
    and the table, with defaults (latest run, first judge, median score) filled in."""

    runs: list[tuple[str, int]]
    run_id: int | None = None
    judges: list[str] = field(default_factory=list)
    judge: str | None = None
    scores: ScoreRange | None = None
    threshold: float | None = None
    html: str = ""


def threshold_panel(context: UiContext, run_id: int | None = None,
                    judge: str | None = None) -> ThresholdPanel:
    panel = ThresholdPanel(runs=run_choices(context))
    panel.run_id = run_id if run_id is not None else next(
        (value for _, value in panel.runs), None)
    if panel.run_id is None:
        panel.html = message_html(NO_RUNS)
        return panel
    try:
        panel.judges = scored_judges(context, panel.run_id)
        panel.judge = judge if judge in panel.judges else next(iter(panel.judges), None)
        panel.scores = score_range(context, panel.run_id, panel.judge)
    except UserError as exc:
        panel.html = message_html(str(exc), "error")
        return panel
    panel.threshold = panel.scores.middle
    panel.html = threshold_html(context, panel.run_id, panel.judge, panel.threshold)
    return panel


def _slider(panel: ThresholdPanel) -> gr.Slider:
    scores = panel.scores or ScoreRange(0.0, 1.0, 0.5)
    value = scores.middle if panel.threshold is None else panel.threshold
    return gr.Slider(minimum=scores.low, maximum=scores.high, value=value,
                     step=(scores.high - scores.low) / 200, interactive=panel.scores is not None)


def _panel_outputs(panel: ThresholdPanel) -> tuple[gr.Dropdown, gr.Slider, str]:
    return (gr.Dropdown(choices=panel.judges, value=panel.judge), _slider(panel), panel.html)


def build_threshold_panel(context: UiContext) -> None:
    with gr.Accordion("Thresholds on a stored run", open=False) as accordion:
        gr.Markdown("What would a threshold on a judge's score have done on a stored run? "
                    "Move the slider: answers scoring at least the threshold are kept.")
        with gr.Row():
            run = gr.Dropdown(label="Run", choices=[], value=None, scale=3,
                              allow_custom_value=True)
            refresh = gr.Button("Refresh runs", size="sm", scale=1)
            judge = gr.Dropdown(label="Judge (with scores)", choices=[], value=None, scale=2,
                                allow_custom_value=True)
        threshold = gr.Slider(0.0, 1.0, value=0.5, label="Threshold", interactive=False)
        table = gr.HTML(message_html("Open the panel or refresh to load the runs."))

    def on_runs() -> tuple[gr.Dropdown, gr.Dropdown, gr.Slider, str]:
        panel = threshold_panel(context)
        return (gr.Dropdown(choices=panel.runs, value=panel.run_id), *_panel_outputs(panel))

    def on_run(run_id: int | None) -> tuple[gr.Dropdown, gr.Slider, str]:
        return _panel_outputs(threshold_panel(context, run_id))

    def on_judge(run_id: int | None, judge_name: str | None) -> tuple[gr.Dropdown, gr.Slider, str]:
        return _panel_outputs(threshold_panel(context, run_id, judge_name))

    def on_threshold(run_id: int | None, judge_name: str | None, value: float) -> str:
        return threshold_html(context, run_id, judge_name, float(value))

    gr.on([accordion.expand, refresh.click], on_runs, outputs=[run, judge, threshold, table],
          api_name="demo_runs")
    run.input(on_run, inputs=run, outputs=[judge, threshold, table],
              api_name="demo_threshold_judges")
    judge.input(on_judge, inputs=[run, judge], outputs=[judge, threshold, table],
                api_name="demo_threshold_judge")
    threshold.input(on_threshold, inputs=[run, judge, threshold], outputs=table,
                    api_name="demo_threshold", trigger_mode="always_last")
