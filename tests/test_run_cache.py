"""The run tables cache and the dashboard's view cache while labels and verdicts arrive, on a
real store with a synthetic run: a label reads only the labels again (the records stay) and
the tables equal a fresh run_tables; a new verdict reads the run again; the dashboard redraws
only the parts whose truth columns changed, and its view equals one computed from scratch;
Browse's filters see the new label; the dataset version follows re-imports."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest

from ragshield.evaluation import RunTables, label_tables, run_records, run_tables
from ragshield.services.runs.browse import DECISION, BrowseFrames
from ragshield.services.runs.run_tables import RunTablesCache
from ragshield.services.runs.run_views import DashboardCache
from ragshield.services.runs import run_views
from ragshield.store.labels import CurrentLabel, add_annotator, add_label
from ragshield.store.models import AnswerRow
from ragshield.store.runs import add_verdicts, get_run
from ragshield.store.sample_import import import_samples
from ragshield.store.samples import load_sample
from ragshield.store.versions import dataset_version
from ragshield.testing.synthetic_run import fill_synthetic_run
from ragshield.types import Passage, Verdict
from ragshield.ui.browse_tab import browse_filter
from ragshield.ui.context import UiContext
from ragshield.ui.dashboard_tab import refresh_dashboard

SAMPLES = 30  # every 10th is labelled by the fixture's annotator
JUDGES = ["j1", "j2"]
SQLITE_ONLY = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)


@pytest.fixture
def run_id(store) -> int:
    return fill_synthetic_run(store, SAMPLES, JUDGES, seed=3)


def dataset_of(store, run: int) -> str:
    return get_run(store, run).dataset or ""


def assert_same_tables(got: RunTables, expected: RunTables) -> None:
    pd.testing.assert_frame_equal(got.samples, expected.samples, check_exact=True)
    pd.testing.assert_frame_equal(got.verdicts, expected.verdicts, check_exact=True)


def unlabelled_sample(tables: RunTables, support: bool) -> pd.Series:
    """A sample without a label whose automatic "passages support an answer" is `support`."""
    samples = tables.samples
    return samples[(samples["annotators"] == 0) & (samples["passages_support"] == support)].iloc[0]


def label(store, run: int, sample_id: str, value: str, correct: bool | None = None,
          annotator: str = "ann") -> None:
    add_annotator(store, annotator)
    add_label(store, dataset_of(store, run), sample_id, annotator, value, answer_correct=correct)


def test_a_label_reuses_the_records_and_changes_only_what_labels_reach(store, run_id):
    cache = RunTablesCache(store)
    auto, human = cache.get(run_id, "auto"), cache.get(run_id, "human")
    assert cache.get(run_id, "auto") is auto and cache.get(run_id, "human") is human
    sample = unlabelled_sample(auto, support=True)
    label(store, run_id, sample["sample_id"], "unanswerable", correct=not sample["auto_correct"])

    new_auto, new_human = cache.get(run_id, "auto"), cache.get(run_id, "human")
    assert new_auto.records is auto.records and new_human.records is auto.records  # not read again
    assert new_auto is not auto and new_auto.verdicts is auto.verdicts  # auto truth: untouched
    row = new_human.samples.set_index("sample_id").loc[sample["sample_id"]]
    assert (row["human_label"], row["annotators"]) == ("unanswerable", 1)
    assert (row["passages_support"], row["answer_correct"]) == (False, not sample["auto_correct"])
    verdicts = new_human.verdicts[new_human.verdicts["sample_id"] == sample["sample_id"]]
    assert len(verdicts) == len(JUDGES) and not verdicts["passages_support"].any()
    assert new_auto.samples.set_index("sample_id").loc[sample["sample_id"], "human_label"] \
        == "unanswerable"
    for truth, tables in (("auto", new_auto), ("human", new_human)):
        assert_same_tables(tables, run_tables(store, run_id, truth))


def test_a_new_verdict_reads_the_run_again(store, run_id):
    cache = RunTablesCache(store)
    before = cache.get(run_id, "human")
    with store.session() as session:
        answer_id = session.query(AnswerRow.id).filter(AnswerRow.run_id == run_id).first()[0]
    add_verdicts(store, answer_id, [Verdict(judge="late", keep=True, score=0.3)])
    after = cache.get(run_id, "human")
    assert after.records is not before.records and "late" in set(after.verdicts["judge"])
    assert_same_tables(after, run_tables(store, run_id, "human"))


def test_labels_of_samples_outside_the_run_change_nothing(store, run_id):
    records = run_records(store, run_id)
    elsewhere = {max(records.positions) + 1: [CurrentLabel(1, "unanswerable", False)]}
    tables = label_tables(records, elsewhere, "human")
    assert tables.samples is records.samples and tables.verdicts is records.verdicts
    with pytest.raises(ValueError, match="truth must be one of"):
        label_tables(records, {}, "oracle")


@pytest.fixture
def context(store, settings) -> UiContext:
    return UiContext(settings=settings, store=store)


@pytest.fixture
def drawn(monkeypatch) -> list[str]:
    """The names of the figures drawn and "metrics" for each judge_metrics call."""
    calls: list[str] = []
    figure, metrics = run_views._figure, run_views.judge_metrics
    monkeypatch.setattr(run_views, "_figure",
                        lambda name, *args: calls.append(name) or figure(name, *args))
    monkeypatch.setattr(run_views, "judge_metrics",
                        lambda *args, **kw: calls.append("metrics") or metrics(*args, **kw))
    return calls


def fresh_view(context: UiContext, run: int, truth: str) -> tuple[str, str, str]:
    """The view computed from scratch: a new tables cache and a new view cache."""
    fresh = UiContext(settings=context.settings, store=context.store)
    shown = refresh_dashboard(fresh, DashboardCache(), run, truth, 50)
    return shown.headline_html, shown.tables_html, shown.figures_html, shown.agreement_html


# What the AwF part draws: the Dashboard's two pictures and the PR curves.
AWF_FIGURES = ["tradeoff", "judges", "pr"]


@SQLITE_ONLY
def test_the_dashboard_redraws_only_the_parts_a_label_changed(context, run_id, drawn):
    cache = DashboardCache()

    def refresh(truth: str):
        shown = refresh_dashboard(context, cache, run_id, truth, 50)
        counted = len(drawn)
        assert (shown.headline_html, shown.tables_html, shown.figures_html,
                shown.agreement_html) == fresh_view(context, run_id, truth)
        del drawn[counted:]  # what the fresh view drew
        return shown

    def unlabelled(support: bool) -> str:
        return unlabelled_sample(context.tables.get(run_id, "human"), support)["sample_id"]

    auto, human = refresh("auto"), refresh("human")
    assert drawn == ["metrics", *AWF_FIGURES, "risk_coverage"] * 2
    # An Annotate-tab label (no answer flag) that turns "passages support an answer" over
    label(context.store, run_id, unlabelled(support=True), "unanswerable")
    drawn.clear()
    new_auto = refresh("auto")
    assert drawn == [] and new_auto.view_serial != auto.view_serial
    assert new_auto.agreement_html != auto.agreement_html  # one more majority label
    new_human = refresh("human")
    assert drawn == ["metrics", *AWF_FIGURES] and new_human.figures_html != human.figures_html
    assert new_human.headline_html != human.headline_html
    # A label that agrees with the automatic truth leaves every part as it was.
    label(context.store, run_id, unlabelled(support=False), "unanswerable")
    drawn.clear()
    refresh("human")
    assert drawn == []
    # A label saying the answer is wrong (from the CLI) changes the correctness part too.
    sample = unlabelled_sample(context.tables.get(run_id, "human"), support=True)
    label(context.store, run_id, sample["sample_id"], "answerable",
          correct=not sample["auto_correct"])
    drawn.clear()
    refresh("human")
    assert drawn == ["metrics", *AWF_FIGURES, "risk_coverage"]


@SQLITE_ONLY
def test_browse_filters_see_a_new_label(context, run_id):
    frames = BrowseFrames()

    def labelled() -> list[str]:
        _, rows, _ = browse_filter(context, frames, run_id, "auto", DECISION, [], False,
                                   "labelled", False, "")
        return list(rows["sample"])

    before = labelled()
    assert len(before) == SAMPLES // 10
    sample_id = unlabelled_sample(context.tables.get(run_id), support=True)["sample_id"]
    label(context.store, run_id, sample_id, "answerable")
    assert sorted(labelled()) == sorted([*before, sample_id])


@SQLITE_ONLY
def test_the_dataset_version_follows_new_and_rewritten_samples(store, run_id):
    dataset = dataset_of(store, run_id)
    first = dataset_version(store, dataset)
    sample = load_sample(store, dataset, "syn-000003")
    import_samples(store, dataset, [replace(sample, passages=[Passage(text="Rewritten.")])])
    second = dataset_version(store, dataset)
    assert second != first
    import_samples(store, dataset, [replace(sample, id="syn-new")])
    assert dataset_version(store, dataset) not in (first, second)
