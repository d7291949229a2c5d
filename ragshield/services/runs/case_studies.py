"""A case study of one sample of a run: what the answerer and the judges saw and said, the
run's decision on it, its human labels, and the labels and folds it counts under."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Collection, Sequence

import pandas as pd

from ragshield.judges.registry import judge_class
from ragshield.judging import decide
from ragshield.policies.policy import config_rule
from ragshield.services.questions.claim_marks import claim_marks
from ragshield.services.runs.answer_panel import AnswerPanel, answer_panel
from ragshield.services.runs.browse import BrowseFrames, fold_column, run_frame
from ragshield.services.runs.run_tables import RunTablesCache
from ragshield.store.database import Store
from ragshield.store.labels import LabelRecord, label_history
from ragshield.store.runs import MAIN
from ragshield.store.sample_records import SampleCase, sample_case
from ragshield.types import DetailTable, RuleDecision, Verdict

__all__ = ["MAIN", "CaseStudy", "case_study"]


@dataclass(frozen=True)
class CaseStudy:
    case: SampleCase
    decision: RuleDecision | None  # under the run's rule; None for a run without one
    history: list[LabelRecord]  # every label of the sample, oldest first
    truth: str
    folds: dict[str, str]  # judge -> its fold on the sample, for the judges in the frame
    frame_row: pd.Series | None  # the sample's row of the Browse frame
    sample_row: pd.Series | None  # its row of the run tables under `truth`
    panel: AnswerPanel | None = None  # the answer as shown on a screen (None: no answer)


def _first(rows: pd.DataFrame) -> pd.Series | None:
    return rows.iloc[0] if len(rows) else None


def case_study(store: Store, cache: RunTablesCache, frames: BrowseFrames, run_id: int,
               truth: str, sample_id: str,
               notes_of: Collection[str] | None = None) -> CaseStudy:
    """Everything the Browse tab shows about one sample (the dataset's own id) of a run,
    its label history with the notes of `notes_of` only (None: everyone's;
    people.notes_shown_to). Raises UnknownRunError, UnknownSampleError or OptionError."""
    case = sample_case(store, run_id, sample_id)
    tables, frame = run_frame(cache, frames, run_id, truth)
    history = label_history(store, case.run.dataset, sample_id) if case.run.dataset else []
    if notes_of is not None:
        history = [record if record.annotator in notes_of else replace(record, note=None)
                   for record in history]
    frame_row = _first(frame.rows[frame.rows["sample_id"] == sample_id])
    sample_row = _first(tables.samples[tables.samples["sample_id"].astype(str) == sample_id])
    decision = decide([Verdict(judge=v["judge"], keep=v["keep"], score=v["score"],
                               rationale=v["rationale"] or "") for v in case.verdicts],
                      config_rule(tables.config)) if frame.rule else None
    folds = {} if frame_row is None else {
        v["judge"]: frame_row[fold_column(v["judge"])] for v in case.verdicts
        if fold_column(v["judge"]) in frame_row.index}
    main = case.answers.get(MAIN)
    panel = None if main is None else answer_panel(
        str(case.sample["question"]), main.get("text") or "", main.get("passages") or [],
        claim_marks(main.get("text") or "", case.verdicts), decision,
        refusal=bool(main.get("refusal")), cited=main.get("evidence") or [])
    return CaseStudy(case=case, decision=decision, history=history, truth=truth, folds=folds,
                     frame_row=frame_row, sample_row=sample_row, panel=panel)


def judge_detail_view(judge: str, details: dict[str, Any],
                      trace: Sequence[dict[str, Any]]) -> list[DetailTable] | None:
    """The judge's own view of a stored verdict's details (None: show them as they are, or
    the judge is no longer known)."""
    found = judge_class(judge)
    return found.detail_view(details, trace) if found is not None else None
