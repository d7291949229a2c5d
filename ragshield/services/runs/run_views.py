"""The Dashboard's view of a run: its metric tables with 95% bootstrap intervals, its curves
(PR, risk-coverage, No-RAG fallback, switch to a larger model) as PNG images, the agreement
of annotators and judges, and the annotation progress of its dataset, as data for a face to
render.

A view is computed from the RunTables object that the run tables cache hands back (it
builds a new one when the run or its labels change) and reused while that object stays the
same. When the tables changed, only what changed is computed again: a new label redoes the
overview and the agreement, and the metrics and figures only when it changed the truth of a
sample (under truth human); a new answer or verdict redoes everything."""

from __future__ import annotations

import itertools
import tempfile
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ragshield.evaluation import RunRecords, RunTables
from ragshield.label_agreement import automatic_labels
from ragshield.metrics.summary import judge_metrics
from ragshield.reports.stacking import with_stacked_judge
from ragshield.reports.tradeoff import judges_text, tradeoff_text
from ragshield.reports.tables import (JudgeSeries, SampleLinks, fallback_table, fmt, grader_table,
                                      judge_series, overview_table, quality_table,
                                      risk_table, switch_table, threshold_table)
from ragshield.services.annotation.agreement import Agreement, agreement, run_keeps
from ragshield.services.annotation.sentence_agreement import (SentenceAgreement,
                                                            sentence_agreement)
from ragshield.services.form_values import whole_number
from ragshield.services.learning.policies import policy_watch_table
from ragshield.services.runs.decision_view import Headline, decision_picture
from ragshield.services.runs.run_tables import RunTablesCache, remember
from ragshield.store.database import Store
from ragshield.store.labels import progress as label_progress
from ragshield.store.versions import dataset_version
from ragshield.types import Table

__all__ = ["MAX_RESAMPLES", "Dashboard", "DashboardCache", "Figure", "RunView",
           "TruthPart", "agreement_tables", "annotation_table", "awf_part", "correctness_part",
           "dashboard"]

MAX_RESAMPLES = 10_000
FIGURE_DPI = 80  # smaller and faster than the report's
SEED = 0  # bootstrap seed, as in the report


# The figures that open the Dashboard (the rest are the research curves below the tables).
PICTURE = ("tradeoff", "judges")


@dataclass(frozen=True)
class Figure:
    name: str  # one of PICTURE, or pr, risk_coverage, fallback or switch
    png: bytes
    alt: str = ""  # the text alternative: what the figure shows, with its numbers


@dataclass(frozen=True)
class RunView:
    """What the dashboard shows of a run under one truth and number of resamples. `serial`
    tells views apart, so that a page can skip re-rendering the view it already shows."""

    serial: int
    empty: bool  # the run has no saved samples yet: no tables, figures or missing curves
    tables: list[Table]
    figures: list[Figure]  # the research curves
    missing_curves: list[str]  # the curves the run stored no answers for: fallback, switch
    agreement: list[Table]
    headline: Headline | None = None  # None: no samples yet
    picture: list[Figure] = field(default_factory=list)  # the PICTURE figures


@dataclass(frozen=True)
class TruthPart:
    """Tables and figures of a view that read the run's records and the `columns` of its
    samples, and nothing else of the labels: they stay right for tables of the same records
    whose columns hold the same values (after a new label under truth auto, say)."""

    records: weakref.ref[RunRecords] | None  # None: fits no tables
    columns: tuple[str, ...]
    values: tuple[np.ndarray, ...]  # of the columns, when the part was computed
    tables: list[Table]
    figures: list[Figure]
    missing_curves: list[str] = field(default_factory=list)
    headline: Headline | None = None

    def fits(self, tables: RunTables) -> bool:
        return (self.records is not None and tables.records is not None
                and self.records() is tables.records
                and all(np.array_equal(value, tables.samples[column].to_numpy())
                        for column, value in zip(self.columns, self.values)))


def _truth_part(tables: RunTables, columns: tuple[str, ...], sections: list[Table],
                figures: list[Figure], missing: list[str] | None = None,
                headline: Headline | None = None) -> TruthPart:
    records = weakref.ref(tables.records) if tables.records is not None else None
    return TruthPart(records, columns, tuple(tables.samples[c].to_numpy() for c in columns),
                     sections, figures, missing or [], headline)


def _figure(name: str, draw: Callable[[Path], Path], alt: str = "") -> Figure:
    """A figure `draw` writes to the path it is given, in a temporary folder (which goes at
    once); `alt`: its text alternative (default: its name)."""
    with tempfile.TemporaryDirectory(prefix="ragshield-dashboard-") as folder:
        path = draw(Path(folder) / f"{name}.png")
        return Figure(name, path.read_bytes(), alt or f"{name} curves")


def _curves(name: str, tables: RunTables, series: dict[str, JudgeSeries]) -> Figure:
    """One of the research curves."""
    from ragshield.reports import figures  # matplotlib: imported on the first figure only

    drawers: dict[str, Callable[..., Path]] = {
        "pr": figures.pr_figure, "risk_coverage": figures.risk_coverage_figure,
        "fallback": figures.fallback_figure, "switch": figures.switch_figure}
    return _figure(name, lambda path: drawers[name](tables, series, path, dpi=FIGURE_DPI))


def awf_part(tables: RunTables, series: dict[str, JudgeSeries], resamples: int) -> TruthPart:
    """What people see (the decision view: the Dashboard's headline, its pictures and first
    table), the metric tables
    (judge_metrics with `resamples` bootstrap resamples, the stacked judge among them once
    there are enough labels, as in reports) and the PR curves: they read whether each answer
    is correct and whether its passages support one."""
    from ragshield.reports import tradeoff_figures as drawn  # matplotlib: on first use

    verdicts, stacking_note = with_stacked_judge(tables.verdicts, seed=SEED)
    metrics = judge_metrics(verdicts, n_resamples=resamples, seed=SEED)
    risk = risk_table(metrics)
    risk.note += " " + stacking_note
    picture = decision_picture(tables, series)
    tradeoff = picture.tradeoff
    figures = [
        _figure("tradeoff", lambda path: drawn.tradeoff_figure(tradeoff, path, dpi=FIGURE_DPI),
                tradeoff_text(tradeoff)),
        _figure("judges", lambda path: drawn.judges_figure(tradeoff, path, dpi=FIGURE_DPI),
                judges_text(tradeoff)),
        _curves("pr", tables, series)]
    return _truth_part(tables, ("answer_correct", "passages_support"),
                       [picture.table, risk, quality_table(metrics)], figures,
                       headline=picture.headline)


def correctness_part(tables: RunTables, series: dict[str, JudgeSeries]) -> TruthPart:
    """The thresholds, the fallback and switch tables, the grader's, and the risk-coverage,
    fallback and switch curves: they read whether each answer is correct only (labels from
    the Annotate tab, which say nothing of it, leave them as they are)."""
    sections = [threshold_table(tables, series)]
    figures = [_curves("risk_coverage", tables, series)]
    missing = []
    for name, make in (("fallback", fallback_table), ("switch", switch_table)):
        table = make(tables, series)
        if table is None:
            missing.append(name)
        else:
            sections.append(table)
            figures.append(_curves(name, tables, series))
    grader = grader_table(tables)
    if grader is not None:
        sections.append(grader)
    return _truth_part(tables, ("answer_correct",), sections, figures, missing)


def sentence_agreement_tables(result: SentenceAgreement) -> list[Table]:
    """Agreement on sentence labels, among people and of the claim judge with them (none
    before a sentence is labelled)."""
    if not result.sentences:
        return []
    among = result.among
    rows = [["sentences labelled", fmt(result.sentences)], ["people", fmt(result.people)],
            ["sentences with two or more labels", fmt(among["n_items"])],
            ["percent agreement", fmt(among["percent"])],
            ["Fleiss' kappa", fmt(among["fleiss"])],
            ["Gwet's AC1", _with_interval(among["gwet_ac1"], among["gwet_ac1_interval"])],
            *([f"{first} / {second}: kappa, AC1 (shared)",
               f"{fmt(pair.kappa)}, {fmt(pair.ac1)} ({pair.shared})"]
              for (first, second), pair in result.pairs.items())]
    judge = result.judge
    return [
        Table("Agreement on sentence labels", ["statistic", "value"], rows,
              note="Gwet's AC1 reads high agreement as high even when nearly every sentence "
                   "is supported, where kappa reads it low."),
        Table(f"The {judge['judge']} judge against people's sentence labels",
              ["sentences with a majority", "supported", "AUROC", "balanced accuracy"],
              [[fmt(judge["n"]), fmt(judge["supported"]),
                _with_interval(judge["auroc"], judge["auroc_interval"]),
                _with_interval(judge["balanced_accuracy"], judge["balanced_accuracy_interval"])]],
              note="The majority of people per sentence (\"unsure\" and ties left out) against "
                   "the judge's score (AUROC) and its supported mark (balanced accuracy) in "
                   "this run; 95% bootstrap intervals over sentences.")]


def _with_interval(value: float | None, interval: list[float] | None) -> str:
    return fmt(value) + (f" [{fmt(interval[0])}, {fmt(interval[1])}]" if interval else "")


def agreement_tables(result: Agreement, run_id: int | None = None) -> list[Table]:
    """The agreement tables; with `run_id`, each false keep and false withhold links to its
    case study in that run."""
    among = result.among
    statistics = [["samples with two or more labels", fmt(among["n_items"])],
                  ["percent agreement", fmt(among["percent"])],
                  ["Fleiss' kappa", fmt(among["fleiss"])],
                  ["Krippendorff's alpha", fmt(among["krippendorff_alpha"])],
                  ["Gwet's AC1", fmt(among["gwet_ac1"])],
                  *([f"Cohen's kappa {pair.replace('|', ' / ')}", fmt(kappa)]
                    for pair, kappa in among["cohen"].items())]
    against = [[who, fmt(value["n"]), fmt(value["percent"]), fmt(value["kappa"]),
                fmt(value["ac1"]), SampleLinks(run_id, tuple(value["false_keeps"])),
                SampleLinks(run_id, tuple(value["false_withholds"]))]
               for who, value in {"automatic label": result.automatic, **result.judges}.items()]
    return [Table("Agreement among annotators", ["statistic", "value"], statistics),
            Table("Agreement with the human majority",
                  ["labels of", "n", "percent", "Cohen's kappa", "Gwet's AC1", "false keeps",
                   "false withholds"], against,
                  note="Keep = answerable. Samples with a majority label (ties and \"unsure\" "
                       "left out). False keeps: kept, the majority says unanswerable; false "
                       "withholds: withheld, the majority says answerable (each id opens "
                       "its case study in Browse).")]


class DashboardCache:
    """Views by (run, truth, resamples), valid while the run tables cache hands back the same
    RunTables object; held by a weak reference, so a dropped RunTables is not kept alive
    here. When the tables change, what did not is reused: the judges' series of the same
    records, each TruthPart that still fits, and the automatic labels of a dataset whose
    samples stayed the same (reading them costs seconds). One lock: views are computed one
    at a time (pyplot is not thread-safe), and a second viewer of a changed run waits for
    the first one's view instead of computing it again."""

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
        dataset = tables.config.get("dataset")
        agreed = agreement_tables(agreement(store, dataset, self._automatic_labels(store, dataset),
                                            run_keeps(tables, series)), tables.run_id)
        if dataset is not None:
            agreed += sentence_agreement_tables(
                sentence_agreement(store, dataset, run_id=tables.run_id))
        serial = next(self._serials)
        if tables.samples.empty:
            return RunView(serial, True, [], [], [], agreed), None
        parts = self._parts(tables, resamples, series, before)
        awf, correctness = parts
        shown, *metrics = awf.tables  # what people see opens the page, above the run's facts
        sections = [shown, overview_table(tables), *metrics, *correctness.tables]
        figures = [figure for part in parts for figure in part.figures]
        return RunView(serial, False, sections,
                       [figure for figure in figures if figure.name not in PICTURE],
                       [name for part in parts for name in part.missing_curves], agreed,
                       awf.headline, [figure for figure in figures if figure.name in PICTURE]
                       ), parts

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
        """The automatic labels of the dataset's samples, read again only
        when its samples or passages changed."""
        version = dataset_version(store, dataset) if dataset is not None else None
        cached = self._automatic.get(dataset)
        if version is None or cached is None or cached[0] != version:
            cached = (version, automatic_labels(store, dataset))
        remember(self._automatic, dataset, cached, self.size)
        return cached[1]


def annotation_table(store: Store, dataset: str) -> Table:
    """Labelled and skipped samples per annotator on the dataset (no rows before the first
    label)."""
    rows = [[p.annotator, fmt(p.labelled), fmt(p.skipped), fmt(p.total),
             fmt(p.labelled / p.total if p.total else None, 2)]
            for p in label_progress(store, dataset)]
    return Table(f"Annotation of {dataset}",
                 ["annotator", "labelled", "skipped", "samples", "share labelled"], rows)


@dataclass(frozen=True)
class Dashboard:
    run_id: int
    view: RunView
    annotation: Table  # of the run's dataset
    policy_watch: Table  # stored policies on this run's unused labels


def dashboard(store: Store, tables: RunTablesCache, views: DashboardCache, run_id: Any,
              truth: str, resamples: Any) -> Dashboard:
    """Run `run_id` under `truth` with `resamples` bootstrap resamples (the values of a
    form, checked here: a UserError names the one at fault), and its dataset's annotation."""
    run = whole_number(run_id, "run", minimum=1)
    count = whole_number(resamples, "bootstrap resamples", minimum=0, maximum=MAX_RESAMPLES)
    run_tables = tables.get(run, truth)
    dataset = run_tables.config["dataset"]
    return Dashboard(run, views.view(store, run_tables, count), annotation_table(store, dataset),
                     policy_watch_table(store, run_tables, lambda: tables.get(run, "human"),
                                        dataset))
