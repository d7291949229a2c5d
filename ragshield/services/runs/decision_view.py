"""What a person using the shield sees on a run, under the run's decision rule, each judge
alone, and with every answer shown: the share of answers shown, the share of those that are
wrong, and the share of the right answers that got through. The Dashboard opens on it: the
headline cards (with exact 95% intervals and in plain words), the large trade-off picture
and its small multiples, and the table behind them."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ragshield.evaluation import RunTables
from ragshield.decision_rule import KEPT, rule_judges
from ragshield.metrics.curves import aurc, risk_coverage_curve
from ragshield.metrics.decision_view import ShownAnswers, in_plain_words, shown_answers
from ragshield.metrics.labels import awf_truth
from ragshield.metrics.ratio import ratio
from ragshield.policies.risk_control import clopper_pearson
from ragshield.reports.tables import JudgeSeries
from ragshield.reports.tradeoff import JudgeCurve, Tradeoff
from ragshield.services.runs.browse import run_decisions
from ragshield.services.runs.run_scores import RunView
from ragshield.types import Table

KEEP_ALL_ROW = "every answer shown"


@dataclass(frozen=True)
class Share:
    """`count` of `of`, with its exact (Clopper-Pearson) 95% interval; NaN when `of` is 0."""

    count: int
    of: int

    @property
    def value(self) -> float:
        return ratio(self.count, self.of)

    @property
    def interval(self) -> tuple[float, float]:
        return clopper_pearson(self.count, self.of)


@dataclass(frozen=True)
class Headline:
    """The Dashboard's cards: the shield beside showing every answer."""

    rule: str
    questions: int
    shown: Share  # answers shown, of all questions
    wrong_shown: Share  # wrong, of the answers shown
    right_shown: Share  # shown, of the right answers
    all_shown: Share  # showing everything (a refusal is never shown)
    all_wrong: Share  # wrong, of every answer
    words: str  # in_plain_words


@dataclass(frozen=True)
class DecisionPicture:
    table: Table
    headline: Headline
    tradeoff: Tradeoff


def _row(name: str, shown: ShownAnswers) -> list[str]:
    def share(value: float) -> str:
        return "n/a" if np.isnan(value) else f"{value:.0%}"

    return [name, share(shown.shown), share(shown.wrong_shown), share(shown.right_shown)]


def _headline(rule: str, keep: np.ndarray, answers: np.ndarray, good: np.ndarray,
              words: str) -> Headline:
    kept = int(keep.sum())
    return Headline(rule, int(keep.size), Share(kept, int(keep.size)),
                    Share(int((keep & ~good).sum()), kept),
                    Share(int((keep & good).sum()), int(good.sum())),
                    Share(int(answers.sum()), int(answers.size)),
                    Share(int((answers & ~good).sum()), int(answers.sum())), words)


def _judge_curve(judge: str, series: JudgeSeries, answers: np.ndarray,
                 good: np.ndarray) -> JudgeCurve:
    """The judge's sweep over the answers it decided; a refusal is never shown, and an
    answer it did not decide is not shown at any threshold."""
    shown = answers[series.rows]
    rows, total = series.rows[shown], answers.size
    keep = series.keep[shown]
    point = (ratio(keep.sum(), total), ratio((keep & ~good[rows]).sum(), keep.sum()))
    if not series.scored or rows.size == 0:
        return JudgeCurve(judge, np.array([point[0]]), np.array([point[1]]), point, math.nan)
    curve = risk_coverage_curve(series.score[shown], good[rows])
    return JudgeCurve(judge, curve.coverage * rows.size / total, curve.risk, point, aurc(curve))


def decision_picture(tables: RunTables, series: dict[str, JudgeSeries]) -> DecisionPicture:
    """The decision view of the run's samples under the tables' truth (a good answer is
    right and supported): its table, headline and trade-off."""
    samples = tables.samples
    good = awf_truth(samples["answer_correct"].to_numpy(dtype=bool),
                     samples["passages_support"].to_numpy(dtype=bool))
    view = RunView(tables)
    judges, codes = view.judges, view.codes
    rule = str(tables.config.get("rule") or "")
    answers: np.ndarray = ~samples["refusal"].to_numpy(dtype=bool)  # a refusal shows none
    keep: np.ndarray = (run_decisions(view) == KEPT) & answers
    shield, keep_all = shown_answers(keep, good), shown_answers(answers, good)
    rows = [_row(f"the run's rule: {rule}", shield), _row(KEEP_ALL_ROW, keep_all)]
    rows += [_row(judge, shown_answers((codes[:, index] == KEPT) & answers, good))
             for index, judge in enumerate(judges)]
    headline = _headline(rule, keep, answers, good, in_plain_words(shield, keep_all))
    note = (f"{headline.words[0].upper()}{headline.words[1:]} (the run's rule, {rule}). A "
            "wrong answer is one that is not right or not supported by its passages; a "
            "withheld, undecided or deferred answer is not shown, nor is a refusal (\"I don't "
            "know\" is no answer).")
    table = Table("What people see", ["decided by", "answers shown", "wrong among shown",
                                      "right answers shown"], rows, note)
    curves = sorted((_judge_curve(judge, s, answers, good) for judge, s in series.items()),
                    key=lambda c: (math.isnan(c.area), c.area))
    reads = rule_judges(view.rule, judges) if rule else set()
    tradeoff = Tradeoff(rule, (shield.shown, shield.wrong_shown),
                        (keep_all.shown, keep_all.wrong_shown), curves,
                        tuple(j for j in judges if j in reads))
    return DecisionPicture(table, headline, tradeoff)
