"""From labelled calibration samples to a Policy: the thresholds (risk_control), what they
do on the calibration labels, and a record of the labels they were fitted on."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Mapping, Sequence
from datetime import datetime, timezone

import numpy as np

from ragshield.policies.policy import FittedOn, Policy, calibration_of, check_name
from ragshield.policies.risk_control import STARTS, fit_thresholds
from ragshield.policies.stacked_score import StackedScore
from ragshield.version import code_version


# Where a calibration sample's truth came from, first that has a say: people (their verdict
# on the answer, or "unanswerable"), the dataset's reference answers, or its `answerable:
# false` flag (any answer shown there is bad).
PERSON, REFERENCE, UNANSWERABLE_FLAG = "person", "reference", "unanswerable flag"


@dataclass(frozen=True)
class LabelledScores:
    """One row per labelled calibration sample."""

    sample_ids: np.ndarray  # str: the dataset's own ids
    scores: np.ndarray  # float, NaN where the judge gave none, -inf for a refusal
    good: np.ndarray  # bool: the answer is right and supported
    source: np.ndarray  # str: PERSON, REFERENCE or UNANSWERABLE_FLAG

    @property
    def human(self) -> np.ndarray:
        return self.source == PERSON


def fingerprint(sample_ids: np.ndarray, good: np.ndarray) -> str:
    """A digest of the (sample, label) pairs, in any order: equal digests, equal labels."""
    ids = np.asarray(sample_ids).astype(str)
    order = np.argsort(ids, kind="stable")
    digest = hashlib.sha256("\n".join(ids[order].tolist()).encode())
    digest.update(np.packbits(np.asarray(good, dtype=bool)[order]).tobytes())
    return digest.hexdigest()


def fit_policy(name: str, source: str, data: LabelledScores, *, alpha: float, delta: float,
               beta: float | None = None, run_id: int | None = None,
               dataset: str | None = None, truth: str = "human", holdout: float = 0.0,
               stacker: StackedScore | None = None, trained_on: Sequence[str] = (),
               starts: int = STARTS, read_by: Mapping[str, str] | None = None) -> Policy:
    """Fit the thresholds on `data` and describe the result (PolicyFitError when the labels
    cannot support the promise). `stacker`: the model that gave the scores, trained on the
    samples `trained_on` (kept apart from `data`). `starts`: the LTT sequences tested
    (risk_control.STARTS). `read_by`: the model each of its judges read from."""
    check_name(name, "policy name")
    fitted = fit_thresholds(data.scores, data.good, alpha, delta, beta, starts)
    scored = ~np.isnan(data.scores)
    notes = []
    if stacker is not None:
        notes.append(f"stacked judge over {', '.join(stacker.judges)}: trained on "
                     f"{len(trained_on)} labels, thresholds calibrated on {len(data.scores)} "
                     "others")
    if beta is not None and fitted.withhold_below is None:
        notes.append(f"no withhold threshold kept good answers among the withheld <= {beta:g}:"
                     " every answer below the answer threshold is deferred")
    return Policy(
        name=name, source=source, answer_at=fitted.answer_at,
        withhold_below=fitted.withhold_below, alpha=alpha, delta=delta, beta=beta,
        calibration=calibration_of(fitted.answer_at, fitted.withhold_below,
                                   data.scores[scored], data.good[scored]),
        fitted_on=FittedOn(run_id=run_id, dataset=dataset, truth=truth,
                           human_labels=int(data.human[scored].sum()),
                           automatic_labels=int((~data.human[scored]).sum()),
                           unanswerable_flags=int((data.source[scored]
                                                   == UNANSWERABLE_FLAG).sum()),
                           unscored=int((~scored).sum()),
                           fingerprint=fingerprint(data.sample_ids, data.good),
                           sample_ids=(*np.asarray(data.sample_ids).astype(str).tolist(),
                                       *trained_on)),
        code_version=code_version(), created_at=datetime.now(timezone.utc).isoformat(),
        holdout=holdout, tested=fitted.tested, notes=notes, stacker=stacker,
        read_by=dict(read_by or {}))
