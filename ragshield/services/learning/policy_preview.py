"""What the Dashboard's policy panel shows of a run: a policy previewed before it is saved
(its promise in words, the labels it rests on, the coverage it buys, its calibration scores
drawn under its bands), the stored versions with the risk they show on the run, and the
watch as a picture. The preview is fit_run_policy's own fit (policies.run_calibration, then
CalibrationSet.fit), not stored: saving it with the same choices stores these thresholds."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ragshield.evaluation import RunTables, dataset_labels, run_tables
from ragshield.holdout import HOLDOUT_SHARE
from ragshield.decision_rule import KEPT
from ragshield.policies.fitting import PERSON, REFERENCE, UNANSWERABLE_FLAG
from ragshield.policies.policy import Policy
from ragshield.policies.risk_control import PolicyFitError, clopper_pearson
from ragshield.policies.stacked_score import STACKED
from ragshield.policies.watch import unused_mask
from ragshield.reports.figures import MAX_POINTS
from ragshield.reports.policy_figures import score_histogram, watch_figure
from ragshield.reports.tables import fmt
from ragshield.services.learning.pinned_policy import pinned
from ragshield.services.learning.policies import (TRUTH, interval_text, labelled_scores,
                                                  list_policies, policies_in_use, policy_scores,
                                                  reads_run, run_calibration, watch_run)
from ragshield.services.runs.run_views import FIGURE_DPI
from ragshield.store.database import Store
from ragshield.store.labels import annotator_names
from ragshield.store.sentence_labels import answer_flag
from ragshield.store.truth_times import truth_times
from ragshield.types import Table

PREVIEW_NAME = "preview"  # a preview is not stored: its name is never seen
# Where a calibration label's truth came from, in the words the panel uses.
KINDS = {PERSON: "people", REFERENCE: "reference answers",
         UNANSWERABLE_FLAG: "unanswerable flags"}


def percent(share: float) -> str:
    """0.1 -> "10%", 0.125 -> "12.5%"."""
    return f"{share * 100:.3g}%"


def promise_words(alpha: float, delta: float, beta: float | None = None) -> str:
    """The promise in one plain sentence."""
    text = (f"Of the answers shown, at most {percent(alpha)} are wrong or unsupported, with "
            f"{percent(1 - delta)} confidence")
    if beta is not None:
        text += f"; of the answers withheld, at most {percent(beta)} were good"
    return text + "."


def scored_judges(tables: RunTables) -> list[str]:
    """The judges a policy on this run can read: each that gave scores, and the stacked
    judge of them all."""
    verdicts = tables.verdicts
    judges = sorted(set(verdicts.loc[verdicts["score"].notna(), "judge"]))
    return [*judges, STACKED] if judges else []


@dataclass(frozen=True)
class Preview:
    """A policy as it would be saved, or why none can be, on a run's current labels."""

    judge: str
    alpha: float
    delta: float
    beta: float | None
    holdout: float  # share of the samples kept apart to watch the promise
    labels: dict[str, int]  # calibration samples by where their truth came from (KINDS)
    unscored: int  # of them, those the judge gave no score (a policy defers them)
    trained_on: int  # labels the stacked judge learnt from (kept apart from calibration)
    policy: Policy | None  # None: no threshold keeps the promise on these labels
    problem: str | None  # why not (PolicyFitError's message)
    more_labels: int | None  # about how many more labels would do, at the current error rate
    histogram: bytes  # PNG: good and bad calibration answers by score, under the bands
    authors: LabelAuthors = field(default_factory=lambda: LabelAuthors({}, 0))

    @property
    def promise(self) -> str:
        return promise_words(self.alpha, self.delta, self.beta)

    @property
    def calibration_size(self) -> int:
        return sum(self.labels.values())


@dataclass(frozen=True)
class LabelAuthors:
    """Whose labels the people's calibration answers rest on."""

    people: dict[str, int]  # annotator -> calibration answers they labelled, most first
    by_sentences: int  # calibration answers some person judged by sentence labels alone


def label_authors(store: Store, tables: RunTables, sample_ids: np.ndarray) -> LabelAuthors:
    """Who labelled the calibration answers `sample_ids` (the dataset's ids) of the run, and
    on how many of them a person's verdict came from their sentence labels (no label of the
    whole answer, sentences that add up to one)."""
    records = tables.records
    if records is None or len(sample_ids) == 0:
        return LabelAuthors({}, 0)
    wanted = set(np.asarray(sample_ids).astype(str).tolist())
    with store.session() as session:
        names = annotator_names(session)
    people: Counter[str] = Counter()
    by_sentences = 0
    samples = tables.samples
    for row_id, current in dataset_labels(store, records).items():
        position = records.positions.get(row_id)
        if position is None or str(samples["sample_id"].iat[position]) not in wanted:
            continue
        answer = samples["answer"].iat[position] or ""
        people.update(names.get(c.annotator_id, "?") for c in current)
        by_sentences += any(c.answer_correct is None and c.sentences
                            and answer_flag(answer, list(c.sentences)) is not None
                            for c in current)
    return LabelAuthors(dict(people.most_common()), by_sentences)


def preview_policy(store: Store, run_id: int, judge: str, *, alpha: float, delta: float,
                   beta: float | None = None, holdout: float = HOLDOUT_SHARE,
                   tables: RunTables | None = None) -> Preview:
    """The policy fit_run_policy would store with these choices, without storing it
    (`tables`: the run's under truth "human", when the caller has them)."""
    tables = tables if tables is not None else run_tables(store, run_id, TRUTH)
    calibration = run_calibration(store, run_id, judge, holdout, tables)
    data = calibration.data
    policy, problem, more = None, None, None
    try:
        policy = calibration.fit(PREVIEW_NAME, alpha=alpha, delta=delta, beta=beta)
    except PolicyFitError as error:
        problem, more = str(error), error.more_labels
    histogram = score_histogram(
        data.scores, data.good, judge, policy.answer_at if policy else None,
        policy.withhold_below if policy else None, dpi=FIGURE_DPI)
    return Preview(judge, alpha, delta, beta, holdout,
                   {kind: int(np.count_nonzero(data.source == kind)) for kind in KINDS},
                   int(np.isnan(data.scores).sum()), len(calibration.trained_on), policy,
                   problem, more, histogram,
                   label_authors(store, tables, data.sample_ids[data.source == PERSON]))


def _observed(tables: RunTables, policy: Policy, dataset: str | None) -> str:
    """The risk the policy shows on the run's labels it was not fitted on, with its
    interval; "-" when the run's judges do not give what it reads."""
    if not reads_run(policy, tables):
        return "- (its judges did not score this run)"
    unused = watch_run(tables, policy, dataset)[-1]
    if unused.risk is None:
        return f"- (nothing answered among {unused.samples} labels)"
    return (f"{fmt(unused.risk, 3)} {interval_text(unused.risk_interval)} "
            f"({unused.bad_answered} of {unused.answered} answered)")


def versions_table(store: Store, tables: RunTables, dataset: str | None) -> Table:
    """Every stored policy version: its judge, promise and coverage on its calibration
    labels, the risk observed on this run (`tables` under truth "human") and whether it is
    the pinned default rule."""
    pin = pinned(store)
    rows = [[policy.rule, policy.source, promise_words(policy.alpha, policy.delta, policy.beta),
             percent(policy.calibration.coverage) if policy.calibration.labels else "-",
             _observed(tables, policy, dataset),
             "pinned" if pin is not None and pin.rule == policy.rule else ""]
            for policy in list_policies(store)]
    note = ("Observed risk: wrong among the answers the policy shows, on this run's labels it "
            "was not fitted on, with a 95% interval. The pinned version is the default rule "
            "of the Demo and the API (and of runs started without a rule).")
    if not rows:
        note = "No policy is stored yet: preview one above and save it."
    return Table("Saved policies", ["policy", "judge", "promise", "coverage on calibration",
                                    "observed risk", "default"], rows, note)


@dataclass(frozen=True)
class WatchCurve:
    """A policy's risk on the run's labels it was not fitted on, after each label in the
    order they came (at most MAX_POINTS points, the last included)."""

    policy: Policy
    labels: np.ndarray  # labels seen so far
    answered: np.ndarray  # of them, answers the policy shows
    bad: np.ndarray  # of those, wrong or unsupported
    low: np.ndarray  # 95% Clopper-Pearson interval of bad / answered (NaN: none answered)
    high: np.ndarray
    png: bytes

    @property
    def risk(self) -> np.ndarray:
        return _risk(self.bad, self.answered)


def _risk(bad: np.ndarray, answered: np.ndarray) -> np.ndarray:
    """bad / answered, NaN where nothing was answered."""
    return np.where(answered > 0, bad / np.maximum(answered, 1), np.nan)


def _label_order(store: Store, run_id: int, sample_ids: np.ndarray,
                 sources: np.ndarray) -> np.ndarray:
    """The samples in the order their truth became known: a person's label when people
    gave it, else the time the answer was stored (its reference or flag was known then)."""
    times = truth_times(store, run_id)
    when = [times.labelled.get(i) if source == PERSON and i in times.labelled
            else times.answered.get(i) for i, source in zip(sample_ids.tolist(), sources)]
    keys = np.asarray([t.timestamp() if t is not None else math.inf for t in when])
    return np.argsort(keys, kind="stable")


def _curve(store: Store, tables: RunTables, policy: Policy,
           dataset: str | None) -> WatchCurve | None:
    data = labelled_scores(tables, policy_scores(tables, policy))
    unused = unused_mask(policy, dataset, data.sample_ids)
    if not unused.any():
        return None
    order = _label_order(store, tables.run_id, data.sample_ids[unused], data.source[unused])
    shown = policy.decision_codes(data.scores[unused][order]) == KEPT
    answered = np.cumsum(shown)
    bad = np.cumsum(shown & ~data.good[unused][order])
    points = np.unique(np.linspace(0, len(shown) - 1, min(len(shown), MAX_POINTS))
                       .round().astype(int))
    labels, answered, bad = points + 1, answered[points], bad[points]
    low, high = np.asarray([clopper_pearson(int(b), int(n)) for b, n in zip(bad, answered)]).T
    png = watch_figure(labels, _risk(bad, answered), low, high, policy.alpha,
                       f"{policy.rule}: promised and observed risk", dpi=FIGURE_DPI)
    return WatchCurve(policy, labels, answered, bad, low, high, png)


def watch_curves(store: Store, tables: RunTables, dataset: str | None) -> list[WatchCurve]:
    """The watch of each policy in use on the run (`tables` under truth "human"): the
    pinned one and the newest version of each other policy whose judges scored the run;
    none for a policy without labels it was not fitted on."""
    curves = (_curve(store, tables, policy, dataset) for policy in policies_in_use(store, tables))
    return [curve for curve in curves if curve is not None]
