"""From a stored run to the tables the metric functions take (one row per sample, and one
row per sample x judge), with the ground truth chosen by the caller.

Truth "auto" is automatic only: the answer matcher for correctness and, for "passages
support an answer", the dataset's flag then a reference found in a passage. Truth "human"
lets human labels win where a sample has them (docs/METHODS.md 3: the annotators' majority; ties
count as unlabelled) and falls back to the automatic labels elsewhere. A person's word on the
answer is their own "answer correct" flag, else what their sentence labels on that answer add
up to (store/sentence_labels.py: one sentence not supported makes it wrong, every sentence
supported makes it right).

With an LLM grader (docs/METHODS.md 2) every non-refusal answer is also graded by the model and an
answer is correct when the rules match OR the grader says accurate; the samples table keeps
both (`rule_correct`, `llm_correct`; `auto_correct` is their combination) and the tables
carry the agreement of rules and grader on the main answers. The grader lives here, outside
ragshield.metrics, whose functions stay pure.

The tables are built in two steps: `run_records` reads and grades the run's answers and
verdicts (the slow part: seconds for 10k samples x 10 judges) and does not depend on the
labels; `label_tables` applies the current labels and the truth to them (milliseconds). A
caller watching labels arrive (the UI) keeps the records and redoes only the second step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from ragshield.errors import OptionError
from ragshield.grading import LLMGrader, rule_llm_agreement
from ragshield.judges.registry import run_rescored
from ragshield.judges.support import SupportJudge
from ragshield.metrics.correctness import is_correct
from ragshield.metrics.labels import (majority_flag, majority_label, passages_support,
                                      reference_in_passages)
from ragshield.store.database import Store
from ragshield.store.labels import CurrentLabel, current_labels
from ragshield.store.runs import MAIN, answer_records, get_run, verdict_records
from ragshield.store.sentence_labels import (answer_flag, current_sentence_labels,
                                             person_flag, with_sentence_labels)

Truth = Literal["auto", "human"]
TRUTHS: tuple[str, ...] = ("auto", "human")
BREAKDOWN_FIELDS = ("domain", "question_type", "static_or_dynamic")
TRUTH_COLUMNS = ["answer_correct", "passages_support"]
LABEL_COLUMNS = ["human_label", "human_answer_correct", "annotators"]
VERDICT_COLUMNS = ["sample_id", "judge", "keep", "score", *TRUTH_COLUMNS]

Labels = Mapping[int, Sequence[CurrentLabel]]  # sample row id -> its current labels


@dataclass(frozen=True, eq=False)
class RunRecords:
    """A run's tables before any label: its answers and verdicts, graded automatically.
    Compared by identity: the same object means the same read of the run."""

    run_id: int
    dataset_id: int | None
    config: dict[str, Any]
    samples: pd.DataFrame  # RunTables.samples under truth auto, with no label
    verdicts: pd.DataFrame  # RunTables.verdicts under truth auto
    positions: dict[int, int]  # sample row id (what labels refer to) -> row in samples
    grader_agreement: dict[str, Any] | None = None
    # The support judge's verdict details by the dataset's sample id: its marks per sentence.
    support_details: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunTables:
    run_id: int
    truth: str
    config: dict[str, Any]
    samples: pd.DataFrame  # one row per sample (main answer), in sample order
    verdicts: pd.DataFrame  # sample_id, judge, keep, score, answer_correct, passages_support
    grader_agreement: dict[str, Any] | None = None  # rule_llm_agreement(); None without grader
    # What the tables were made from: tables of the same records differ only where the
    # labels and the truth reach (the label and truth columns).
    records: RunRecords | None = field(default=None, repr=False, compare=False)


def check_truth(truth: str) -> None:
    if truth not in TRUTHS:
        raise OptionError(f"truth must be one of {', '.join(TRUTHS)}, got {truth!r}")


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
                grader: LLMGrader | None = None) -> dict[str, Any]:
    """A sample's row as if it had no label (label_tables fills in the labels)."""
    refs = [str(r) for r in answer["reference_answers"]]
    rule_correct, llm_correct = _grades(answer, refs, grader)
    auto_correct = rule_correct or bool(llm_correct)
    found = reference_in_passages(refs, [p["text"] for p in answer["passages"]])
    meta = answer["meta"] or {}
    row = {
        "sample_id": answer["external_id"], "question": answer["question"],
        "answer": answer["text"], "refusal": answer["refusal"], "references": refs,
        "answerable": answer["answerable"],  # the dataset's flag: True, False or None
        "rule_correct": rule_correct, "llm_correct": llm_correct, "auto_correct": auto_correct,
        "answer_correct": auto_correct,
        "passages_support": passages_support(None, answer["answerable"], found),
        "human_label": None, "human_answer_correct": None, "annotators": 0,
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


def _rescored(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Scores that only the whole run can give (e.g. ranks over its samples), from the
    judges that rescore (Judge.rescore_run); unscored verdicts keep a null score."""
    for name, judge in run_rescored().items():
        rows = verdicts.index[verdicts["judge"] == name]
        if len(rows):
            scores = judge.rescore_run(list(verdicts.loc[rows, "details"]))
            if scores is not None:
                verdicts.loc[rows, "score"] = [float("nan") if s is None else s
                                               for s in scores]
    return verdicts


def _with_truth(verdicts: pd.DataFrame, samples: pd.DataFrame) -> pd.DataFrame:
    """The verdicts with their sample's truth columns, in VERDICT_COLUMNS order."""
    if len(samples):
        verdicts = verdicts.join(samples.set_index("sample_id")[TRUTH_COLUMNS], on="sample_id")
    else:
        verdicts["answer_correct"] = verdicts["passages_support"] = pd.Series(dtype=bool)
    return verdicts[VERDICT_COLUMNS]


def run_records(store: Store, run_id: int, grader: LLMGrader | None = None) -> RunRecords:
    """Read and grade every answer and verdict of the run; with a grader, answers are also
    graded by the LLM (slow without the call cache: one call per answer)."""
    run = get_run(store, run_id)
    by_sample: dict[int, dict[str, dict[str, Any]]] = {}
    for answer in answer_records(store, run_id):
        by_sample.setdefault(answer["sample_id"], {})[answer["role"]] = answer
    rows: list[dict[str, Any]] = []
    external: dict[int, str] = {}
    positions: dict[int, int] = {}
    for sample_row_id, roles in by_sample.items():
        if MAIN not in roles:
            continue
        main = roles.pop(MAIN)
        external[sample_row_id] = main["external_id"]
        positions[sample_row_id] = len(rows)
        rows.append(_sample_row(main, roles, grader))
    samples = pd.DataFrame(rows)
    # Details are read for the judges a run rescores and for support (its marks per
    # sentence, which Browse counts): decoding every verdict's JSON costs most on large runs.
    read = {*run_rescored(), SupportJudge.name}
    verdicts = pd.DataFrame(verdict_records(store, run_id, details_of=read),
                            columns=["sample_id", "judge", "keep", "score", "details",
                                     "available", "error"])
    verdicts["sample_id"] = verdicts["sample_id"].map(external)
    support = verdicts[verdicts["judge"] == SupportJudge.name]
    support_details = dict(zip(support["sample_id"].astype(str), support["details"]))
    verdicts = _with_truth(_rescored(verdicts), samples)
    agreement = None
    if grader is not None:
        graded = [row for row in rows if not row["refusal"]]  # refusals are not graded
        agreement = rule_llm_agreement([row["rule_correct"] for row in graded],
                                       [row["llm_correct"] for row in graded])
    return RunRecords(run_id=run_id, dataset_id=run.dataset_id, config=run.config,
                      samples=samples, verdicts=verdicts, positions=positions,
                      grader_agreement=agreement, support_details=support_details)


def _labelled_samples(records: RunRecords, labels: Labels, truth: str) -> pd.DataFrame:
    """records.samples with the labels of its labelled samples, and their truth under
    `truth` (human: the majority's flag and label win where there is one)."""
    samples = records.samples
    human_label = np.full(len(samples), None, dtype=object)
    human_correct = np.full(len(samples), None, dtype=object)
    annotators = np.zeros(len(samples), dtype=np.int64)
    correct = samples["answer_correct"].to_numpy(dtype=bool, copy=True)
    support = samples["passages_support"].to_numpy(dtype=bool, copy=True)
    for row_id, current in labels.items():
        position = records.positions.get(row_id)
        if position is None or not current:
            continue
        label = human_label[position] = majority_label([c.label for c in current])
        # A flag on another answer (another run's, worded otherwise) says nothing of this one.
        answer = samples["answer"].iat[position]
        # Each person's sentence labels on this answer, as a label of the whole answer.
        sentences_say = {c.annotator_id: answer_flag(answer, list(c.sentences))
                         for c in current if c.sentences and answer}
        flag = human_correct[position] = majority_flag([
            person_flag(c, answer, sentences_say.get(c.annotator_id)) for c in current])
        annotators[position] = len(current)
        if truth == "human":
            correct[position] = flag if flag is not None else correct[position]
            # People who found every sentence of the answer in the passages say that the
            # passages support an answer (where nobody labelled answerability); the
            # automatic support already is the dataset's flag, else the reference check.
            faithful = majority_flag(sentences_say.values())
            support[position] = passages_support(label, True if faithful else None,
                                                 support[position])
    # Built as pd.DataFrame(rows) builds them, so that the columns' dtypes are the same.
    label_columns = pd.DataFrame(list(zip(human_label, human_correct, annotators)),
                                 columns=LABEL_COLUMNS, index=samples.index)
    return samples.assign(answer_correct=correct, passages_support=support,
                          **{name: label_columns[name] for name in LABEL_COLUMNS})


def label_tables(records: RunRecords, labels: Labels, truth: str = "auto") -> RunTables:
    """The run's tables under `truth`, with `labels` (current_labels of its dataset)."""
    check_truth(truth)
    samples, verdicts = records.samples, records.verdicts
    if any(records.positions.get(row_id) is not None and current
           for row_id, current in labels.items()):
        samples = _labelled_samples(records, labels, truth)
        if truth == "human":
            verdicts = _with_truth(verdicts.drop(columns=TRUTH_COLUMNS), samples)
    return RunTables(run_id=records.run_id, truth=truth, config=records.config,
                     samples=samples, verdicts=verdicts,
                     grader_agreement=records.grader_agreement, records=records)


def dataset_labels(store: Store, records: RunRecords) -> dict[int, list[CurrentLabel]]:
    """The current answer and sentence labels of the run's dataset (none when the dataset
    was removed)."""
    if records.dataset_id is None:
        return {}
    return with_sentence_labels(current_labels(store, records.dataset_id),
                                current_sentence_labels(store, records.dataset_id))


def run_tables(store: Store, run_id: int, truth: str = "auto",
               grader: LLMGrader | None = None) -> RunTables:
    """The run's samples and verdicts tables under the chosen truth; with a grader, answers
    are also graded by the LLM (slow without the call cache: one call per answer)."""
    check_truth(truth)
    records = run_records(store, run_id, grader)
    return label_tables(records, dataset_labels(store, records), truth)
