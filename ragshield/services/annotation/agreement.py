"""Agreement of the annotators of a dataset among themselves, and of the automatic
answerability label and each judge's keep decisions with their majority label
(docs/METHODS.md 5.5). Samples are named by their row id, as labels name them, except in the
false keeps and false withholds handed back, which carry the dataset's own sample ids (as
Browse shows them) so that a face can point at their case studies."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from sqlalchemy import select

from ragshield.evaluation import RunTables
from ragshield.label_agreement import automatic_labels, newest_run_keeps
from ragshield.metrics.agreement import (agreement_summary, agreement_with_majority,
                                         cohen_kappa_pairs, majority_by_item)
from ragshield.reports.tables import JudgeSeries
from ragshield.store.database import Store
from ragshield.store.labels import current_label_table
from ragshield.store.models import Dataset, Sample

Keeps = Mapping[int, bool]  # sample row id -> keep (= answerable)
MISSES = ("false_keeps", "false_withholds")  # the sample lists of agreement_with_majority
ID_SLICE = 1000


@dataclass(frozen=True)
class Agreement:
    # agreement_summary: percent, cohen, fleiss, krippendorff_alpha, gwet_ac1, n_items
    among: dict[str, Any]
    # The automatic label against the majority: n, percent, kappa, ac1, and false_keeps and
    # false_withholds as sorted sample ids (external ids; "dataset/id" across all datasets).
    automatic: dict[str, Any]
    judges: dict[str, dict[str, Any]]  # judge -> the same against the majority


def agreement(store: Store, dataset: str | None, automatic: Keeps,
              judges: Mapping[str, Keeps]) -> Agreement:
    """The annotators of `dataset` (None: of every dataset) among themselves, and the
    `automatic` labels and each judge's keeps against their majority label (ties and
    "unsure" left out)."""
    ratings = current_label_table(store, dataset)
    majority = majority_by_item(ratings)
    automatic_result = agreement_with_majority(automatic, majority)
    judge_results = {judge: agreement_with_majority(keeps, majority)
                     for judge, keeps in judges.items()}
    results = [automatic_result, *judge_results.values()]
    wrong = {row for result in results for key in MISSES for row in result[key]}
    names = _sample_names(store, wrong, with_dataset=dataset is None)
    for result in results:
        for key in MISSES:
            result[key] = sorted(names.get(row, str(row)) for row in result[key])
    return Agreement(agreement_summary(ratings), automatic_result, judge_results)


def _sample_names(store: Store, row_ids: set[int], with_dataset: bool) -> dict[int, str]:
    """Sample row id -> the dataset's own sample id, or "dataset/id" `with_dataset` (an id
    is unique within its dataset only). Read in slices that keep under the databases'
    limits on bound parameters."""
    ids = sorted(row_ids)
    names: dict[int, str] = {}
    with store.session() as session:
        for first in range(0, len(ids), ID_SLICE):
            rows = session.execute(
                select(Sample.id, Dataset.name, Sample.external_id).join(Dataset)
                .where(Sample.id.in_(ids[first:first + ID_SLICE]))).tuples().all()
            names.update((row, f"{name}/{external}" if with_dataset else external)
                         for row, name, external in rows)
    return names


@dataclass(frozen=True)
class PairAgreement:
    kappa: float | None  # None: both gave one and the same label on every shared sample
    shared: int  # samples both have a current label on


def pair_agreement(store: Store, dataset: str) -> dict[tuple[str, str], PairAgreement]:
    """Cohen's kappa of every two annotators of `dataset` on the samples both labelled
    (current labels, "unsure" a label like the others, as in `agreement`), keyed by the
    two names in sorted order; pairs without a shared sample are left out. The raters are
    numbered for the statistics, so that a name may hold any character."""
    ratings = current_label_table(store, dataset)
    names = sorted({name for _, name, _ in ratings})
    number = {name: index for index, name in enumerate(names)}
    raters: dict[int, list[int]] = {}
    for sample, name, _ in ratings:
        raters.setdefault(sample, []).append(number[name])
    shared = Counter(pair for row in raters.values() for pair in combinations(sorted(row), 2))
    kappas = cohen_kappa_pairs([(sample, number[name], label) for sample, name, label in ratings])
    result = {}
    for key, kappa in kappas.items():
        first, second = sorted(map(int, key.split("|")))
        result[names[first], names[second]] = PairAgreement(
            None if math.isnan(kappa) else kappa, shared[first, second])
    return result


def newest_run_agreement(store: Store, dataset: str | None) -> Agreement:
    """`agreement` of the automatic labels and, for one dataset, of the judges of its newest
    run (none for every dataset)."""
    judges = newest_run_keeps(store, dataset) if dataset is not None else {}
    return agreement(store, dataset, automatic_labels(store, dataset), judges)


def run_keeps(tables: RunTables, series: Mapping[str, JudgeSeries]) -> dict[str, dict[int, bool]]:
    """Each judge's keep decisions on the run (`series`: judge_series(tables)), by sample
    row id."""
    positions = tables.records.positions if tables.records is not None else {}
    row_ids = {position: row_id for row_id, position in positions.items()}
    return {judge: {row_ids[row]: keep for row, keep in zip(s.rows.tolist(), s.keep.tolist())
                    if row in row_ids}
            for judge, s in series.items()}
