"""From a stored run to the tables the metric functions take (one row per sample, and one
row per sample x judge), with the ground truth chosen by the caller.

Truth "auto" is automatic only: the answer matcher for correctness and, for "passages
support an answer", the dataset's flag then a reference found in a passage. Truth "human"
lets human labels win where a sample has them (METHODS 3: the annotators' majority; ties
count as unlabelled) and falls back to the automatic labels elsewhere.

With an LLM grader (METHODS 2) every non-refusal answer is also graded by the model and an
answer is correct when the rules match OR the grader says accurate; the samples table keeps
both (`rule_correct`, `llm_correct`; `auto_correct` is their combination) and the tables
carry the agreement of rules and grader on the main answers. The grader lives here, outside
ragshield.metrics, whose functions stay pure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd

from ragshield.grading import LLMGrader, rule_llm_agreement
from ragshield.judges.dual_generation import DualGenerationJudge, percentile_scores
from ragshield.metrics.correctness import is_correct
from ragshield.metrics.labels import (majority_flag, majority_label, passages_support,
                                      reference_in_passages)
from ragshield.store.database import Store
from ragshield.store.labels import CurrentLabel, current_labels
from ragshield.store.runs import MAIN, answer_records, get_run, verdict_records

Truth = Literal["auto", "human"]
TRUTHS: tuple[str, ...] = ("auto", "human")
BREAKDOWN_FIELDS = ("domain", "question_type", "static_or_dynamic")


@dataclass
class RunTables:
    run_id: int
    truth: str
    config: dict[str, Any]
    samples: pd.DataFrame  # one row per sample (main answer), in sample order
    verdicts: pd.DataFrame  # sample_id, judge, keep, score, answer_correct, passages_support
    grader_agreement: dict[str, Any] | None = None  # rule_llm_agreement(); None without grader


def _grades(answer: dict[str, Any], refs: list[str],
            grader: LLMGrader | None) -> tuple[bool, bool | None]:
    """(rules say correct, grader says accurate); the grader's value is None without a
    grader or when its reply could not be read, and False for a refusal (no call)."""
    rule = not answer["refusal"] and is_correct(answer["text"] or "", refs)
    if grader is None:
        return rule, None
    if answer["refusal"]:
        return rule, False
    return rule, grader.grade(answer["question"], answer["text"] or "", refs).accurate


def _sample_row(answer: dict[str, Any], others: dict[str, dict[str, Any]],
                labels: list[CurrentLabel], truth: str,
                grader: LLMGrader | None = None) -> dict[str, Any]:
    refs = [str(r) for r in answer["reference_answers"]]
    rule_correct, llm_correct = _grades(answer, refs, grader)
    auto_correct = rule_correct or bool(llm_correct)
    found = reference_in_passages(refs, [p["text"] for p in answer["passages"]])
    human_label = majority_label([label.label for label in labels])
    human_correct = majority_flag([label.answer_correct for label in labels])
    use_human = truth == "human"
    meta = answer["meta"] or {}
    row = {
        "sample_id": answer["external_id"], "question": answer["question"],
        "answer": answer["text"], "refusal": answer["refusal"], "references": refs,
        "rule_correct": rule_correct, "llm_correct": llm_correct, "auto_correct": auto_correct,
        "answer_correct": human_correct if use_human and human_correct is not None else auto_correct,
        "passages_support": passages_support(human_label if use_human else None,
                                             answer["answerable"], found),
        "human_label": human_label, "human_answer_correct": human_correct,
        "annotators": len(labels),
    }
    for role, other in others.items():
        row[f"{role}_answer"] = other["text"]
        other_rule, other_llm = _grades(other, refs, grader)
        row[f"{role}_correct"] = other_rule or bool(other_llm)
        row[f"{role}_llm_correct"] = other_llm
    for name in BREAKDOWN_FIELDS:
        if name in meta:
            row[name] = meta[name]
    return row


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def _dual_generation_percentiles(verdicts: pd.DataFrame) -> pd.DataFrame:
    """METHODS 4.11: the judge's score is a difference of percentile ranks over the run's
    samples, which only the run knows; unscored samples keep a null score."""
    rows = verdicts.index[verdicts["judge"] == DualGenerationJudge.name]
    verdicts.loc[rows, "score"] = float("nan")
    means = {i: ((d or {}).get("rag_mean_logprob"), (d or {}).get("norag_mean_logprob"))
             for i, d in zip(rows, verdicts.loc[rows, "details"])}
    scored = [i for i, (rag, norag) in means.items() if _finite(rag) and _finite(norag)]
    if scored:
        verdicts.loc[scored, "score"] = percentile_scores([means[i][0] for i in scored],
                                                          [means[i][1] for i in scored])
    return verdicts


def run_tables(store: Store, run_id: int, truth: str = "auto",
               grader: LLMGrader | None = None) -> RunTables:
    """The run's samples and verdicts tables under the chosen truth; with a grader, answers
    are also graded by the LLM (slow without the call cache: one call per answer)."""
    if truth not in TRUTHS:
        raise ValueError(f"truth must be one of {', '.join(TRUTHS)}, got {truth!r}")
    run = get_run(store, run_id)
    labels = current_labels(store, run.dataset_id) if run.dataset_id is not None else {}
    by_sample: dict[int, dict[str, dict[str, Any]]] = {}
    for answer in answer_records(store, run_id):
        by_sample.setdefault(answer["sample_id"], {})[answer["role"]] = answer
    rows, external = [], {}
    for sample_row_id, roles in by_sample.items():
        if MAIN not in roles:
            continue
        main = roles.pop(MAIN)
        external[sample_row_id] = main["external_id"]
        rows.append(_sample_row(main, roles, labels.get(sample_row_id, []), truth, grader))
    samples = pd.DataFrame(rows)
    verdicts = pd.DataFrame(verdict_records(store, run_id, details_of={DualGenerationJudge.name}),
                            columns=["sample_id", "judge", "keep", "score", "details",
                                     "available", "error"])
    verdicts["sample_id"] = verdicts["sample_id"].map(external)
    verdicts = _dual_generation_percentiles(verdicts)
    if len(samples):
        truth_columns = samples.set_index("sample_id")[["answer_correct", "passages_support"]]
        verdicts = verdicts.join(truth_columns, on="sample_id")
    else:
        verdicts["answer_correct"] = verdicts["passages_support"] = pd.Series(dtype=bool)
    verdicts = verdicts[["sample_id", "judge", "keep", "score", "answer_correct",
                         "passages_support"]]
    agreement = None
    if grader is not None:
        graded = [row for row in rows if not row["refusal"]]  # refusals are not graded
        agreement = rule_llm_agreement([row["rule_correct"] for row in graded],
                                       [row["llm_correct"] for row in graded])
    return RunTables(run_id=run_id, truth=truth, config=run.config, samples=samples,
                     verdicts=verdicts, grader_agreement=agreement)
