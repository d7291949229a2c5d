"""The Browse tab: pick a run, filter its samples (fold per judge, judge disagreement, label
state, human vs automatic label, text), and open any sample's full case study.

Handlers are plain functions of the UiContext, the tab's frame cache and plain values;
`build` wires them to components with named endpoints browse_runs, browse_filter,
browse_detail (typed sample id) and browse_select (a row picked in the table).
"""

from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd

from ragshield.errors import OptionError, UserError
from ragshield.evaluation import TRUTHS, RunTables
from ragshield.judging import decide
from ragshield.store.labels import label_history
from ragshield.store.runs import RunSummary, list_runs
from ragshield.types import Verdict
from ragshield.ui.browse_table import (DECISION, FOLDS, LABEL_STATES, BrowseFilters,
                                       BrowseFrame, BrowseFrames, filter_rows, shown_table)
from ragshield.ui.case_study import case_study_html, sample_case
from ragshield.ui.context import UiContext
from ragshield.ui.html_render import message_html

TITLE = "Browse"
CSS = """
.rs-case h4 { margin: 0.6em 0 0.2em; }
.rs-cs-section { margin: 0.8em 0; }
.rs-cs-pre { white-space: pre-wrap; word-break: break-word; margin: 2px 0; padding: 4px 6px;
  font-size: 0.85em; max-height: 24em; overflow: auto;
  background: var(--background-fill-secondary, #f6f6f6); }
.rs-cs-passage { margin: 0.4em 0; padding-left: 6px; border-left: 3px solid transparent; }
.rs-cs-cited { border-left-color: #2a8a4a; }
.rs-cs-details { margin: 0.3em 0 0.3em 0.6em; }
.rs-cs-details > summary { cursor: pointer; font-weight: 600; }
.rs-cs-msg { margin: 0.2em 0; }
.rs-cs-flag { color: #8a1010; }
.rs-cs-detail { margin: 0.5em 0; }
"""
HEAD = ""

ALL_DATASETS = "all datasets"
NO_RUN = "No run to browse yet: start one with `python -m ragshield run`."
PICK_SAMPLE = "Pick a row in the table or type a sample id to see its case study."
RunChoice = tuple[str, int]


# -- runs --------------------------------------------------------------------------------

def run_label(run: RunSummary) -> str:
    return (f"#{run.id} {run.dataset or '(dataset deleted)'} · {run.status} · "
            f"{run.done}/{run.total}" + (f" · {run.name}" if run.name else ""))


def run_choices(context: UiContext, dataset: str | None) -> tuple[str, list[str], list[RunChoice]]:
    """(the dataset filter in effect, datasets that have runs, the runs of that dataset,
    newest first). A dataset without runs (or none) means all datasets."""
    runs = sorted(list_runs(context.store), key=lambda run: run.id, reverse=True)
    datasets = sorted({run.dataset for run in runs if run.dataset})
    if dataset not in datasets:
        dataset = ALL_DATASETS
    shown = [run for run in runs if dataset == ALL_DATASETS or run.dataset == dataset]
    return dataset, datasets, [(run_label(run), run.id) for run in shown]


def browse_runs(context: UiContext, dataset: str | None,
                current: int | str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Updates of the dataset and run pickers; the run stays selected while it is listed,
    else the newest run of the dataset is picked."""
    dataset, datasets, runs = run_choices(context, dataset)
    ids = [run_id for _, run_id in runs]
    current_text = str(current if current is not None else "").strip()
    chosen = int(current_text) if current_text.isdigit() else None
    value = chosen if chosen in ids else (ids[0] if ids else None)
    return (gr.update(choices=[ALL_DATASETS, *datasets], value=dataset),
            gr.update(choices=runs, value=value))


def _run_id(run: int | str | None) -> int:
    text = str(run if run is not None else "").strip()
    if not text.isdigit():
        raise OptionError(f"a run id is a whole number, got {text!r}")
    return int(text)


def _frame(context: UiContext, frames: BrowseFrames, run_id: int,
           truth: str) -> tuple[RunTables, BrowseFrame]:
    """The run's tables under `truth` and its wide frame (built once per tables version)."""
    if truth not in TRUTHS:
        raise OptionError(f"truth must be one of {', '.join(TRUTHS)}, got {truth!r}")
    tables = context.tables.get(run_id, truth)
    return tables, frames.get(tables, lambda: context.tables.get(run_id, "auto"))


# -- the filtered table ------------------------------------------------------------------

EMPTY_TABLE = pd.DataFrame(columns=["sample", "question", "answer", DECISION])


def browse_filter(context: UiContext, frames: BrowseFrames, run: int | str | None,
                  truth: str, fold_judge: str | None, folds: list[str] | None,
                  disagree: bool, label_state: str, human_differs: bool,
                  search: str | None) -> tuple[str, pd.DataFrame, dict[str, Any]]:
    """(the "showing n of m" line, the rows shown, an update of the fold judge picker)."""
    if run is None or str(run).strip() == "":
        return message_html(NO_RUN), EMPTY_TABLE, gr.update()
    try:
        _, frame = _frame(context, frames, _run_id(run), truth)
        note = ""
        judge = fold_judge or DECISION
        if judge not in (DECISION, *frame.judges):
            note = f" (fold filter was on {judge}, which this run lacks: now on {DECISION})"
            judge = DECISION
        filters = BrowseFilters(fold_judge=judge, folds=tuple(folds or ()),
                                disagree=bool(disagree), label_state=label_state or "any",
                                human_differs=bool(human_differs), search=search or "")
        rows = filter_rows(frame, filters)
    except UserError as error:
        return message_html(str(error), "error"), EMPTY_TABLE, gr.update()
    table = shown_table(frame, rows, judge)
    summary = (f"Run {frame.run_id}, truth {truth}, rule {frame.rule or '-'}: showing "
               f"{len(table)} of {len(rows)} matching samples ({len(frame.rows)} in the run)"
               f"{note}.")
    return (message_html(summary), table,
            gr.update(choices=[DECISION, *frame.judges], value=judge))


# -- the case study ----------------------------------------------------------------------

def browse_detail(context: UiContext, frames: BrowseFrames, run: int | str | None,
                  truth: str, sample_id: str | None) -> str:
    """The case study of one sample of the run, as escaped HTML (or a readable message)."""
    sample_id = (sample_id or "").strip()
    if not sample_id:
        return message_html(PICK_SAMPLE)
    if run is None or str(run).strip() == "":
        return message_html(NO_RUN)
    try:
        run_id = _run_id(run)
        case = sample_case(context.store, run_id, sample_id)
        tables, frame = _frame(context, frames, run_id, truth)
        history = label_history(context.store, case.run.dataset, sample_id) \
            if case.run.dataset else []
    except UserError as error:
        return message_html(str(error), "error")
    frame_rows = frame.rows[frame.rows["sample_id"] == sample_id]
    sample_rows = tables.samples[tables.samples["sample_id"].astype(str) == sample_id]
    decision = decide([Verdict(judge=v["judge"], keep=v["keep"], rationale=v["rationale"] or "")
                       for v in case.verdicts], frame.rule) if frame.rule else None
    return case_study_html(case, decision=decision, history=history, truth=truth,
                           frame_row=frame_rows.iloc[0] if len(frame_rows) else None,
                           sample_row=sample_rows.iloc[0] if len(sample_rows) else None)


def browse_select(context: UiContext, frames: BrowseFrames, run: int | str | None,
                  truth: str, row_value: list[Any] | None) -> tuple[str, str]:
    """A row picked in the table: (its sample id, its case study)."""
    sample_id = str(row_value[0]) if row_value else ""
    return sample_id, browse_detail(context, frames, run, truth, sample_id)


# -- wiring ------------------------------------------------------------------------------

def build(context: UiContext, page: gr.Blocks) -> None:
    """Components and events of the tab (called inside its gr.Tab of `page`, the app's
    Blocks, whose load event fills the tab)."""
    frames = BrowseFrames()
    gr.Markdown("Browse a run's samples: filter by fold, judge disagreement, labels or "
                "text, then pick a row for its full case study (passages, answer, every "
                "judge's verdict and model calls, labels).")
    # Choices arrive with the page's load and refreshes; the handlers check any value (a
    # client of the named endpoints may send one the page has not listed yet).
    with gr.Row():
        dataset = gr.Dropdown([ALL_DATASETS], value=ALL_DATASETS, label="Dataset",
                              allow_custom_value=True)
        run = gr.Dropdown([], value=None, label="Run (newest first)", scale=2,
                          allow_custom_value=True)
        truth = gr.Radio(list(TRUTHS), value="auto", label="Ground truth")
        refresh = gr.Button("Refresh", scale=0)
    with gr.Row():
        fold_judge = gr.Dropdown([DECISION], value=DECISION, label="Fold of",
                                 allow_custom_value=True)
        folds = gr.Dropdown(list(FOLDS), value=[], multiselect=True, label="Folds")
        label_state = gr.Radio(list(LABEL_STATES), value="any", label="Human labels")
        with gr.Column(min_width=160):
            disagree = gr.Checkbox(label="Judges disagree")
            human_differs = gr.Checkbox(label="Human label ≠ automatic")
        search = gr.Textbox(label="Search (question, answer, sample id)", max_lines=1)
    summary = gr.HTML()
    table = gr.Dataframe(interactive=False, wrap=True, max_height=520, datatype="str",
                         label="Samples (pick a row for its case study)")
    with gr.Row():
        sample = gr.Textbox(label="Sample id", max_lines=1, scale=3)
        show = gr.Button("Show case study", scale=0)
    detail = gr.HTML(message_html(PICK_SAMPLE))

    def runs_handler(dataset_name: str | None, current: int | str | None):
        return browse_runs(context, dataset_name, current)

    def filter_handler(*values: Any):
        return browse_filter(context, frames, *values)

    def detail_handler(run_value: int | str | None, truth_value: str, sample_id: str | None):
        return browse_detail(context, frames, run_value, truth_value, sample_id)

    def select_handler(run_value: int | str | None, truth_value: str, evt: gr.SelectData):
        return browse_select(context, frames, run_value, truth_value, evt.row_value)

    gr.on([page.load, refresh.click, dataset.input], runs_handler,
          [dataset, run], [dataset, run], api_name="browse_runs")
    gr.on([run.change, refresh.click, truth.input, fold_judge.input, folds.input,
           label_state.input, disagree.input, human_differs.input, search.submit],
          filter_handler,
          [run, truth, fold_judge, folds, disagree, label_state, human_differs, search],
          [summary, table, fold_judge], api_name="browse_filter", trigger_mode="always_last")
    gr.on([sample.submit, show.click], detail_handler, [run, truth, sample], detail,
          api_name="browse_detail")
    # A row pick carries the browser's selection: clients use browse_detail instead.
    table.select(select_handler, [run, truth], [sample, detail], api_name="browse_select",
                 api_visibility="private")

