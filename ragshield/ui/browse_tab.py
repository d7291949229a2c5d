"""The Browse tab: pick a run, see each sample's decision at a glance (badges: shown or not,
right or wrong, unsupported sentences, judges against the decision, people's label), sort
and filter on them and on folds, labels and text, and open any sample's full case study.

Handlers are plain functions of the UiContext, the tab's frame cache and plain values;
`build` wires them to components with named endpoints browse_runs, browse_filter,
browse_detail (typed sample id) and browse_select (a row picked in the table).
"""

from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd

from ragshield.errors import UserError
from ragshield.services.annotation.people import notes_shown_to
from ragshield.services.form_values import LARGEST, whole_number
from ragshield.services.runs.browse import (DECISION, DECISIONS, FOLDS, LABEL_STATES, SORTS,
                                            TRUTH_STATES, BrowseFilters, BrowseFrames,
                                            browse_samples)
from ragshield.services.runs.case_studies import case_study
from ragshield.services.runs.run_choices import (ALL_DATASETS, datasets_with_runs, pick_run,
                                                 run_choices)
from ragshield.services.runs.run_tables import TRUTHS
from ragshield.ui.case_study import case_study_html
from ragshield.ui.context import UiContext
from ragshield.ui.html_render import message_html
from ragshield.ui.picker_refresh import shown_choices, unless_shown

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
.rs-cs-answer { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0.3em 0; }
.rs-panel { border: 1px solid #bbb; border-radius: 8px; padding: 0.8em 1em; max-width: 60em; }
.rs-panel-question { font-size: 1.3em; font-weight: 600; margin-bottom: 0.4em; }
.rs-panel-answer { font-size: 1.15em; white-space: pre-wrap; overflow-wrap: anywhere; }
.rs-panel-outcome { font-size: 1.1em; margin: 0.6em 0; padding: 0.3em 0.6em;
  border-left: 4px solid #555; background: var(--background-fill-secondary, #f6f6f6); }
.rs-panel[data-outcome="shown"] .rs-panel-outcome { border-left-color: #0072B2; }
.rs-panel[data-outcome="withheld"] .rs-panel-outcome { border-left-color: #D55E00; }
.rs-panel-passage { margin: 0.4em 0; white-space: pre-wrap; overflow-wrap: anywhere; }
.rs-panel-passage mark { background: #fde68a; color: inherit; padding: 0 2px; }
#browse-samples th, #browse-samples th * { white-space: nowrap !important;
  word-break: normal !important; }
"""
HEAD = ""

# The sample and its badges stay narrow and one line each; question and answer take the rest.
# A cell shows SHOWN_CHARS characters; a click on it shows what the table holds (the service
# cuts question and answer at browse.CELL_CHARS), and the case study shows them whole.
COLUMN_WIDTHS: list[str | int] = ["190px", "115px", "105px", "125px", "145px", "140px",
                                  "320px", "320px"]
SHOWN_CHARS = 140
NO_RUN = "No run to browse yet: start one with `python -m ragshield run`."
PICK_SAMPLE = "Pick a row in the table or type a sample id to see its case study."


# -- runs --------------------------------------------------------------------------------

def browse_runs(context: UiContext, dataset: str | None,
                current: int | str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Updates of the dataset and run pickers. A dataset without runs (or none) means all
    datasets; the run stays selected while it is listed, else the newest run is picked."""
    datasets = datasets_with_runs(context.store)
    if dataset not in datasets:
        dataset = ALL_DATASETS
    runs = run_choices(context.store, dataset)
    return (gr.update(choices=[ALL_DATASETS, *datasets], value=dataset),
            gr.update(choices=runs, value=pick_run(runs, current)))


def _login(request: gr.Request | None) -> str | None:
    """The logged-in name of the request (None without logins)."""
    return getattr(request, "username", None)


def _run_id(run: int | str | None) -> int:
    return whole_number(run, "run", minimum=1)


def browse_link(context: UiContext, frames: BrowseFrames, query: dict[str, str],
                by: str | None = None) -> tuple[Any, Any, Any]:
    """The run, sample and case study a page link names (`?run=R&sample=ID`); no change
    without one."""
    run_value, sample_id = query.get("run", "").strip(), query.get("sample", "").strip()
    if not run_value or not sample_id:
        return gr.update(), gr.update(), gr.update()
    run_id: int | str = run_value  # as it came, when it is no run id: its error shows below
    if run_value.isdecimal() and int(run_value) <= LARGEST:  # "²" is a digit, not decimal
        run_id = int(run_value)
    return (gr.update(value=run_id), sample_id,
            browse_detail(context, frames, run_id, "auto", sample_id, by))


# -- the filtered table ------------------------------------------------------------------

EMPTY_TABLE = pd.DataFrame(columns=["sample", "shown?", "answer is", "question", "answer"])


def browse_filter(context: UiContext, frames: BrowseFrames, run: int | str | None,
                  truth: str, fold_judge: str | None, folds: list[str] | None,
                  disagree: bool, label_state: str, human_differs: bool,
                  search: str | None, decisions: list[str] | None = None,
                  truth_state: str | None = "any", unsupported: bool = False,
                  sort: str | None = SORTS[0]) -> tuple[str, pd.DataFrame, dict[str, Any]]:
    """(the "showing n of m" line, the rows shown, an update of the fold judge picker)."""
    if run is None or str(run).strip() == "":
        return message_html(NO_RUN), EMPTY_TABLE, gr.update()
    try:
        filters = BrowseFilters(fold_judge=fold_judge or DECISION, folds=tuple(folds or ()),
                                disagree=bool(disagree), label_state=label_state or "any",
                                human_differs=bool(human_differs), search=search or "",
                                decisions=tuple(decisions or ()), truth=truth_state or "any",
                                unsupported=bool(unsupported), sort=sort or SORTS[0])
        shown = browse_samples(context.tables, frames, _run_id(run), truth, filters)
    except UserError as error:
        return message_html(str(error), "error"), EMPTY_TABLE, gr.update()
    frame = shown.frame
    note = "" if shown.dropped_judge is None else (
        f" (fold filter was on {shown.dropped_judge}, which this run lacks: now on {DECISION})")
    summary = (f"Run {frame.run_id}, truth {truth}, rule {frame.rule or '-'}: showing "
               f"{len(shown.table)} of {shown.matching} matching samples ({len(frame.rows)} "
               f"in the run){note}.")
    return (message_html(summary), shown.table,
            gr.update(choices=[DECISION, *frame.judges], value=shown.fold_judge))


# -- the case study ----------------------------------------------------------------------

def browse_detail(context: UiContext, frames: BrowseFrames, run: int | str | None,
                  truth: str, sample_id: str | None, by: str | None = None) -> str:
    """The case study of one sample of the run, as escaped HTML (or a readable message);
    with logins, the notes of the labels are those `by` may read (their own, or everyone's
    for an admin)."""
    sample_id = (sample_id or "").strip()
    if not sample_id:
        return message_html(PICK_SAMPLE)
    if run is None or str(run).strip() == "":
        return message_html(NO_RUN)
    try:
        study = case_study(context.store, context.tables, frames, _run_id(run), truth,
                           sample_id, notes_shown_to(context.store, context.access, by))
    except UserError as error:
        return message_html(str(error), "error")
    return case_study_html(study)


def browse_row(context: UiContext, frames: BrowseFrames, run: int | str | None,
               truth: str, row_value: list[Any] | None,
               by: str | None = None) -> tuple[str, str]:
    """A row picked in the table: (its sample id, its case study)."""
    sample_id = str(row_value[0]) if row_value else ""
    return sample_id, browse_detail(context, frames, run, truth, sample_id, by)


# -- wiring ------------------------------------------------------------------------------

def build(context: UiContext, page: gr.Blocks, tab: gr.Tab) -> None:
    """Components and events of the tab (called inside its gr.Tab of `page`, the app's
    Blocks, whose load event fills the tab)."""
    frames = BrowseFrames()
    gr.Markdown("Each row: was the answer shown, was it right, how many of its sentences "
                "the support judge could not find in the passages, how many judges went the "
                "other way, and what people said. Sort and filter on them; pick a row for its "
                "full case study (passages, answer, every judge's verdict and model calls, "
                "labels).")
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
        decisions = gr.Dropdown(list(DECISIONS), value=[], multiselect=True, label="Shown?",
                                elem_id="browse-decisions")
        truth_state = gr.Radio(list(TRUTH_STATES), value="any", label="Answer is")
        unsupported = gr.Checkbox(label="Has unsupported sentences")
        sort = gr.Dropdown(list(SORTS), value=SORTS[0], label="Sort by")
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
                         label="Samples (pick a row for its case study; click a header to "
                               "sort the rows shown)",
                         elem_id="browse-samples", column_widths=COLUMN_WIDTHS,
                         pinned_columns=1, max_chars=SHOWN_CHARS)
    with gr.Row():
        sample = gr.Textbox(label="Sample id", max_lines=1, scale=3)
        show = gr.Button("Show case study", scale=0)
    detail = gr.HTML(message_html(PICK_SAMPLE))
    shown_pickers = gr.State(shown_choices([ALL_DATASETS], []))  # what dataset and run show

    def runs_handler(dataset_name: str | None, current: int | str | None,
                     shown_now: list | None = None):
        return unless_shown(shown_now, *browse_runs(context, dataset_name, current))

    def filter_handler(*values: Any):
        return browse_filter(context, frames, *values)

    def detail_handler(run_value: int | str | None, truth_value: str, sample_id: str | None,
                       request: gr.Request):
        return browse_detail(context, frames, run_value, truth_value, sample_id,
                             _login(request))

    def select_handler(run_value: int | str | None, truth_value: str, evt: gr.SelectData,
                       request: gr.Request):
        return browse_row(context, frames, run_value, truth_value, evt.row_value,
                          _login(request))

    def link_handler(request: gr.Request):
        return browse_link(context, frames, dict(request.query_params), _login(request))

    pickers = [dataset, run, shown_pickers]
    gr.on([refresh.click, dataset.input], runs_handler, [dataset, run], pickers,
          api_name="browse_runs", trigger_mode="always_last")
    tab.select(runs_handler, pickers, pickers, api_visibility="private")
    # A link to a case study (?run=R&sample=ID, e.g. from the Dashboard's false keeps)
    # opens it once the pickers are filled.
    page.load(runs_handler, pickers, pickers, api_visibility="private").then(
        link_handler, None, [run, sample, detail], api_visibility="private")
    # Newer filters come last, so that callers of the endpoint from before them still work.
    gr.on([run.change, refresh.click, truth.input, fold_judge.input, folds.input,
           label_state.input, disagree.input, human_differs.input, search.submit,
           decisions.input, truth_state.input, unsupported.input, sort.input],
          filter_handler,
          [run, truth, fold_judge, folds, disagree, label_state, human_differs, search,
           decisions, truth_state, unsupported, sort],
          [summary, table, fold_judge], api_name="browse_filter", trigger_mode="always_last")
    gr.on([sample.submit, show.click], detail_handler, [run, truth, sample], detail,
          api_name="browse_detail")
    # A row pick carries the browser's selection: clients use browse_detail instead.
    gr.on([table.select], select_handler, [run, truth], [sample, detail],
          api_name="browse_select", api_visibility="private")

