"""The Demo tab's threshold panel: what keep = score >= t would have done on a stored run
(coverage and risk, beside the judge's own decisions), live as the slider moves. The
numbers come from ragshield.services.runs.thresholds."""

from __future__ import annotations

from typing import Any

import gradio as gr

from ragshield.errors import UserError
from ragshield.services.runs.thresholds import (ScoreRange, ThresholdChoice, operating_points,
                                                threshold_choice)
from ragshield.ui.context import UiContext
from ragshield.ui.demo_render import operating_points_html
from ragshield.ui.html_render import message_html

NO_RUNS = ("No stored runs yet: start one with `python -m ragshield run --dataset demo` and "
           "refresh.")


def threshold_html(context: UiContext, run_id: Any, judge: str | None, threshold: float) -> str:
    """Coverage and risk of the judge's own decisions and of keep = score >= threshold."""
    if run_id is None:
        return message_html(NO_RUNS)
    try:
        points = operating_points(context.tables, run_id, judge, threshold)
    except UserError as exc:
        return message_html(str(exc), "error")
    return operating_points_html(str(judge), points)


def choice_html(context: UiContext, choice: ThresholdChoice) -> str:
    """The table of the choice at its starting threshold, or why there is none."""
    if choice.run_id is None:
        return message_html(NO_RUNS)
    if choice.scores is None:
        return message_html(str(choice.problem), "error")
    return threshold_html(context, choice.run_id, choice.judge, choice.scores.middle)


def _slider(choice: ThresholdChoice) -> gr.Slider:
    scores = choice.scores or ScoreRange(0.0, 1.0, 0.5)
    return gr.Slider(minimum=scores.low, maximum=scores.high, value=scores.middle,
                     step=(scores.high - scores.low) / 200, interactive=choice.scores is not None)


def _choice_outputs(context: UiContext,
                    choice: ThresholdChoice) -> tuple[gr.Dropdown, gr.Slider, str]:
    return (gr.Dropdown(choices=choice.judges, value=choice.judge), _slider(choice),
            choice_html(context, choice))


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

    def choose(run_id: Any = None, judge_name: str | None = None) -> ThresholdChoice:
        return threshold_choice(context.store, context.tables, run_id, judge_name)

    def on_runs() -> tuple[gr.Dropdown, gr.Dropdown, gr.Slider, str]:
        choice = choose()
        return (gr.Dropdown(choices=choice.runs, value=choice.run_id),
                *_choice_outputs(context, choice))

    def on_run(run_id: Any) -> tuple[gr.Dropdown, gr.Slider, str]:
        return _choice_outputs(context, choose(run_id))

    def on_judge(run_id: Any, judge_name: str | None) -> tuple[gr.Dropdown, gr.Slider, str]:
        return _choice_outputs(context, choose(run_id, judge_name))

    def on_threshold(run_id: Any, judge_name: str | None, value: float) -> str:
        return threshold_html(context, run_id, judge_name, float(value))

    gr.on([accordion.expand, refresh.click], on_runs, outputs=[run, judge, threshold, table],
          api_name="demo_runs")
    run.input(on_run, inputs=run, outputs=[judge, threshold, table],
              api_name="demo_threshold_judges")
    judge.input(on_judge, inputs=[run, judge], outputs=[judge, threshold, table],
                api_name="demo_threshold_judge")
    threshold.input(on_threshold, inputs=[run, judge, threshold], outputs=table,
                    api_name="demo_threshold", trigger_mode="always_last")
