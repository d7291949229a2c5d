"""The report's tables, computed from a run's tables and per-judge metrics. Each table is
plain cells (strings), so Markdown and HTML render the same content."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ragshield.evaluation import RunTables
from ragshield.judges.judge_readers import JudgeReaders
from ragshield.metrics.crag import crag_breakdown, crag_grades, crag_scores
from ragshield.metrics.curves import (accuracy_at_rate, fallback_curve, random_switch_accuracy,
                                      switch_curve)
from ragshield.metrics.thresholds import cv_threshold, risk_controlled_threshold
from ragshield.types import Table

SWITCH_RATE = 0.2


@dataclass(frozen=True)
class SampleLinks:
    """A table cell listing samples of a run: "3: s1, s4, s7" as text, and in a page each id
    a link that opens its case study in Browse (`?run=R&sample=ID`). At most `shown` ids
    are listed, then how many more."""

    run_id: int | None  # None: text only (no run to open them in)
    ids: tuple[str, ...]
    shown: int = 20

    def __str__(self) -> str:
        if not self.ids:
            return "0"
        more = f", +{len(self.ids) - self.shown} more" if len(self.ids) > self.shown else ""
        return f"{len(self.ids)}: {', '.join(self.ids[:self.shown])}{more}"


@dataclass
class JudgeSeries:
    """One judge's per-sample values aligned with the run's samples table."""

    keep: np.ndarray  # bool; unavailable samples are dropped from every series
    score: np.ndarray  # the judge's score, or its keep bit (0/1) for a hard judge
    rows: np.ndarray  # positions in the samples table
    scored: bool = False


def fmt(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "n/a"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return f"{value:.{digits}f}"
    return str(value)


def with_ci(metrics: dict[str, Any], name: str) -> str:
    interval = metrics.get("ci", {}).get(name)
    text = fmt(metrics.get(name))
    if interval and text != "n/a":
        text += f" [{fmt(interval[0], 2)}, {fmt(interval[1], 2)}]"
    return text


def judge_series(tables: RunTables) -> dict[str, JudgeSeries]:
    """Each judge's decided verdicts, for curves and per-judge tables. A judge unavailable
    on every sample (e.g. nli without a model) has no series: nothing to draw or sweep; the
    metric tables, made from judge_metrics, still list it with n = 0."""
    position = {sample_id: i for i, sample_id in enumerate(tables.samples["sample_id"])}
    series = {}
    for judge, rows in tables.verdicts.groupby("judge", sort=False):
        rows = rows[rows["keep"].notna()]
        if rows.empty:
            continue
        keep = rows["keep"].to_numpy(dtype=bool)
        score = rows["score"].to_numpy(dtype=float)
        scored = bool(len(score)) and not np.isnan(score).all()
        series[str(judge)] = JudgeSeries(
            keep=keep, score=score if scored else keep.astype(float),
            rows=rows["sample_id"].map(position).to_numpy(dtype=int), scored=scored)
    return series


def risk_table(metrics: dict[str, dict[str, Any]]) -> Table:
    rows = [[judge, fmt(m["n"]), *(fmt(m["counts"][f]) for f in ("AK", "AD", "UK", "UD")),
             with_ci(m, "risk"), with_ci(m, "carefulness"), with_ci(m, "alignment"),
             with_ci(m, "coverage")] for judge, m in metrics.items()]
    return Table("Risk control (RC-RAG)",
                 ["judge", "n", "AK", "AD", "UK", "UD", "risk ↓", "carefulness ↑",
                  "alignment ↑", "coverage ↑"], rows,
                 "Answerable = the answer is correct (label J). UK, a wrong answer kept, is the "
                 "risk. Brackets: 95% bootstrap intervals.")


def quality_table(metrics: dict[str, dict[str, Any]]) -> Table:
    rows = [[judge, with_ci(m, "precision"), with_ci(m, "recall"), with_ci(m, "f1"),
             fmt(m["max_f1"]), fmt(m["max_f1_threshold"]), fmt(m["pr_auc"]),
             fmt(m["qpp_precision"]), fmt(m["qpp_recall"]), fmt(m["qpp_pr_auc"]),
             fmt(m["aurc"])]
            for judge, m in metrics.items()]
    return Table("Answer with faithfulness (AwF)",
                 ["judge", "precision", "recall", "F1", "max F1", "at threshold", "PR-AUC",
                  "QPP precision", "QPP recall", "QPP PR-AUC", "AURC ↓"], rows,
                 "Truth V = the answer is correct and the passages support a reference; recall "
                 "is over the questions whose passages support an answer (F-Answerable). "
                 "QPP: the same against 'the passages support an answer' alone. Hard judges: "
                 "max F1 = F1 and PR-AUC = precision x recall.")


def _crag_row(name: str, grades: np.ndarray) -> list[str]:
    scores = crag_scores(grades)
    return [name, fmt(scores["n"]), *(fmt(scores[k]) for k in
                                      ("accuracy", "hallucination", "missing", "score"))]


def crag_tables(tables: RunTables, series: dict[str, JudgeSeries]) -> list[Table]:
    samples = tables.samples
    grades = crag_grades(samples["answer"], samples["references"])
    rows = [_crag_row("answer as generated", grades)]
    for judge, s in series.items():
        # A sample the judge did not decide shows no answer: missing (0), on every sample.
        judged = np.zeros_like(grades)
        judged[s.rows] = np.where(s.keep, grades[s.rows], 0)
        rows.append(_crag_row(f"with {judge}", judged))
    result = [Table("CRAG scoring", ["system", "n", "accuracy", "hallucination", "missing",
                                     "score"], rows,
                    "+1 correct, 0 missing (a refusal, or an answer the judge withheld), "
                    "-1 hallucination; score = accuracy - hallucination. Answers truncated to "
                    "75 tokens.")]
    for column, breakdown in crag_breakdown(samples.assign(grade=grades)).items():
        result.append(Table(
            f"CRAG by {column.replace('_', ' ')} (answer as generated)",
            [column, "n", "accuracy", "hallucination", "missing", "score"],
            [[fmt(group), *(fmt(v) for v in values)] for group, values
             in zip(breakdown.index, breakdown.itertuples(index=False))]))
    return result


def _column(samples: pd.DataFrame, name: str, rows: np.ndarray) -> np.ndarray:
    return samples[name].to_numpy(dtype=bool)[rows]


def fallback_table(tables: RunTables, series: dict[str, JudgeSeries]) -> Table | None:
    samples = tables.samples
    if "norag_correct" not in samples.columns:
        return None
    rows = []
    for judge, s in series.items():
        rag, norag = (_column(samples, "answer_correct", s.rows),
                      _column(samples, "norag_correct", s.rows))
        curve = fallback_curve(s.score, rag, norag)
        best = int(np.nanargmax(curve.accuracy)) if curve.accuracy.size else None
        replaced = ~s.keep
        rows.append([judge, fmt(rag.mean() if rag.size else None),
                     fmt(np.where(s.keep, rag, norag).mean() if rag.size else None),
                     fmt(replaced.mean() if rag.size else None),
                     fmt(rag[replaced].mean() if replaced.any() else None),
                     fmt(norag[replaced].mean() if replaced.any() else None),
                     "n/a" if best is None
                     else f"{fmt(curve.accuracy[best])} at {fmt(curve.rate[best], 2)}"])
    return Table("No-RAG fallback", ["judge", "accuracy (RAG only)", "with fallback",
                                     "fallback rate", "replaced: RAG acc.",
                                     "replaced: No-RAG acc.", "best accuracy at rate"], rows,
                 "Answers the judge withholds are replaced by the model's answer without "
                 "passages.")


def switch_table(tables: RunTables, series: dict[str, JudgeSeries]) -> Table | None:
    samples = tables.samples
    if "larger_correct" not in samples.columns:
        return None
    rows = []
    for judge, s in series.items():
        small, large = (_column(samples, "answer_correct", s.rows),
                        _column(samples, "larger_correct", s.rows))
        curve = switch_curve(s.score, small, large)
        baseline = random_switch_accuracy([SWITCH_RATE], small, large)[0]
        rows.append([judge, fmt(small.mean() if small.size else None),
                     fmt(large.mean() if large.size else None),
                     fmt(accuracy_at_rate(curve.rate, curve.accuracy, SWITCH_RATE)),
                     fmt(baseline)])
    return Table("Switch to a larger model", ["judge", "small model accuracy",
                                              "larger model accuracy",
                                              f"accuracy at {SWITCH_RATE:.0%} switched",
                                              "random switching"], rows,
                 "Answers the judge trusts least are replaced by the larger model's answer.")


def overview_table(tables: RunTables) -> Table:
    samples = tables.samples
    config = tables.config
    n = len(samples)
    rows = [
        ["run", str(tables.run_id)], ["dataset", fmt(config.get("dataset"))],
        ["answerer", fmt(config.get("answerer"))], ["passages", fmt(config.get("retrieval"))],
        ["backend", fmt(config.get("backend"))],
        ["judges read by", JudgeReaders(every=config.get("judge_model"),
                                        by_judge=config.get("judge_readers") or {}).describe()],
        ["ground truth", tables.truth],
        ["samples", str(n)],
        ["answers correct", fmt(samples["answer_correct"].mean() if n else None)],
        ["passages support an answer", fmt(samples["passages_support"].mean() if n else None)],
        ["samples with a human label", str(int(samples["human_label"].notna().sum()) if n else 0)],
    ]
    return Table("Run", ["", ""], rows)


def _fitted_thresholds(thresholds: np.ndarray) -> str:
    """The folds' thresholds as mean ± spread (ddof 1, as the accuracy's), with the folds
    whose best choice was to keep nothing (an infinite threshold) counted apart."""
    fitted = thresholds[np.isfinite(thresholds)]
    nothing = int(np.count_nonzero(np.isposinf(thresholds)))
    if not fitted.size:
        return "keep nothing" if nothing else "n/a"
    spread = float(fitted.std(ddof=1)) if fitted.size > 1 else float("nan")
    text = f"{fmt(float(fitted.mean()))} ± {fmt(spread, 2)}"
    return text + (f" ({nothing} of {thresholds.size} folds: keep nothing)" if nothing else "")


def threshold_table(tables: RunTables, series: dict[str, JudgeSeries], *, alpha: float = 0.2,
                    delta: float = 0.1) -> Table:
    """For each scored judge: the 5-fold cross-validated threshold (fitted for accuracy on
    four folds, evaluated on the fifth) and the risk-controlled threshold at target alpha."""
    correct = tables.samples["answer_correct"].to_numpy(dtype=bool)
    rows = []
    for judge, s in series.items():
        if not s.scored:
            continue
        judge_correct = correct[s.rows]
        cv_text = ("n/a", "n/a")
        if s.score.size >= 5:
            cv = cv_threshold(s.score, judge_correct, objective="accuracy")
            cv_text = (_fitted_thresholds(cv.thresholds), f"{fmt(cv.mean)} ± {fmt(cv.std, 2)}")
        controlled = risk_controlled_threshold(s.score, judge_correct, alpha=alpha, delta=delta)
        rows.append([judge, *cv_text, fmt(controlled.threshold), fmt(controlled.coverage),
                     fmt(controlled.risk), fmt(controlled.upper_bound)])
    return Table("Thresholds", ["judge", "CV threshold", "CV accuracy",
                                f"threshold for risk ≤ {alpha}",
                                "coverage", "risk", "upper bound"], rows,
                 f"CV: 5 folds, threshold fitted for accuracy on four, accuracy on the fifth "
                 f"(mean ± spread). Risk-controlled: the loosest threshold a fixed-sequence test "
                 f"certifies, its Clopper-Pearson upper bound on risk at confidence "
                 f"{1 - delta:.0%} ≤ {alpha}, corrected for the search over thresholds (n/a: "
                 f"none is on this run). It is a report on the run's own labels; a policy "
                 f"makes the promise on labels it was not fitted on.")


def grader_table(tables: RunTables) -> Table | None:
    """Rules vs the LLM grader on the main answers (docs/METHODS.md 2); None without a grader."""
    agreement = tables.grader_agreement
    if agreement is None:
        return None
    samples, counts = tables.samples, agreement["counts"]
    n = len(samples)
    rows = [
        ["answers graded (refusals excluded, unreadable grades dropped)", fmt(agreement["n"])],
        ["agreement", fmt(agreement["agreement"])], ["Cohen's kappa", fmt(agreement["kappa"])],
        ["both say correct", fmt(counts["rule_and_llm"])],
        ["only the rules say correct", fmt(counts["rule_only"])],
        ["only the LLM says correct", fmt(counts["llm_only"])],
        ["both say not correct", fmt(counts["neither"])],
        ["answers correct by the rules", fmt(samples["rule_correct"].mean() if n else None)],
        ["answers correct by rules or LLM", fmt(samples["auto_correct"].mean() if n else None)],
    ]
    return Table("Correctness: rules vs LLM grader", ["", ""], rows,
                 "An answer is correct if the rules match or the LLM grader says it means the "
                 "same as a reference; human answer labels still win under human truth.")
