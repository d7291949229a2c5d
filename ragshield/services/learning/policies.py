"""Policies for the faces: fit one on a run's labels, read and keep them, use one as a
decision rule, watch one on labels it was not fitted on, and move one between stores.

Labels: a sample counts when its truth is known: people judged its answer or called it
unanswerable (the majority of its current labels), else it has reference answers, else the
dataset flags it unanswerable (then any answer shown is bad). Leaving the flagged ones out
would calibrate on the answerable questions alone and promise far less risk than the traffic
has. An answer is good when it is right and the passages support it (docs/METHODS.md 3, the
AwF truth); a refusal is a withhold."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ragshield import strict_json
from ragshield.errors import OptionError, UserError
from ragshield.evaluation import RunTables, run_tables
from ragshield.holdout import HOLDOUT_SHARE, in_holdout
from ragshield.metrics.labels import UNANSWERABLE
from ragshield.output_files import write_atomically
from ragshield.policies.fitting import (PERSON, REFERENCE, UNANSWERABLE_FLAG, LabelledScores,
                                        fit_policy)
from ragshield.policies.policy import Policy, PolicyFormatError, rule_fields
from ragshield.policies.rules import parse_rule
from ragshield.policies.stacked_score import (STACKED, StackedScore, run_features,
                                              train_stacked_score)
from ragshield.policies.watch import WatchRow, watch
from ragshield.reports.tables import fmt
from ragshield.run_config import RunConfig
from ragshield.services.learning.pinned_policy import pinned
from ragshield.services.runs.run_scores import RunView, judge_scores
from ragshield.store import policies as policy_store
from ragshield.store.annotation_queue import ValueMix
from ragshield.store.database import Store
from ragshield.store.runs import get_run
from ragshield.types import Table

TRUTH = "human"


def policy_scores(tables: RunTables, policy: Policy) -> np.ndarray:
    """The score `policy` decides each sample of the run by (Policy.run_scores)."""
    return policy.run_scores(RunView(tables))


def truth_sources(samples) -> np.ndarray:
    """Where each sample's truth comes from (fitting's PERSON, REFERENCE, UNANSWERABLE_FLAG),
    "" where it is unknown. People count when they judged the answer or called the question
    unanswerable; an "answerable" vote alone does not say whether the answer was right."""
    person = (samples["human_answer_correct"].notna().to_numpy()
              | (samples["human_label"] == UNANSWERABLE).to_numpy())
    reference = samples["references"].map(len).to_numpy() > 0
    flagged = ((samples["answerable"] == False).to_numpy()  # noqa: E712 (None: no flag)
               & ~samples["passages_support"].to_numpy(dtype=bool))  # no person says otherwise
    return np.select([person, reference, flagged], [PERSON, REFERENCE, UNANSWERABLE_FLAG], "")


def labelled_scores(tables: RunTables, scores: np.ndarray, holdout: float = 0.0,
                    rows: np.ndarray | None = None) -> LabelledScores:
    """The run's samples whose truth is known (of `rows`, a mask; default all) with their
    `scores`, leaving out the random slice of `holdout`. `tables` must be under truth
    "human". A refusal shows no answer: it counts as withheld (score -inf) whatever the
    judge said."""
    samples = tables.samples
    ids = samples["sample_id"].astype(str).to_numpy()
    source = truth_sources(samples)
    kept = source != ""
    if holdout > 0:  # the watch asks with none, on every Dashboard refresh
        kept &= ~np.asarray([in_holdout(i, holdout) for i in ids], dtype=bool)
    if rows is not None:
        kept &= rows
    good = (samples["answer_correct"].astype(bool) & samples["passages_support"].astype(bool))
    scores = np.where(samples["refusal"].to_numpy(dtype=bool), -np.inf, scores)
    return LabelledScores(ids[kept], scores[kept], good.to_numpy(dtype=bool)[kept],
                          source[kept])


def _stacked(tables: RunTables, holdout: float) -> tuple[StackedScore, LabelledScores, list[str]]:
    """The stacked judge trained on half of the labelled samples (by a hash of their id)
    and the other half scored by it, for calibration: thresholds fitted on the samples the
    model learnt from would promise too much."""
    ids = tables.samples["sample_id"].astype(str)
    features = run_features(tables.verdicts, tables.samples["sample_id"])
    training = ids.map(lambda i: in_holdout(f"stacked-training:{i}", 0.5)).to_numpy(dtype=bool)
    trained = labelled_scores(tables, np.zeros(len(ids)), holdout, training)
    stacker = train_stacked_score(features[training & ids.isin(trained.sample_ids).to_numpy()],
                                  trained.good)
    calibration = labelled_scores(tables, stacker.score_frame(features), holdout, ~training)
    return stacker, calibration, [str(i) for i in trained.sample_ids]


@dataclass(frozen=True)
class CalibrationSet:
    """What a policy on a run is fitted on: the labelled calibration samples with the score
    it reads, and for the stacked judge its model, trained on the samples `trained_on`."""

    run_id: int
    dataset: str | None
    judge: str
    holdout: float
    data: LabelledScores
    stacker: StackedScore | None = None
    trained_on: tuple[str, ...] = ()
    read_by: dict[str, str] | None = None  # the model each judge read from in the run

    def fit(self, name: str, *, alpha: float, delta: float,
            beta: float | None = None) -> Policy:
        """The policy these labels support, not stored (PolicyFitError when none)."""
        return fit_policy(name, self.judge, self.data, alpha=alpha, delta=delta, beta=beta,
                          run_id=self.run_id, dataset=self.dataset, truth=TRUTH,
                          holdout=self.holdout, stacker=self.stacker,
                          trained_on=self.trained_on, read_by=self.read_by)


def run_calibration(store: Store, run_id: int, judge: str, holdout: float = HOLDOUT_SHARE,
                    tables: RunTables | None = None) -> CalibrationSet:
    """The run's labels a policy on `judge` is fitted on (`tables`: the run's, under truth
    "human", when the caller has them). `judge` "stacked": the stacked judge of the run's
    judges, trained on half the labels."""
    if not 0 <= holdout < 1:
        raise OptionError(f"holdout must lie in [0, 1), got {holdout}")
    run = get_run(store, run_id)
    tables = tables if tables is not None else run_tables(store, run_id, TRUTH)
    if tables.samples.empty:
        raise UserError(f"run {run_id} has no answers to fit a policy on")
    if not (truth_sources(tables.samples) != "").any():
        raise UserError(f"run {run_id} has no sample whose truth is known: a policy needs "
                        "people's labels (Annotate tab or `labels import`), reference answers "
                        "or the dataset's answerable flag")
    config = RunConfig.from_dict(run.config)
    if judge == STACKED:
        stacker, data, trained_on = _stacked(tables, holdout)
        return CalibrationSet(run_id, run.dataset, judge, holdout, data, stacker,
                              tuple(trained_on), config.read_by(stacker.judges))
    return CalibrationSet(run_id, run.dataset, judge, holdout,
                          labelled_scores(tables, judge_scores(tables, judge), holdout),
                          read_by=config.read_by([judge]))


def fit_run_policy(store: Store, run_id: int, judge: str, name: str, *, alpha: float,
                   delta: float, beta: float | None = None, holdout: float = HOLDOUT_SHARE,
                   tables: RunTables | None = None) -> Policy:
    """Fit a policy on the run's labels and store it as the next version of `name`
    (`tables`: the run's under truth "human", when the caller has them)."""
    calibration = run_calibration(store, run_id, judge, holdout, tables)
    return save_policy(store, calibration.fit(name, alpha=alpha, delta=delta, beta=beta))


def save_policy(store: Store, policy: Policy) -> Policy:
    """Store the policy as the next version of its name; returns it with that version."""
    body = policy_store.save_policy(
        store, policy.name, policy.source, policy.fitted_on.dataset,
        lambda version: replace(policy, version=version).to_dict())
    return Policy.from_dict(body, f"policy {policy.name}")


def get_policy(store: Store, name: str, version: int | None = None) -> Policy:
    return Policy.from_dict(policy_store.policy_body(store, name, version),
                            f"stored policy {name}")


def list_policies(store: Store) -> list[Policy]:
    """Every stored version of every policy, by name then version."""
    return [Policy.from_dict(body, "stored policy") for body in policy_store.policy_bodies(store)]


def policy_sources(store: Store) -> dict[str, str]:
    """Each policy name -> the judge its newest version reads."""
    return {head.name: head.source for head in policy_store.policy_heads(store)}


# Each policy version's band, read once per process: the value queue asks on every label.
_BANDS: dict[tuple[str, str, int], ValueMix] = {}


def value_mix(store: Store, dataset: str, policy: str | None = None,
              shares: tuple[float, float, float] | None = None) -> ValueMix:
    """The value queue's mix on `dataset`: the defer band of `policy` (default: the newest
    policy fitted on the dataset; no band without one) and `shares` (band, disagreement,
    random; default ValueMix's)."""
    heads = policy_store.policy_heads(store)
    if policy is not None:
        head = next((h for h in heads if h.name == policy), None)
        if head is None:
            get_policy(store, policy)  # raises, naming the stored ones
    else:
        fitted_here = [h for h in heads if h.dataset == dataset]  # heads come by name, not age
        head = max(fitted_here, key=lambda h: h.row_id, default=None)
    mix = ValueMix() if shares is None else ValueMix(*shares)
    if head is None:
        return mix
    key = (store.url, head.name, head.version)
    if key not in _BANDS:
        fitted = get_policy(store, head.name, head.version)
        low = fitted.withhold_below if fitted.withhold_below is not None else -math.inf
        _BANDS[key] = ValueMix(judge=fitted.source, low=low, high=fitted.answer_at,
                               holdout=fitted.holdout or HOLDOUT_SHARE)
    band = _BANDS[key]
    return replace(mix, judge=band.judge, low=band.low, high=band.high, holdout=band.holdout)


def named_policy(store: Store, rule: str) -> Policy | None:
    """The stored policy a `policy:NAME[@VERSION]` rule names; None for other rules."""
    parsed = parse_rule(rule)
    return None if parsed is None else get_policy(store, *parsed)


def check_policy_judges(policy: Policy, judges: Sequence[str]) -> None:
    missing = [judge for judge in policy.judges if judge not in judges]
    if missing:
        raise OptionError(f"policy {policy.name!r} decides from the scores of "
                          f"{', '.join(policy.judges)}: add {', '.join(missing)} to the judges")


def with_policy(store: Store, config: RunConfig) -> RunConfig:
    """A run config whose rule names a policy, pinned to the policy's version and keeping
    a copy of it, so that the run decides the same way after the policy is refitted."""
    policy = named_policy(store, config.rule) if config.rule else None
    if policy is None:
        return config
    check_policy_judges(policy, config.judges)
    return replace(config, **rule_fields(policy))


def watch_run(tables: RunTables, policy: Policy, dataset: str | None) -> list[WatchRow]:
    """The policy on the run's labelled samples it was not fitted on (tables under truth
    "human")."""
    data = labelled_scores(tables, policy_scores(tables, policy))
    return watch(policy, dataset, data.sample_ids, data.scores, data.good)


def watch_stored_policy(store: Store, name: str, version: int | None,
                        run_id: int) -> list[WatchRow]:
    return watch_run(run_tables(store, run_id, TRUTH), get_policy(store, name, version),
                     get_run(store, run_id).dataset)


def interval_text(bounds: tuple[float, float] | None) -> str:
    """"[low, high]" to 3 decimals, "-" without an interval."""
    return "-" if bounds is None else f"[{fmt(bounds[0], 3)}, {fmt(bounds[1], 3)}]"


def _scored(tables: RunTables) -> set[str]:
    return set(tables.verdicts.loc[tables.verdicts["score"].notna(), "judge"])


def reads_run(policy: Policy, tables: RunTables) -> bool:
    """Whether the run's judges gave what the policy reads: its judge's scores, or a verdict
    of each judge of its stacked judge."""
    return (set(policy.judges) <= set(tables.verdicts["judge"])
            and (policy.source == STACKED or policy.source in _scored(tables)))


def _reading(store: Store, tables: RunTables,
             also: tuple[str, int | None] | None = None) -> list[Policy]:
    """The newest version of each stored policy whose judges gave this run what it reads
    (only those bodies are read: the Dashboard asks on every refresh), after the version
    `also` (name, version) when it reads them too."""
    scored = _scored(tables)
    heads = [(h.name, h.version) for h in policy_store.policy_heads(store)
             if h.source in scored or h.source == STACKED]
    versions = [also, *(head for head in heads if head != also)] if also else heads
    policies = [get_policy(store, name, version) for name, version in versions]
    return [policy for policy in policies if reads_run(policy, tables)]


def policies_in_use(store: Store, tables: RunTables) -> list[Policy]:
    """The policies a run's watch follows: the pinned version (the default rule) first,
    then the newest version of each other policy, those whose judges scored the run."""
    pin = pinned(store)
    return _reading(store, tables, parse_rule(pin.rule) if pin is not None else None)


def policy_watch_table(store: Store, tables: RunTables, human: Callable[[], RunTables],
                       dataset: str | None) -> Table:
    """The newest version of every stored policy whose judge scored this run (`tables`,
    any truth): its promised risk against the risk observed on labels it was not fitted
    on. `human` gives the run's tables under truth "human", asked for only when some
    policy applies."""
    rows = []
    policies = _reading(store, tables)
    human_tables = human() if policies else tables  # `human` read only when a policy applies
    for policy in policies:
        for row in watch_run(human_tables, policy, dataset):
            status = ("no answer to check" if row.risk is None
                      else "BREACH" if row.breach else "kept")
            rows.append([policy.rule, policy.source, row.labels, fmt(row.samples),
                         fmt(row.answered), fmt(row.deferred), fmt(row.risk, 3),
                         interval_text(row.risk_interval), f"<= {policy.alpha:g}", status])
    note = ("Each stored policy whose judge scored this run: the risk it promised and the "
            "risk observed on labels it was not fitted on, with a 95% interval. BREACH: "
            "even the interval's lower end is above the promise. The random slice was kept "
            "apart from fitting and nobody chose its samples: it is the unbiased check.")
    if not rows:
        note = ("No stored policy reads a judge of this run: fit one with \"python -m "
                "ragshield policy fit NAME --run RUN --judge JUDGE\".")
    return Table("Policies: promised and observed risk",
                 ["policy", "judge", "labels", "samples", "answered", "deferred",
                  "observed risk", "95% interval", "promised", "promise"], rows, note)


def export_policy(store: Store, name: str, version: int | None, path: Path) -> Policy:
    """Write the policy to `path` as JSON, whole or not at all (OutputFileError naming the
    path when it cannot be written)."""
    policy = get_policy(store, name, version)
    text = json.dumps(policy.to_dict(), indent=2) + "\n"
    def write(temporary: Path) -> None:
        temporary.write_text(text, encoding="utf-8")
    write_atomically(path, write)
    return policy


def import_policy(store: Store, path: Path) -> Policy:
    """Read a policy file (policy export) and store it as the next version of its name."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read the policy file ({exc})") from exc
    try:
        body = strict_json.loads(text)
    except ValueError as exc:
        raise PolicyFormatError(f"{path}: not valid JSON ({exc})") from exc
    return save_policy(store, Policy.from_dict(body, str(path)))


def is_policy_rule(rule: str) -> bool:
    """Whether `rule` names a stored policy (policy:NAME[@VERSION])."""
    return parse_rule(rule) is not None
