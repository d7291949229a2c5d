"""The Dashboard tab: a run's metric tables with 95% bootstrap intervals, its curves (PR,
risk-coverage, No-RAG fallback, switch to a larger model), the annotation progress and the
agreement of annotators and judges, refreshed live while runs and labels arrive; and runs
started from the page, with a progress bar per run.

A refresh asks context.tables for the run's tables (version queries when nothing
changed) and reuses the view computed from the same RunTables object. When the tables
changed, only what changed is computed again: a new label redoes the overview and the
agreement, and the metrics and figures only when it changed the truth of a sample (under
truth human); a new answer or verdict redoes everything."""

from __future__ import annotations

import base64
import itertools
import tempfile
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple

import gradio as gr
import numpy as np
import pandas as pd

from ragshield.answerers.registry import ANSWERERS
from ragshield.config import Settings
from ragshield.errors import OptionError, UserError
from ragshield.evaluation import TRUTHS, RunRecords, RunTables
from ragshield.judges.registry import JUDGES
from ragshield.label_agreement import automatic_labels
from ragshield.metrics.agreement import (agreement_summary, agreement_with_majority,
                                         majority_by_item)
from ragshield.metrics.summary import judge_metrics
from ragshield.reports.render import table_html as report_table_html
from ragshield.reports.tables import (JudgeSeries, Table, fallback_table, fmt, grader_table,
                                      judge_series, overview_table, quality_table, risk_table,
                                      switch_table, threshold_table)
from ragshield.run_config import RETRIEVAL_CHOICES, RunConfig
from ragshield.store.database import Store
from ragshield.store.labels import current_label_table
from ragshield.store.labels import progress as label_progress
from ragshield.store.runs import RunSummary, list_runs
from ragshield.store.samples import dataset_names
from ragshield.ui.context import UiContext
from ragshield.ui.html_render import esc, message_html, table_html
from ragshield.ui.run_cache import dataset_version, remember
from ragshield.ui.run_launcher import RunLauncher

TITLE = "Dashboard"
CSS = """
.rs-dashboard h2 { font-size: 1.1em; margin: 1em 0 0.2em; }
.rs-dashboard .note { color: #555; font-size: 0.85em; margin: 0 0 0.3em; }
.rs-dashboard table { border-collapse: collapse; margin-bottom: 0.8em; font-size: 0.9em; }
.rs-dashboard th, .rs-dashboard td { border: 1px solid #ddd; padding: 3px 6px; text-align: left; }
.rs-figures { display: flex; flex-wrap: wrap; gap: 0.5em; }
.rs-figures img { width: 440px; max-width: 100%; }
.rs-run-progress { margin: 0.3em 0; }
.rs-run-progress progress { width: 100%; height: 1em; }
"""
HEAD = ""

DEFAULT_RESAMPLES = 1000
MAX_RESAMPLES = 10_000
LIVE_SECONDS = 5.0
FIGURE_DPI = 80  # smaller and faster than the report's
SEED = 0  # bootstrap seed, as in the report
MISSING_CURVES = {
    "fallback": "No-RAG fallback: this run stored no No-RAG answers (start a run with "
                "\"also store No-RAG answers\", or \"python -m ragshield run --fallback\").",
    "switch": "Switch to a larger model: this run stored no larger model's answers "
              "(\"python -m ragshield run --small-model --switch\").",
}


# -- the run picker -----------------------------------------------------------------------

def run_choice_label(run: RunSummary) -> str:
    """A run as the picker shows it (plain text; its progress is shown elsewhere)."""
    name = f" {run.name}" if run.name else ""
    return f"#{run.id}{name} · {run.dataset or '(dataset removed)'}"


def run_choices(store: Store) -> list[tuple[str, int]]:
    """(label, run id) of every run, newest first."""
    return [(run_choice_label(run), run.id) for run in reversed(list_runs(store))]


# -- the view of a run: tables, figures, agreement (cached) -------------------------------

@dataclass(frozen=True)
class RunView:
    """What the dashboard shows of a run under one truth and number of resamples. `serial`
    tells views apart, so that a page can skip re-rendering the view it already shows."""

    serial: int
    tables_html: str
    figures_html: str
    agreement_html: str


@dataclass(frozen=True)
class TruthPart:
    """Tables and figures of a view that read the run's records and the `columns` of its
    samples, and nothing else of the labels: they stay right for tables of the same records
    whose columns hold the same values (after a new label under truth auto, say)."""

    records: weakref.ref[RunRecords] | None  # None: fits no tables
    columns: tuple[str, ...]
    values: tuple[np.ndarray, ...]  # of the columns, when the part was computed
    sections: list[Table]
    figures: list[str]  # <img> elements
    notes: list[str] = field(default_factory=list)  # for the curves the run cannot draw

    def fits(self, tables: RunTables) -> bool:
        return (self.records is not None and tables.records is not None
                and self.records() is tables.records
                and all(np.array_equal(value, tables.samples[column].to_numpy())
                        for column, value in zip(self.columns, self.values)))


def _truth_part(tables: RunTables, columns: tuple[str, ...], sections: list[Table],
                figures: list[str], notes: list[str] | None = None) -> TruthPart:
    records = weakref.ref(tables.records) if tables.records is not None else None
    return TruthPart(records, columns, tuple(tables.samples[c].to_numpy() for c in columns),
                     sections, figures, notes or [])


def _tables_html(tables: list[Table]) -> str:
    return '<div class="rs-dashboard">' + "".join(report_table_html(t) for t in tables) + "</div>"


FigureFunction = Callable[..., Path]  # (tables, series, path, *, dpi) -> path


def _figure_html(name: str, tables: RunTables, series: dict[str, JudgeSeries]) -> str:
    """One of the curves as an inline PNG (drawn into a temporary folder, which goes at
    once)."""
    from ragshield.reports import figures  # matplotlib: imported on the first figure only

    drawers: dict[str, FigureFunction] = {
        "pr": figures.pr_figure, "risk_coverage": figures.risk_coverage_figure,
        "fallback": figures.fallback_figure, "switch": figures.switch_figure}
    with tempfile.TemporaryDirectory(prefix="ragshield-dashboard-") as folder:
        png = drawers[name](tables, series, Path(folder) / f"{name}.png",
                            dpi=FIGURE_DPI).read_bytes()
    return (f'<img alt="{esc(name)} curves" data-figure="{esc(name)}" '
            f'src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}">')


def awf_part(tables: RunTables, series: dict[str, JudgeSeries], resamples: int) -> TruthPart:
    """The metric tables (judge_metrics with `resamples` bootstrap resamples) and the PR
    curves: they read whether each answer is correct and whether its passages support one."""
    metrics = judge_metrics(tables.verdicts, n_resamples=resamples, seed=SEED)
    return _truth_part(tables, ("answer_correct", "passages_support"),
                       [risk_table(metrics), quality_table(metrics)],
                       [_figure_html("pr", tables, series)])


def correctness_part(tables: RunTables, series: dict[str, JudgeSeries]) -> TruthPart:
    """The thresholds, the fallback and switch tables, the grader's, and the risk-coverage,
    fallback and switch curves: they read whether each answer is correct only (labels from
    the Annotate tab, which say nothing of it, leave them as they are)."""
    sections = [threshold_table(tables, series)]
    figures = [_figure_html("risk_coverage", tables, series)]
    notes = []
    for name, make in (("fallback", fallback_table), ("switch", switch_table)):
        table = make(tables, series)
        if table is None:
            notes.append(message_html(MISSING_CURVES[name]))
        else:
            sections.append(table)
            figures.append(_figure_html(name, tables, series))
    grader = grader_table(tables)
    if grader is not None:
        sections.append(grader)
    return _truth_part(tables, ("answer_correct",), sections, figures, notes)


def judges_vs_majority(tables: RunTables,
                       series: dict[str, JudgeSeries]) -> dict[str, dict[str, Any]]:
    """Each judge's keep decisions on this run (`series`: judge_series(tables)) against the
    human majority label, samples named by their row in tables.samples."""
    if tables.samples.empty:
        return {}
    labels = tables.samples["human_label"].to_numpy()
    majority = {int(row): labels[row] for row in np.flatnonzero(pd.notna(labels))
                if isinstance(labels[row], str)}
    labelled = np.zeros(len(labels), dtype=bool)
    labelled[list(majority)] = True
    result = {}
    for judge, s in series.items():
        kept = labelled[s.rows]  # only the samples with a majority label count
        keeps = dict(zip(s.rows[kept].tolist(), s.keep[kept].tolist()))
        result[judge] = agreement_with_majority(keeps, majority)
    return result


def agreement_html(store: Store, tables: RunTables, automatic: Mapping[int, bool],
                   series: dict[str, JudgeSeries]) -> str:
    """Annotators among themselves (on the run's dataset), and the automatic label (of
    each sample of the dataset: `automatic`) and each of the run's judges (`series`) against
    the human majority (docs/METHODS.md 5.5); what ragshield.label_agreement.label_agreement gives,
    less the judges of the dataset's newest run, with the automatic labels read before."""
    ratings = current_label_table(store, tables.config.get("dataset"))
    result = agreement_summary(ratings)
    among = [["samples with two or more labels", fmt(result["n_items"])],
             ["percent agreement", fmt(result["percent"])],
             ["Fleiss' kappa", fmt(result["fleiss"])],
             ["Krippendorff's alpha", fmt(result["krippendorff_alpha"])],
             *([f"Cohen's kappa {pair.replace('|', ' / ')}", fmt(kappa)]
               for pair, kappa in result["cohen"].items())]
    against = {"automatic label": agreement_with_majority(automatic, majority_by_item(ratings)),
               **judges_vs_majority(tables, series)}
    rows = [[who, fmt(value["n"]), fmt(value["percent"]), fmt(value["kappa"])]
            for who, value in against.items()]
    return ('<div class="rs-dashboard"><h2>Agreement among annotators</h2>'
            + table_html(["statistic", "value"], among)
            + "<h2>Agreement with the human majority</h2>"
            + '<p class="note">Keep = answerable. Samples with a majority label (ties and '
              "\"unsure\" left out).</p>"
            + table_html(["labels of", "n", "percent", "Cohen's kappa"], rows) + "</div>")


class DashboardCache:
    """Views by (run, truth, resamples), valid while context.tables hands back the same
    RunTables object (it builds a new one when the run or its labels change); held by a
    weak reference, so a dropped RunTables is not kept alive here. When the tables change,
    what did not is reused: the judges' series of the same records, each TruthPart that
    still fits, and the automatic labels of a dataset whose samples stayed the same
    (reading them costs seconds). One lock: views are computed one at a time (pyplot is
    not thread-safe), and a second viewer of a changed run waits for the first one's view
    instead of computing it again."""

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self._views: OrderedDict[tuple[int, str, int], tuple[
            weakref.ref[RunTables], RunView, tuple[TruthPart, TruthPart] | None]] = OrderedDict()
        self._series: weakref.WeakKeyDictionary[RunRecords, dict[str, JudgeSeries]] = (
            weakref.WeakKeyDictionary())
        self._automatic: OrderedDict[str | None, tuple[Any, dict[int, bool]]] = OrderedDict()
        self._serials = itertools.count(1)
        self._lock = threading.Lock()

    def view(self, store: Store, tables: RunTables, resamples: int) -> RunView:
        key = (tables.run_id, tables.truth, resamples)
        with self._lock:
            cached = self._views.get(key)
            if cached is not None and cached[0]() is tables:
                self._views.move_to_end(key)
                return cached[1]
            view, parts = self._compute(store, tables, resamples,
                                        cached[2] if cached is not None else None)
            remember(self._views, key, (weakref.ref(tables), view, parts), self.size)
            return view

    def _compute(self, store: Store, tables: RunTables, resamples: int,
                 before: tuple[TruthPart, TruthPart] | None
                 ) -> tuple[RunView, tuple[TruthPart, TruthPart] | None]:
        """The view of `tables` and its truth parts (None without samples)."""
        series = self._series_of(tables) if not tables.samples.empty else {}
        agreement = agreement_html(
            store, tables, self._automatic_labels(store, tables.config.get("dataset")), series)
        serial = next(self._serials)
        if tables.samples.empty:
            note = message_html(f"Run {tables.run_id} has no saved samples yet: the dashboard "
                                "fills in as they arrive.")
            return RunView(serial, note, "", agreement), None
        parts = self._parts(tables, resamples, series, before)
        sections = [overview_table(tables), *(table for part in parts for table in part.sections)]
        figures = "".join(figure for part in parts for figure in part.figures)
        notes = "".join(note for part in parts for note in part.notes)
        return RunView(serial, _tables_html(sections),
                       f'<div class="rs-figures">{figures}</div>{notes}', agreement), parts

    @staticmethod
    def _parts(tables: RunTables, resamples: int, series: dict[str, JudgeSeries],
               before: tuple[TruthPart, TruthPart] | None) -> tuple[TruthPart, TruthPart]:
        """The AwF and correctness parts of `tables`: those of the view `before` where they
        still fit."""
        awf, correctness = before if before is not None else (None, None)
        if awf is None or not awf.fits(tables):
            awf = awf_part(tables, series, resamples)
        if correctness is None or not correctness.fits(tables):
            correctness = correctness_part(tables, series)
        return awf, correctness

    def _series_of(self, tables: RunTables) -> dict[str, JudgeSeries]:
        """judge_series(tables), the same for all tables of the same records (the series
        leave the truth out)."""
        records = tables.records
        series = self._series.get(records) if records is not None else None
        if series is None:
            series = judge_series(tables)
            if records is not None:
                self._series[records] = series
        return series

    def _automatic_labels(self, store: Store, dataset: str | None) -> dict[int, bool]:
        """label_agreement's automatic labels of the dataset's samples, read again only
        when its samples or passages changed."""
        version = dataset_version(store, dataset) if dataset is not None else None
        cached = self._automatic.get(dataset)
        if version is None or cached is None or cached[0] != version:
            cached = (version, automatic_labels(store, dataset))
        remember(self._automatic, dataset, cached, self.size)
        return cached[1]


# -- refresh --------------------------------------------------------------------------------

class Refresh(NamedTuple):
    tables_html: str
    figures_html: str
    progress_html: str
    agreement_html: str
    view_serial: int | None  # None: a message, not a view


def _whole_number(value: Any, what: str, *, minimum: int, maximum: int | None = None) -> int:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise OptionError(f"{what}: give a whole number, got {value!r}") from None
    if not number.is_integer() or number < minimum or (maximum is not None and number > maximum):
        bounds = f"from {minimum} to {maximum}" if maximum is not None else f"at least {minimum}"
        raise OptionError(f"{what}: give a whole number {bounds}, got {value!r}")
    return int(number)


def annotation_progress_html(store: Store, dataset: str) -> str:
    """Labelled and skipped samples per annotator on the dataset."""
    rows = [[p.annotator, p.labelled, p.skipped, p.total,
             fmt(p.labelled / p.total if p.total else None, 2)]
            for p in label_progress(store, dataset)]
    heading = f'<div class="rs-dashboard"><h2>Annotation of {esc(dataset)}</h2>'
    if not rows:
        return heading + message_html("No labels yet: the Annotate tab adds them.") + "</div>"
    return heading + table_html(["annotator", "labelled", "skipped", "samples", "share labelled"],
                                rows) + "</div>"


def refresh_dashboard(context: UiContext, cache: DashboardCache, run_id: Any, truth: str,
                      resamples: Any) -> Refresh:
    """Everything the dashboard shows of a run; a UserError becomes a message."""
    if run_id in (None, ""):
        return Refresh(message_html("No run yet: start one below, or with "
                                    "\"python -m ragshield run\"."), "", "", "", None)
    try:
        run = _whole_number(run_id, "run", minimum=1)
        count = _whole_number(resamples, "bootstrap resamples", minimum=0, maximum=MAX_RESAMPLES)
        if truth not in TRUTHS:
            raise OptionError(f"truth must be one of {', '.join(TRUTHS)}, got {truth!r}")
        tables = context.tables.get(run, truth)
        view = cache.view(context.store, tables, count)
        progress = annotation_progress_html(context.store, tables.config["dataset"])
    except UserError as error:
        return Refresh(message_html(str(error), "error"), "", "", "", None)
    return Refresh(view.tables_html, view.figures_html, progress, view.agreement_html, view.serial)


# -- runs started here, and the progress of every run going on ------------------------------

def run_progress_html(store: Store, launcher: RunLauncher) -> str:
    """A progress bar for each run going on (from the CLI too) and each run started here."""
    mine = set(launcher.started())
    runs = [run for run in reversed(list_runs(store)) if run.status == "running" or run.id in mine]
    if not runs:
        return message_html("No run is going on.")
    parts = []
    for run in runs:
        failed = f", {run.failures} failed" if run.failures else ""
        text = (f"Run {run.id} ({run.dataset or 'dataset removed'}): {run.status}, {run.done} of "
                f"{run.total} samples{failed}")
        error = launcher.error(run.id)
        parts.append(f'<div class="rs-run-progress" data-run="{run.id}"><div>{esc(text)}</div>'
                     f'<progress value="{run.done}" max="{max(run.total, 1)}"></progress>'
                     f'{message_html(error, "error") if error else ""}</div>')
    return "".join(parts)


def run_config_from_form(settings: Settings, dataset: str | None, limit: Any, answerer: str,
                         judges: list[str] | None, rule: str, retrieval: str,
                         fallback: bool) -> RunConfig:
    """The RunConfig of the start form, with the app's backend and concurrency as the CLI
    does; the rest is checked by start_run."""
    if not dataset:
        raise OptionError("choose a dataset")
    if not judges:
        raise OptionError("choose at least one judge")
    return RunConfig(
        dataset=dataset,
        limit=None if limit in (None, "") else _whole_number(limit, "limit", minimum=1),
        answerer=answerer, judges=list(judges), rule=rule, retrieval=retrieval,
        backend=settings.backend, fallback=bool(fallback), concurrency=settings.concurrency)


def start_run_from_form(context: UiContext, launcher: RunLauncher, dataset: str | None,
                        limit: Any, answerer: str, judges: list[str] | None, rule: str,
                        retrieval: str, fallback: bool = False) -> tuple[str, int | None]:
    """(message, new run id or None): the run is recorded and started in the background;
    a bad configuration is a readable message and starts nothing."""
    try:
        config = run_config_from_form(context.settings, dataset, limit, answerer, judges, rule,
                                      retrieval, fallback)
        run_id = launcher.start(config)
    except UserError as error:
        return message_html(str(error), "error"), None
    return message_html(f"Run {run_id} started on {dataset}: its progress shows below and the "
                        "dashboard follows it."), run_id


# -- wiring -----------------------------------------------------------------------------------

def _default_judges(rule: str) -> list[str]:
    return ["trivial", rule] if rule in JUDGES and rule != "trivial" else ["trivial"]


def build(context: UiContext, page: gr.Blocks) -> None:
    """Components and events of the tab (called inside its gr.Tab of `page`, the app's
    Blocks, whose load event fills the tab)."""
    cache = DashboardCache()
    launcher = RunLauncher(context.store, context.settings)
    settings = context.settings
    choices = run_choices(context.store)
    with gr.Row():
        # Custom values: runs and datasets made after start-up; the handlers check them.
        run_picker = gr.Dropdown(choices=choices, value=choices[0][1] if choices else None,
                                 allow_custom_value=True,
                                 label="Run", scale=3)
        truth_radio = gr.Radio(list(TRUTHS), value="auto", label="Ground truth",
                               info="human: annotators' majority labels win where there are some")
        resamples_box = gr.Number(value=DEFAULT_RESAMPLES, precision=0, minimum=0,
                                  maximum=MAX_RESAMPLES,
                                  label="Bootstrap resamples (0: no intervals)")
        live_box = gr.Checkbox(value=True, label=f"Live (every {LIVE_SECONDS:g} s)")
        refresh_button = gr.Button("Refresh", scale=0)
    run_progress = gr.HTML(elem_id="dashboard-runs")
    tables_out = gr.HTML(elem_id="dashboard-tables")
    figures_out = gr.HTML(elem_id="dashboard-figures")
    with gr.Row():
        annotation_out = gr.HTML(elem_id="dashboard-annotation")
        agreement_out = gr.HTML(elem_id="dashboard-agreement")
    with gr.Accordion("Start a run", open=False):
        with gr.Row():
            names = dataset_names(context.store)
            dataset_box = gr.Dropdown(names, value=names[0] if names else None, label="Dataset",
                                      allow_custom_value=True)
            limit_box = gr.Number(value=20, precision=0, minimum=1, label="Samples (empty: all)")
            answerer_box = gr.Dropdown(list(ANSWERERS), value=settings.answerer, label="Answerer")
            retrieval_box = gr.Dropdown(list(RETRIEVAL_CHOICES), value="given", label="Passages",
                                        info="given: the dataset's own; else retrieved from "
                                             "the demo corpus")
        judges_box = gr.CheckboxGroup(list(JUDGES), value=_default_judges(settings.decision_rule),
                                      label="Judges")
        with gr.Row():
            rule_box = gr.Dropdown(["all", "majority", *JUDGES], value=settings.decision_rule,
                                   label="Decision rule")
            fallback_box = gr.Checkbox(False, label="Also store No-RAG answers (fallback curve)")
            start_button = gr.Button("Start run", variant="primary")
        start_message = gr.HTML()
    timer = gr.Timer(LIVE_SECONDS)
    shown = gr.State(None)  # serial of the view this page shows
    known_runs = gr.State(choices)  # the picker's choices in this page

    def refresh(run_id: Any, truth: str, resamples: Any) -> tuple:
        return tuple(refresh_dashboard(context, cache, run_id, truth, resamples))

    def live_refresh(run_id: Any, truth: str, resamples: Any, shown_serial: int | None) -> tuple:
        """As refresh, leaving alone the parts this page already shows."""
        result = refresh_dashboard(context, cache, run_id, truth, resamples)
        if result.view_serial is not None and result.view_serial == shown_serial:
            return gr.skip(), gr.skip(), result.progress_html, gr.skip(), gr.skip()
        return tuple(result)

    def runs_update(run_id: Any, known: list, select: int | None = None, *,
                    force: bool = False) -> tuple:
        """The picker with the store's runs (skipped when this page has them already),
        keeping the chosen run, or selecting `select`."""
        fresh = run_choices(context.store)
        if not force and select is None and fresh == known:
            return gr.skip(), known
        values = [value for _, value in fresh]
        value = select if select is not None else run_id if run_id in values else (
            values[0] if values else None)
        return gr.Dropdown(choices=fresh, value=value), fresh

    def datasets(dataset: str | None) -> gr.Dropdown:
        names = dataset_names(context.store)
        return gr.Dropdown(choices=names, value=dataset if dataset in names else (
            names[0] if names else None))

    def runs(run_id: Any, known: list) -> tuple:
        return runs_update(run_id, known, force=True)

    def progress(run_id: Any, known: list) -> tuple:
        return (run_progress_html(context.store, launcher), *runs_update(run_id, known))

    def start(run_id: Any, known: list, dataset: str | None, limit: Any, answerer: str,
              judges: list[str] | None, rule: str, retrieval: str, fallback: bool) -> tuple:
        message, new_run = start_run_from_form(context, launcher, dataset, limit, answerer,
                                               judges, rule, retrieval, fallback)
        return (message, run_progress_html(context.store, launcher),
                *runs_update(run_id, known, select=new_run))

    view_inputs = [run_picker, truth_radio, resamples_box]
    view_outputs = [tables_out, figures_out, annotation_out, agreement_out, shown]
    picker = [run_picker, known_runs]
    gr.on([page.load, refresh_button.click, run_picker.change, truth_radio.change,
           resamples_box.submit], refresh, view_inputs, view_outputs,
          api_name="dashboard_refresh", trigger_mode="always_last")
    gr.on([page.load, refresh_button.click], runs, picker, picker, api_name="dashboard_runs")
    timer.tick(live_refresh, [*view_inputs, shown], view_outputs,
               api_name="dashboard_live_refresh", trigger_mode="always_last",
               show_progress="hidden")
    gr.on([page.load, timer.tick], progress, picker, [run_progress, *picker],
          api_name="dashboard_progress", trigger_mode="always_last", show_progress="hidden")
    page.load(datasets, dataset_box, dataset_box, api_name="dashboard_datasets")
    live_box.change(lambda on: gr.Timer(active=on), live_box, timer, api_name="dashboard_live")
    start_button.click(start, [*picker, dataset_box, limit_box, answerer_box, judges_box, rule_box,
                               retrieval_box, fallback_box],
                       [start_message, run_progress, *picker], api_name="dashboard_start_run")
