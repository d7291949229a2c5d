"""The labelled samples a judge learns from (`ragshield judges train`): for target
`answerable`, a dataset's samples whose truth people's majority label or the dataset's flag
gives; for `answer_ok`, a run's answers whose truth is known, as a policy counts them. With
reads, each comes with the run's scores of the judges read. And whether there are enough of
each class to train on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ragshield.errors import OptionError, UserError
from ragshield.evaluation import RunTables, run_tables
from ragshield.grading import LLMGrader
from ragshield.judges.training import Example, group_of, pair_texts
from ragshield.metrics.labels import ANSWERABLE, UNANSWERABLE, majority_label
from ragshield.policies.fitting import PERSON
from ragshield.services.learning.policies import truth_sources
from ragshield.store.database import Store
from ragshield.store.labels import current_labels
from ragshield.store.runs import get_run
from ragshield.store.samples import dataset_id_of, iter_sample_rows
from ragshield.types import Sample

MIN_PER_CLASS = 20  # in the training part: fewer cannot teach a classifier both sides


@dataclass(frozen=True)
class Labelled:
    """One labelled sample to learn from: its answer (target answer_ok), its truth, its group
    and the scores of the LLM judges read (in the order asked)."""

    sample: Sample
    answer: str | None
    label: bool
    group: str
    reads: tuple[float | None, ...] = ()

    def example(self) -> Example:
        return Example(self.sample.id, *pair_texts(self.sample, self.answer), self.label,
                       self.group)


def _run_reads(tables: RunTables, reads: Sequence[str]) -> dict[str, tuple]:
    """Sample id -> the run's scores of the judges in `reads`; an error names a judge the
    run did not use."""
    if not reads:
        return {}
    run_id, verdicts = tables.run_id, tables.verdicts
    missing = sorted(set(reads) - set(verdicts["judge"]))
    if missing:
        used = ", ".join(sorted(set(verdicts["judge"])))
        raise OptionError(f"run {run_id} has no verdicts of {', '.join(missing)}: the reads "
                          f"must be judges of that run (it has {used})")
    scores = {(str(r.sample_id), r.judge): (None if r.score != r.score else float(r.score))
              for r in verdicts.itertuples()}
    sample_ids = {str(i) for i in verdicts["sample_id"]}
    return {i: tuple(scores.get((i, read)) for read in reads) for i in sample_ids}


def answerable_examples(store: Store, dataset: str, run_id: int | None = None,
                         reads: Sequence[str] = ()) -> tuple[list[Labelled], int]:
    """(examples, how many labels came from people); with reads, only the run's samples."""
    with store.session() as session:
        dataset_id = dataset_id_of(session, dataset)
    labels = current_labels(store, dataset_id)
    scores = (_run_reads(run_tables(store, run_id, "human"), reads)
              if run_id is not None and reads else {})
    examples, from_people = [], 0
    for row_id, sample in iter_sample_rows(store, dataset):
        human = majority_label(c.label for c in labels.get(row_id, []))
        label = {ANSWERABLE: True, UNANSWERABLE: False}.get(human or "", sample.answerable)
        if label is None or (reads and sample.id not in scores):
            continue
        from_people += human is not None
        examples.append(Labelled(sample, None, bool(label), group_of(sample),
                                 scores.get(sample.id, (None,) * len(reads))))
    return examples, from_people


def answer_examples(store: Store, dataset: str, run_id: int, reads: Sequence[str] = (),
                    grader: LLMGrader | None = None) -> tuple[list[Labelled], int]:
    """The run's answers whose truth is known, (examples, how many from people); with a
    grader, an answer the rules miss may be graded right (long reference answers)."""
    run = get_run(store, run_id)
    if run.dataset != dataset:
        raise OptionError(f"run {run_id} judged dataset {run.dataset!r}, not {dataset!r}")
    tables = run_tables(store, run_id, "human", grader)
    scores = _run_reads(tables, reads)
    samples = {s.id: s for _, s in iter_sample_rows(store, dataset)}
    # As for a policy: people, a reference answer, or the unanswerable flag say it.
    known = truth_sources(tables.samples)
    examples, from_people = [], 0
    for row, source in zip(tables.samples.itertuples(), known):
        sample = samples.get(str(row.sample_id))
        if sample is None or source == "":
            continue  # nothing says whether the answer is right
        from_people += source == PERSON
        good = bool(row.answer_correct and row.passages_support)
        examples.append(Labelled(sample, row.answer or "", good, group_of(sample),
                                 scores.get(sample.id, (None,) * len(reads))))
    return examples, from_people


def check_counts(examples: Sequence[Labelled | Example], where: str) -> None:
    positive = sum(e.label for e in examples)
    negative = len(examples) - positive
    if min(positive, negative) < MIN_PER_CLASS:
        raise UserError(f"{where}: {positive} good and {negative} bad labelled samples; "
                        f"training needs at least {MIN_PER_CLASS} of each (label more, or "
                        "import a dataset with answerable flags)")


@dataclass(frozen=True)
class Readiness:
    """Whether a dataset holds the labels to train a judge on (target answerable)."""

    dataset: str
    good: int
    bad: int
    from_people: int

    @property
    def enough(self) -> bool:
        # the training part keeps about three quarters of them
        return min(self.good, self.bad) >= MIN_PER_CLASS * 4 // 3

    def message(self) -> str:
        counts = (f"dataset {self.dataset}: {self.good} answerable and {self.bad} "
                  f"unanswerable labelled samples ({self.from_people} labelled by people)")
        if self.enough:
            return f"{counts}: enough to train a judge on them."
        return (f"{counts}: a judge needs about {MIN_PER_CLASS * 4 // 3} of each (label more, "
                "or import a dataset with answerable flags).")


def readiness(store: Store, dataset: str) -> Readiness:
    examples, from_people = answerable_examples(store, dataset)
    good = sum(e.label for e in examples)
    return Readiness(dataset, good, len(examples) - good, from_people)
