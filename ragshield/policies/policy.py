"""A fitted policy: one judge's score, two thresholds and the promise they were fitted to
keep (ragshield.policies.risk_control), with what they were fitted on. It decides like a
rule (`--rule policy:NAME`): answer, withhold, or defer to a person.

Its JSON form is what `policy export` writes, `policy import` reads and a run's config
keeps, so a run decides the same way after the policy is refitted. JSON from a file is
untrusted: `Policy.from_dict` checks every field and names the one at fault."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Mapping, Sequence, overload

import numpy as np
from numpy.typing import ArrayLike
from ragshield.errors import UserError
from ragshield.judges.judge_readers import SELF
from ragshield.decision_rule import ABSTAINED, DEFERRED, KEPT, Rule, RunScores
from ragshield.judging import rule_of
from ragshield.policies.risk_control import clopper_pearson
from ragshield.policies.rules import policy_rule
from ragshield.policies.stacked_score import STACKED, StackedScore, read_stacked
from ragshield.types import RuleDecision, Verdict

FORMAT = "ragshield-policy/1"
ANSWER, WITHHOLD, DEFER = "answer", "withhold", "defer"


class PolicyFormatError(UserError, ValueError):
    """A policy file or record that is not a valid policy; the message names the field."""


def check_name(name: str, where: str) -> str:
    """A policy name: 1-100 printable characters without '@' (it ends a rule's name)."""
    if not name or len(name) > 100 or "@" in name or not name.isprintable():
        raise PolicyFormatError(f"{where}: 1-100 printable characters without '@', "
                                f"got {name!r:.60}")
    return name


def outcome(score: float | None, answer_at: float, withhold_below: float | None) -> str:
    """answer (score >= answer_at), withhold (score < withhold_below) or defer (between,
    or no score)."""
    if score is None or math.isnan(score):
        return DEFER
    if score >= answer_at:
        return ANSWER
    if withhold_below is not None and score < withhold_below:
        return WITHHOLD
    return DEFER


def outcome_codes(scores: ArrayLike, answer_at: float,
                  withhold_below: float | None) -> np.ndarray:
    """`outcome` of many scores at once, as KEPT / ABSTAINED / DEFERRED."""
    scores = np.asarray(scores, dtype=float)
    answered = scores >= answer_at  # NaN compares False: deferred
    withheld = ~answered & (scores < withhold_below if withhold_below is not None else False)
    return np.where(answered, KEPT, np.where(withheld, ABSTAINED, DEFERRED))


@dataclass(frozen=True)
class Calibration:
    """What the policy did on its own calibration labels (intervals: 95% Clopper-Pearson)."""

    labels: int  # labelled samples with a score
    answered: int
    withheld: int
    deferred: int  # in the band, plus samples without a score
    bad_answered: int
    good_withheld: int
    risk: float | None  # bad among answered
    risk_interval: tuple[float, float] | None
    withheld_good: float | None  # good among withheld
    withheld_good_interval: tuple[float, float] | None

    @property
    def coverage(self) -> float:
        return self.answered / self.labels if self.labels else math.nan

    @property
    def deferral(self) -> float:
        return self.deferred / self.labels if self.labels else math.nan


def _rate(part: int, whole: int) -> tuple[float | None, tuple[float, float] | None]:
    return (part / whole, clopper_pearson(part, whole)) if whole else (None, None)


def calibration_of(answer_at: float, withhold_below: float | None, scores: np.ndarray,
                   good: np.ndarray) -> Calibration:
    """What these thresholds do on labelled samples: counts, and the answered risk and the
    good share among the withheld, with 95% intervals."""
    codes = outcome_codes(scores, answer_at, withhold_below)
    answered, withheld = codes == KEPT, codes == ABSTAINED
    bad_answered = int(np.count_nonzero(answered & ~good))
    good_withheld = int(np.count_nonzero(withheld & good))
    risk, risk_interval = _rate(bad_answered, int(answered.sum()))
    share, share_interval = _rate(good_withheld, int(withheld.sum()))
    return Calibration(labels=len(scores), answered=int(answered.sum()),
                       withheld=int(withheld.sum()), deferred=int((~answered & ~withheld).sum()),
                       bad_answered=bad_answered, good_withheld=good_withheld, risk=risk,
                       risk_interval=risk_interval, withheld_good=share,
                       withheld_good_interval=share_interval)


@dataclass(frozen=True)
class FittedOn:
    run_id: int | None
    dataset: str | None
    truth: str  # "human": human labels first, then the dataset's flags
    human_labels: int  # calibration samples whose truth came from people
    automatic_labels: int  # ... from the dataset's reference answers and flags
    unscored: int  # labelled samples the judge gave no score (left out)
    fingerprint: str  # sha256 over the (sample id, good) pairs, sorted
    sample_ids: tuple[str, ...]  # the calibration samples, left out when watching
    # Of the automatic ones, those counted by the `answerable: false` flag alone (0 in
    # policies fitted before such samples counted).
    unanswerable_flags: int = 0


@dataclass(frozen=True)
class Policy:
    name: str
    source: str  # the judge whose score it reads
    answer_at: float  # answer when score >= answer_at
    withhold_below: float | None  # withhold when score < it; None: never withhold
    alpha: float  # promised: risk of the answered set <= alpha ...
    delta: float  # ... with probability >= 1 - delta over the calibration data
    beta: float | None  # and (when set) good answers among the withheld <= beta
    calibration: Calibration
    fitted_on: FittedOn
    code_version: str
    created_at: str  # ISO 8601, UTC
    holdout: float = 0.0  # share of samples kept apart for watching (never fitted on)
    version: int | None = None  # given by the store
    tested: int = 0  # thresholds tested for answer_at (up to the first that failed)
    notes: list[str] = field(default_factory=list)
    stacker: StackedScore | None = None  # the model behind source "stacked"
    # The model each of its judges read from in the run it was fitted on (judge_readers.py);
    # empty in policies fitted before readers were recorded.
    read_by: dict[str, str] = field(default_factory=dict)

    @property
    def judges(self) -> list[str]:
        """The judges whose verdicts it reads."""
        return self.stacker.judges if self.stacker is not None else [self.source]

    @property
    def reads_from(self) -> dict[str, str]:
        """The model each of its judges must read from for its thresholds to mean what was
        fitted: `read_by`, else (fitted before readers were recorded, when every judge read
        from the answering model unless a judge model was named) the answering model."""
        return dict(self.read_by) or {judge: SELF for judge in self.judges}

    @property
    def rule(self) -> str:
        """How runs name it: policy:NAME@VERSION (policy:NAME before it is stored)."""
        return policy_rule(self.name, self.version)

    def promise(self) -> str:
        """The guarantee in one sentence."""
        n = self.calibration.labels
        text = (f"With probability at least {1 - self.delta:.0%} over its {n} calibration "
                f"labels, at most {self.alpha:.0%} of the answers it shows are wrong or "
                "unsupported")
        if self.beta is not None:
            text += f", and at most {self.beta:.0%} of those it withholds were good"
        return text + "."

    def readers_words(self) -> str:
        """Who reads its judges, in words."""
        return ("; ".join(f"{judge} by {model}" for judge, model in self.read_by.items())
                or "not recorded (fitted before readers were recorded): its judges read from "
                   "the answering model")

    def outcome(self, score: float | None) -> str:
        return outcome(score, self.answer_at, self.withhold_below)

    def score_of(self, verdicts: Sequence[Verdict]) -> tuple[float | None, str | None]:
        """The score it decides one sample by, or None and why there is none."""
        if self.stacker is not None:
            score = self.stacker.score_verdicts(verdicts)
            return score, None if score is not None else "none of its judges ran"
        verdict = next((v for v in verdicts if v.judge == self.source), None)
        if verdict is None or verdict.score is None:
            return None, f"judge '{self.source}' " + ("did not run" if verdict is None
                                                       else "gave no score")
        return verdict.score, None

    def decide(self, verdicts: Sequence[Verdict]) -> RuleDecision:
        """The decision on one sample from its source judge's verdict (or the stacked
        score of its judges' verdicts)."""
        score, missing = self.score_of(verdicts)
        if score is None:
            return RuleDecision(None, self.rule, f"{missing}: ask a person", deferred=True)
        outcome = self.outcome(score)
        shown = f"{self.source} score {score:.3g}"
        if outcome == ANSWER:
            return RuleDecision(True, self.rule, f"{shown} >= {self.answer_at:.3g}: answer")
        if outcome == WITHHOLD:
            return RuleDecision(False, self.rule, f"{shown} < {self.withhold_below:.3g}: withhold")
        return RuleDecision(None, self.rule, f"{shown} lies between the withhold and answer "
                                         "thresholds: ask a person", deferred=True)

    def decision_codes(self, scores: ArrayLike) -> np.ndarray:
        return outcome_codes(scores, self.answer_at, self.withhold_below)

    def run_scores(self, run: RunScores) -> np.ndarray:
        """The score it decides each answer of a run by: -inf for a refusal, which shows no
        answer and so is withheld, as the policy was fitted (judging.decide at ask time)."""
        scores = (self.stacker.score_frame(run.features()) if self.stacker is not None
                  else run.scores(self.source))
        return np.where(run.refusal, -np.inf, scores)

    def run_codes(self, run: RunScores) -> np.ndarray:
        return self.decision_codes(self.run_scores(run))

    def to_dict(self, with_samples: bool = True) -> dict[str, Any]:
        """The JSON form; without the calibration sample ids for a run's snapshot (they
        only serve watching, which reads the stored policy)."""
        body = asdict(self)
        body["fitted_on"]["sample_ids"] = list(self.fitted_on.sample_ids) if with_samples else []
        return {"format": FORMAT, **body}

    @classmethod
    def from_dict(cls, body: Any, where: str = "policy") -> Policy:
        """A policy from its JSON form; PolicyFormatError naming the bad field."""
        return _read_policy(body, where)


def config_rule(config: Mapping[str, Any]) -> Rule:
    """The rule a stored run decides by: the policy snapshot its config keeps, else its
    `rule` parsed and resolved (a rule naming no judge the run has decides nothing); an
    OptionError for a policy rule without its snapshot (every writer keeps one)."""
    body = config.get("policy")
    if body:
        return Policy.from_dict(body, "run config policy")
    return rule_of(str(config.get("rule", "")))


def rule_fields(rule: Rule) -> dict[str, Any]:
    """The `rule` and `policy` fields of a run config that decides by `rule`."""
    if isinstance(rule, Policy):
        return {"rule": rule.rule, "policy": rule.to_dict(with_samples=False)}
    return {"rule": rule.rule, "policy": None}


# ---------------------------------------------------------------------------- reading JSON

def _field(body: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str,
           optional: bool = False) -> Any:
    value = body.get(key)
    if value is None and optional:
        return None
    if isinstance(value, bool) and kind is not bool or not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise PolicyFormatError(f"{where}.{key}: expected {names}, got {value!r:.60}")
    return value


@overload
def _number(body: Mapping[str, Any], key: str, where: str, optional: Literal[False] = False,
            low: float = ..., high: float = ...) -> float: ...
@overload
def _number(body: Mapping[str, Any], key: str, where: str, optional: bool,
            low: float = ..., high: float = ...) -> float | None: ...


def _number(body: Mapping[str, Any], key: str, where: str, optional: bool = False,
            low: float = -math.inf, high: float = math.inf) -> float | None:
    value = _field(body, key, (int, float), where, optional)
    if value is None:
        return None
    if not low <= value <= high or math.isnan(value):
        raise PolicyFormatError(f"{where}.{key}: {value} is outside [{low}, {high}]")
    return float(value)


@overload
def _whole(body: Mapping[str, Any], key: str, where: str,
           optional: Literal[False] = False) -> int: ...
@overload
def _whole(body: Mapping[str, Any], key: str, where: str, optional: bool) -> int | None: ...


def _whole(body: Mapping[str, Any], key: str, where: str, optional: bool = False) -> int | None:
    value = _field(body, key, int, where, optional)
    if value is not None and value < 0:
        raise PolicyFormatError(f"{where}.{key}: must not be negative, got {value}")
    return value


def _interval(body: Mapping[str, Any], key: str, where: str) -> tuple[float, float] | None:
    value = _field(body, key, (list, tuple), where, optional=True)
    if value is None:
        return None
    if len(value) != 2 or not all(isinstance(v, (int, float)) for v in value):
        raise PolicyFormatError(f"{where}.{key}: expected two numbers, got {value!r:.60}")
    return float(value[0]), float(value[1])


def _read_calibration(body: Any, where: str) -> Calibration:
    body = _field({"calibration": body}, "calibration", dict, where)
    where = f"{where}.calibration"
    counts = {key: _whole(body, key, where) for key in
              ("labels", "answered", "withheld", "deferred", "bad_answered", "good_withheld")}
    return Calibration(**counts, risk=_number(body, "risk", where, True, 0, 1),
                       risk_interval=_interval(body, "risk_interval", where),
                       withheld_good=_number(body, "withheld_good", where, True, 0, 1),
                       withheld_good_interval=_interval(body, "withheld_good_interval", where))


def _read_fitted_on(body: Any, where: str) -> FittedOn:
    body = _field({"fitted_on": body}, "fitted_on", dict, where)
    where = f"{where}.fitted_on"
    ids = _field(body, "sample_ids", list, where)
    if not all(isinstance(i, str) for i in ids):
        raise PolicyFormatError(f"{where}.sample_ids: expected a list of strings")
    return FittedOn(run_id=_whole(body, "run_id", where, True),
                    dataset=_field(body, "dataset", str, where, True),
                    truth=_field(body, "truth", str, where),
                    human_labels=_whole(body, "human_labels", where),
                    automatic_labels=_whole(body, "automatic_labels", where),
                    unscored=_whole(body, "unscored", where),
                    fingerprint=_field(body, "fingerprint", str, where),
                    sample_ids=tuple(ids),
                    unanswerable_flags=_whole(body, "unanswerable_flags", where, True) or 0)


def _read_stacker(body: Any, where: str) -> StackedScore | None:
    if body is None:
        return None
    try:
        return read_stacked(body, where)
    except ValueError as exc:
        raise PolicyFormatError(str(exc)) from exc


def _read_by(body: Mapping[str, Any], where: str) -> dict[str, str]:
    found = _field(body, "read_by", dict, where, optional=True) or {}
    if not all(isinstance(k, str) and isinstance(v, str) and v for k, v in found.items()):
        raise PolicyFormatError(f"{where}.read_by: expected judge names mapped to model names")
    return dict(found)


def _read_policy(body: Any, where: str) -> Policy:
    if not isinstance(body, dict):
        raise PolicyFormatError(f"{where}: expected a JSON object, got {type(body).__name__}")
    if body.get("format") != FORMAT:
        raise PolicyFormatError(f"{where}.format: expected {FORMAT!r}, got "
                                f"{body.get('format')!r:.60}")
    policy = Policy(
        name=check_name(_field(body, "name", str, where), f"{where}.name"),
        source=_field(body, "source", str, where),
        answer_at=_number(body, "answer_at", where),
        withhold_below=_number(body, "withhold_below", where, optional=True),
        alpha=_number(body, "alpha", where, low=0, high=1),
        delta=_number(body, "delta", where, low=0, high=1),
        beta=_number(body, "beta", where, optional=True, low=0, high=1),
        calibration=_read_calibration(body.get("calibration"), where),
        fitted_on=_read_fitted_on(body.get("fitted_on"), where),
        code_version=_field(body, "code_version", str, where),
        created_at=_field(body, "created_at", str, where),
        holdout=_number(body, "holdout", where, optional=True, low=0, high=1) or 0.0,
        version=_whole(body, "version", where, optional=True),
        tested=_whole(body, "tested", where, optional=True) or 0,
        notes=[str(n) for n in _field(body, "notes", list, where, optional=True) or []],
        stacker=_read_stacker(body.get("stacker"), f"{where}.stacker"),
        read_by=_read_by(body, where),
    )
    if (policy.source == STACKED) != (policy.stacker is not None):
        raise PolicyFormatError(f"{where}.stacker: a policy on source {STACKED!r} needs its "
                                "model, and only it has one")
    if policy.read_by and set(policy.read_by) != set(policy.judges):
        raise PolicyFormatError(f"{where}.read_by: names {', '.join(sorted(policy.read_by))}, "
                                f"but the policy reads {', '.join(policy.judges)}")
    if policy.withhold_below is not None and policy.withhold_below > policy.answer_at:
        raise PolicyFormatError(f"{where}.withhold_below: {policy.withhold_below} is above "
                                f"answer_at {policy.answer_at}")
    return policy
