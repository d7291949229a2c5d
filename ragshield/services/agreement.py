"""Agreement of the annotators of a dataset among themselves, and of the automatic
answerability label and each judge's keep decisions with their majority label
(docs/METHODS.md 5.5). Samples are named by their row id, as labels name them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ragshield.evaluation import RunTables
from ragshield.label_agreement import automatic_labels, newest_run_keeps
from ragshield.metrics.agreement import (agreement_summary, agreement_with_majority,
                                         majority_by_item)
from ragshield.reports.tables import JudgeSeries
from ragshield.store.database import Store
from ragshield.store.labels import current_label_table

Keeps = Mapping[int, bool]  # sample row id -> keep (= answerable)


@dataclass(frozen=True)
class Agreement:
    among: dict[str, Any]  # agreement_summary: percent, cohen, fleiss, krippendorff_alpha, n_items
    automatic: dict[str, Any]  # the automatic label against the majority: n, percent, kappa
    judges: dict[str, dict[str, Any]]  # judge -> n, percent, kappa against the majority


def agreement(store: Store, dataset: str | None, automatic: Keeps,
              judges: Mapping[str, Keeps]) -> Agreement:
    """The annotators of `dataset` (None: of every dataset) among themselves, and the
    `automatic` labels and each judge's keeps against their majority label (ties and
    "unsure" left out)."""
    ratings = current_label_table(store, dataset)
    majority = majority_by_item(ratings)
    return Agreement(agreement_summary(ratings), agreement_with_majority(automatic, majority),
                     {judge: agreement_with_majority(keeps, majority)
                      for judge, keeps in judges.items()})


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
