"""A decision rule as one typed value.

A rule's text (`--rule`, a request's `rule`, a key's, a run's config) names one of four
kinds, and `parse_rule_text` reads it once into that kind:

- `Pooled`: a vote of the judges that reached a decision (`all`, `majority`);
- `JudgeRule`: one judge followed (its name);
- `ShippedRule`: the rule the package ships (`grounded`, ragshield/assets/grounded_rule.json);
- `PolicyRule`: a stored policy (`policy:NAME[@VERSION]`).

The last two name fitted rules, which judging.resolve reads into a `ScoreRule` (the shipped
AnswerRule, a stored Policy), as the settlement does once per ask. A resolved `Rule` decides
one answer from its verdicts (`decide`) and a run's answers at once (`run_codes`, from a
`RunScores`); tests hold the two forms together (tests/test_judging.py,
tests/test_answer_rule.py, tests/test_grounded_default.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Literal, Protocol, Sequence, Union

import numpy as np

from ragshield.config import GROUNDED_JUDGES, GROUNDED_RULE
from ragshield.policies.rules import parse_rule, policy_rule
from ragshield.types import RuleDecision, Verdict

if TYPE_CHECKING:
    import pandas as pd

POOLED_RULES: tuple[Literal["majority"], Literal["all"]] = ("majority", "all")
# A judge's keep on one sample as a small integer, for deciding many samples at once;
# DEFERRED: a policy hands the sample to a person.
KEPT, ABSTAINED, UNDECIDED, NOT_RUN, DEFERRED = 1, 0, -1, -2, -3


class RunScores(Protocol):
    """What deciding a run's answers at once reads, one row per answer
    (services/runs/run_scores.RunView)."""

    @property
    def judges(self) -> tuple[str, ...]: ...

    @property
    def codes(self) -> np.ndarray:
        """Answer x judge keep codes (KEPT, ABSTAINED, UNDECIDED, NOT_RUN), columns `judges`."""
        ...

    def scores(self, judge: str) -> np.ndarray:
        """`judge`'s score of each answer, NaN where it gave none."""
        ...

    def features(self) -> pd.DataFrame:
        """The judges' scores as metrics.stacked.stack_features columns."""
        ...

    @property
    def short(self) -> np.ndarray:
        """Whether each answer is a short answer (judges/short_answer.py)."""
        ...

    @property
    def refusal(self) -> np.ndarray: ...


def keep_counts(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of a sample x judge matrix of keep codes: (how many judges keep, how many
    reached a decision)."""
    return (codes == KEPT).sum(axis=1), np.isin(codes, (KEPT, ABSTAINED)).sum(axis=1)


@dataclass(frozen=True)
class Pooled:
    """Keep when every deciding judge keeps (`all`) or most of them do (`majority`)."""

    how: Literal["majority", "all"]

    @property
    def rule(self) -> str:
        return self.how

    def decide(self, verdicts: Sequence[Verdict]) -> RuleDecision:
        deciding = [v for v in verdicts if v.keep is not None]
        if not deciding:
            return RuleDecision(None, self.rule, "no judge reached a decision")
        keeps = sum(bool(v.keep) for v in deciding)
        keep = keeps == len(deciding) if self.how == "all" else keeps * 2 > len(deciding)
        return RuleDecision(keep, self.rule, f"{keeps} of {len(deciding)} deciding judges keep")

    def run_codes(self, run: RunScores) -> np.ndarray:
        keeps, deciding = keep_counts(run.codes)
        keep = keeps == deciding if self.how == "all" else keeps * 2 > deciding
        return np.where(deciding == 0, UNDECIDED, np.where(keep, KEPT, ABSTAINED))


@dataclass(frozen=True)
class JudgeRule:
    """Keep what one judge keeps."""

    judge: str

    @property
    def rule(self) -> str:
        return self.judge

    def decide(self, verdicts: Sequence[Verdict]) -> RuleDecision:
        chosen = next((v for v in verdicts if v.judge == self.judge), None)
        if chosen is None:
            return RuleDecision(None, self.rule, f"judge '{self.judge}' did not run")
        if chosen.keep is None:
            return RuleDecision(None, self.rule,
                                f"judge '{self.judge}' gave no decision: {chosen.rationale}")
        return RuleDecision(chosen.keep, self.rule, f"{self.judge}: {chosen.rationale}")

    def run_codes(self, run: RunScores) -> np.ndarray:
        if self.judge not in run.judges:
            return np.full(len(run.codes), UNDECIDED)
        column = run.codes[:, list(run.judges).index(self.judge)]
        return np.where(column == NOT_RUN, UNDECIDED, column)


class ScoreRule(Protocol):
    """A fitted rule that decides from its judges' scores (policies/answer_rule.AnswerRule,
    policies/policy.Policy). It withholds a refusal whatever the scores (judging.decide)."""

    @property
    def rule(self) -> str: ...

    @property
    def judges(self) -> list[str]: ...

    def decide(self, verdicts: Sequence[Verdict]) -> RuleDecision: ...

    def run_codes(self, run: RunScores) -> np.ndarray: ...


@dataclass(frozen=True)
class ShippedRule:
    """The rule the package ships, by name: its judges are known before it is read."""

    rule: str = GROUNDED_RULE
    judges: tuple[str, ...] = GROUNDED_JUDGES


@dataclass(frozen=True)
class PolicyRule:
    """A stored policy, by name and version (None: the newest)."""

    name: str
    version: int | None

    @property
    def rule(self) -> str:
        return policy_rule(self.name, self.version)


NamedRule = Union[Pooled, JudgeRule, ShippedRule, PolicyRule]  # what a rule's text says
Rule = Union[Pooled, JudgeRule, ScoreRule]  # a rule that decides
ReadPolicy = Callable[[PolicyRule], ScoreRule]  # a stored policy's reader (judging.resolve)


def parse_rule_text(text: str) -> NamedRule:
    """The rule `text` names (OptionError for a malformed policy rule). Any other text is a
    judge's name: whether that judge exists and is among an ask's judges is checked where
    the rule is chosen (judging.choose_rule)."""
    if text in POOLED_RULES:
        return Pooled("majority" if text == "majority" else "all")
    if text == GROUNDED_RULE:
        return ShippedRule()
    policy = parse_rule(text)
    if policy is not None:
        return PolicyRule(*policy)
    return JudgeRule(text)


def named_judges(named: NamedRule) -> tuple[str, ...]:
    """The judges a rule reads that its name tells: the judge it names, the shipped rule's
    judges; none for a pooled rule (it reads whichever run) or a policy (its record tells)."""
    if isinstance(named, ShippedRule):
        return named.judges
    return (named.judge,) if isinstance(named, JudgeRule) else ()


def is_fitted(rule: Rule) -> bool:
    """Whether `rule` was fitted on labelled answers (it withholds a refusal, as fitted)."""
    return not isinstance(rule, (Pooled, JudgeRule))


def rule_judges(rule: Rule, judges: Sequence[str]) -> set[str]:
    """The judges whose verdicts `rule` reads: its judge, a fitted rule's judges, or every
    one of `judges` for a pooled rule."""
    if isinstance(rule, Pooled):
        return set(judges)
    if isinstance(rule, JudgeRule):
        return {rule.judge}
    return set(rule.judges)
