"""Training a judge on the labels a dataset holds (`ragshield judges train`): people's
majority labels first, then the dataset's flags; whole groups (articles) held out to
measure it; the model and its card written to the cache directory at once, never half.

Targets: `answerable` (do the passages answer the question: the QPP truth, no answer
needed) and `answer_ok` (is the answer of a run right and supported: the AwF truth, read
from that run under truth "human")."""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import numpy as np

from ragshield.config import Settings
from ragshield.errors import OptionError, UserError
from ragshield.evaluation import run_tables
from ragshield.judges.trained import (CARD_FILE, PREFIX, TARGETS, ModelCard, TrainedJudgeError,
                                      judges_dir, read_card, valid_name, weights_digest)
from ragshield.judges.training import (EPOCHS, Example, group_of, held_out_split, load_base,
                                       pair_texts, predict, train_cross_encoder)
from ragshield.metrics.labels import ANSWERABLE, UNANSWERABLE, majority_label
from ragshield.metrics.precision_recall import pr_auc, pr_curve
from ragshield.retrieval.embeddings import packaged_embedding_path
from ragshield.store.database import Store
from ragshield.store.labels import current_labels
from ragshield.store.runs import get_run
from ragshield.store.samples import dataset_id_of, iter_sample_rows
from ragshield.version import code_version

log = logging.getLogger(__name__)

MIN_PER_CLASS = 20  # in the training part: fewer cannot teach a classifier both sides
BOOTSTRAP = 500


@dataclass(frozen=True)
class TrainedJudgeInfo:
    judge: str  # trained:NAME, as runs and rules name it
    directory: Path
    card: ModelCard


def _answerable_examples(store: Store, dataset: str) -> tuple[list[Example], int]:
    """(examples, how many labels came from people)."""
    with store.session() as session:
        dataset_id = dataset_id_of(session, dataset)
    labels = current_labels(store, dataset_id)
    examples, from_people = [], 0
    for row_id, sample in iter_sample_rows(store, dataset):
        human = majority_label(c.label for c in labels.get(row_id, []))
        label = {ANSWERABLE: True, UNANSWERABLE: False}.get(human or "", sample.answerable)
        if label is None:
            continue
        from_people += human is not None
        examples.append(Example(sample.id, *pair_texts(sample), bool(label), group_of(sample)))
    return examples, from_people


def _answer_examples(store: Store, dataset: str, run_id: int) -> tuple[list[Example], int]:
    run = get_run(store, run_id)
    if run.dataset != dataset:
        raise OptionError(f"run {run_id} judged dataset {run.dataset!r}, not {dataset!r}")
    tables = run_tables(store, run_id, "human")
    samples = {s.id: s for _, s in iter_sample_rows(store, dataset)}
    examples, from_people = [], 0
    for row in tables.samples.itertuples():
        sample = samples.get(str(row.sample_id))
        if sample is None or (row.annotators == 0 and not row.references):
            continue  # no person and no reference: nothing says whether it is right
        from_people += row.annotators > 0
        good = bool(row.answer_correct and row.passages_support)
        examples.append(Example(sample.id, *pair_texts(sample, row.answer or ""), good,
                                group_of(sample)))
    return examples, from_people


def _check_counts(examples: list[Example], where: str) -> None:
    positive = sum(e.label for e in examples)
    negative = len(examples) - positive
    if min(positive, negative) < MIN_PER_CLASS:
        raise UserError(f"{where}: {positive} good and {negative} bad labelled samples; "
                        f"training needs at least {MIN_PER_CLASS} of each (label more, or "
                        "import a dataset with answerable flags)")


def held_out_metrics(scores: np.ndarray, labels: np.ndarray, seed: int = 0) -> dict:
    """PR-AUC of P(good) against the labels (keep-all: the positive rate) with a 95%
    percentile bootstrap interval, and accuracy at 0.5."""
    from sklearn.metrics import roc_auc_score

    def area(s: np.ndarray, y: np.ndarray) -> float:
        return pr_auc(pr_curve(s, y, y))

    rng = np.random.default_rng(seed)
    draws = [rng.integers(0, len(labels), len(labels)) for _ in range(BOOTSTRAP)]
    resampled = [area(scores[d], labels[d]) for d in draws if labels[d].any()]
    return {"n": int(len(labels)), "positive_rate": float(labels.mean()),
            "pr_auc": area(scores, labels),
            "pr_auc_interval": [float(np.percentile(resampled, 2.5)),
                                float(np.percentile(resampled, 97.5))],
            "roc_auc": float(roc_auc_score(labels, scores)) if 0 < labels.sum() < len(labels)
            else None,
            "accuracy_at_0.5": float(((scores >= 0.5) == labels).mean())}


def _publish(directory: Path, final: Path) -> None:
    """Move a finished model directory into place in one rename (an older one goes)."""
    old = final.with_name(f".{final.name}.old")
    if final.exists():
        final.rename(old)
    directory.rename(final)
    shutil.rmtree(old, ignore_errors=True)


def check_judge_name(name: str) -> None:
    if not valid_name(name):
        raise OptionError(f"judge name {name!r}: lower-case letters, digits, '_', '.', '-' "
                          "(at most 64), starting with a letter or digit")


def train_judge(store: Store, settings: Settings, name: str, dataset: str, *,
                target: str = "answerable", run_id: int | None = None, epochs: int = EPOCHS,
                progress: Callable[[int, int], None] | None = None) -> TrainedJudgeInfo:
    """Train trained:NAME on the dataset's labels, measure it on held-out groups, and keep
    it in the cache directory with its card."""
    check_judge_name(name)
    if target not in TARGETS:
        raise OptionError(f"target must be one of {', '.join(TARGETS)}, got {target!r}")
    if target == "answer_ok" and run_id is None:
        raise OptionError("target answer_ok reads the answers of a run: give --run")
    if not 1 <= epochs <= 20:
        raise OptionError(f"epochs must lie in 1..20, got {epochs}")
    examples, from_people = (_answer_examples(store, dataset, run_id) if target == "answer_ok"
                             else _answerable_examples(store, dataset))
    training, held_out = held_out_split(examples)
    _check_counts(training, f"dataset {dataset!r} (training part)")
    if not held_out:
        raise UserError(f"dataset {dataset!r}: its labelled samples form one group (one "
                        "article); a held-out measure needs at least two")
    root = judges_dir(settings.cache_dir)
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=root))
    try:
        base = packaged_embedding_path()
        seconds = train_cross_encoder(base, training, work, epochs=epochs, progress=progress)
        tokenizer, model = load_base(work)
        scores = predict(tokenizer, model, held_out)
        labels = np.asarray([e.label for e in held_out], dtype=bool)
        card = ModelCard(
            name=name, target=target, base_model="all-MiniLM-L6-v2 (packaged)",
            dataset=dataset,
            labels={"total": len(examples), "positive": sum(e.label for e in examples),
                    "from_people": from_people, "from_dataset": len(examples) - from_people},
            split={"by": "group (first passage's title, else sample id)",
                   "training": len(training), "held_out": len(held_out),
                   "held_out_groups": sorted({e.group for e in held_out})[:20],
                   "run": run_id},
            metrics=held_out_metrics(scores, labels), epochs=epochs,
            train_seconds=round(seconds, 1), code_version=code_version(),
            created_at=datetime.now(timezone.utc).isoformat(),
            weights_sha256=weights_digest(work))
        (work / CARD_FILE).write_text(json.dumps(card.to_dict(), indent=2), encoding="utf-8")
        final = root / name
        _publish(work, final)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return TrainedJudgeInfo(f"{PREFIX}{name}", final, card)


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
    examples, from_people = _answerable_examples(store, dataset)
    good = sum(e.label for e in examples)
    return Readiness(dataset, good, len(examples) - good, from_people)


@dataclass
class Training:
    """A training started from the app: its progress, and then its judge or its error."""

    name: str
    dataset: str
    done: int = 0
    total: int = 0
    info: TrainedJudgeInfo | None = None
    error: str | None = None
    thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()


class JudgeTrainer:
    """The trainings this app started, one at a time, each in a daemon thread at the lower
    CPU priority of the app's runs."""

    def __init__(self, store: Store, settings: Settings) -> None:
        self.store, self.settings = store, settings
        self._trainings: list[Training] = []
        self._lock = threading.Lock()

    def start(self, name: str, dataset: str, *, epochs: int = EPOCHS) -> Training:
        """Start training trained:NAME on the dataset's answerable labels; UserError at
        once for a bad name, too few labels, or a training still going."""
        check_judge_name(name)
        ready = readiness(self.store, dataset)
        if not ready.enough:
            raise UserError(ready.message())
        with self._lock:
            going = next((t for t in self._trainings if t.running), None)
            if going is not None:
                raise UserError(f"judge {going.name} is still training: start the next one "
                                "when it is done")
            training = Training(name, dataset)
            training.thread = threading.Thread(target=self._train, args=(training, epochs),
                                               daemon=True, name=f"ragshield-train-{name}")
            self._trainings.append(training)
        training.thread.start()
        return training

    def _train(self, training: Training, epochs: int) -> None:
        from ragshield.services.runs import lower_thread_priority

        lower_thread_priority()

        def progress(done: int, total: int) -> None:
            training.done, training.total = done, total

        try:
            training.info = train_judge(self.store, self.settings, training.name,
                                        training.dataset, epochs=epochs, progress=progress)
        except Exception as exc:  # the thread's end: keep the reason for the page
            log.exception("training %s stopped", training.name)
            training.error = f"{type(exc).__name__}: {exc}"

    def trainings(self) -> list[Training]:
        """Newest first."""
        return self._trainings[::-1]


def trained_judges(settings: Settings) -> list[TrainedJudgeInfo | TrainedJudgeError]:
    """Every directory of the cache's judges folder: its card, or why it cannot be used."""
    root = judges_dir(settings.cache_dir)
    found: list[TrainedJudgeInfo | TrainedJudgeError] = []
    for directory in sorted(root.iterdir()) if root.is_dir() else []:
        if directory.name.startswith("."):
            continue  # a training in progress, or one that was interrupted
        try:
            found.append(TrainedJudgeInfo(f"{PREFIX}{directory.name}", directory,
                                          read_card(directory)))
        except TrainedJudgeError as exc:
            found.append(exc)
    return found
