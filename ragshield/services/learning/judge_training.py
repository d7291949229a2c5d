"""Training a judge on the labels a dataset holds (`ragshield judges train`; the labelled
samples: judge_examples.py): whole groups (articles) held out to measure it; the model and
its card written to the cache directory at once, never half; the trained judges there.

Targets: `answerable` (do the passages answer the question: the QPP truth, no answer
needed) and `answer_ok` (is the answer of a run right and supported: the AwF truth, read
from that run under truth "human", with the samples a policy counts). Kinds: `signals`
(ragshield.judges.learned, measured by nested grouped cross-validation) and
`cross-encoder` (ragshield.judges.training, measured on held-out groups)."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ragshield.config import TRAINING_EPOCHS, Settings
from ragshield.errors import OptionError, UserError
from ragshield.judges.hard_negatives import hard_negatives
from ragshield.judges.learned import Extra, fit_final, grouped_cv
from ragshield.judges.signals import SignalReader
from ragshield.judges.trained import (CARD_FILE, KINDS, PREFIX, TARGETS, WEIGHTS_FILES,
                                      ModelCard, TrainedJudgeError, feature_names, feature_rows,
                                      judges_dir, read_card, valid_name, weights_digest)
from ragshield.judges.training import held_out_split, load_base, predict, train_cross_encoder
from ragshield.metrics.precision_recall import pr_auc, pr_curve
from ragshield.retrieval.embeddings import packaged_embedding_path
from ragshield.run_config import RunConfig
from ragshield.services.jobs import Job, Jobs
from ragshield.services.learning.judge_examples import (Labelled, answer_examples,
                                                        answerable_examples, check_counts,
                                                        readiness)
from ragshield.services.runs.llm_grading import configured_grader
from ragshield.store.database import Store
from ragshield.store.runs import get_run
from ragshield.version import code_version

SIGNAL_BATCH = 32  # samples read between two progress reports
BOOTSTRAP = 500


@dataclass(frozen=True)
class TrainedJudgeInfo:
    judge: str  # trained:NAME, as runs and rules name it
    directory: Path
    card: ModelCard


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


def held_out_sentence(card: ModelCard) -> str:
    """How the judge did on samples it never saw, in one sentence for the faces."""
    held = card.metrics
    low, high = held["pr_auc_interval"]
    text = (f"PR-AUC {held['pr_auc']:.3f} [{low:.3f}, {high:.3f}] on {held['n']} held-out "
            f"samples (keep-all {held['positive_rate']:.3f})")
    if card.cv:
        cv = card.cv
        text += (f"; by fold of held-out groups: median {cv['pr_auc_median']:.3f}, from "
                 f"{cv['pr_auc_min']:.3f} to {cv['pr_auc_max']:.3f} over {cv['folds']} folds")
    return text


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


def _check_request(name: str, target: str, kind: str, run_id: int | None,
                   reads: Sequence[str], hard_negatives: bool, epochs: int,
                   llm_grader: bool) -> None:
    from ragshield.judges.builtin import JUDGES
    from ragshield.judges.registry import run_rescored

    check_judge_name(name)
    if target not in TARGETS:
        raise OptionError(f"target must be one of {', '.join(TARGETS)}, got {target!r}")
    if kind not in KINDS:
        raise OptionError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if target == "answer_ok" and run_id is None:
        raise OptionError("target answer_ok reads the answers of a run: give --run")
    # A judge whose scores the run re-scores as a whole reads differently on one sample.
    unknown = [read for read in reads
               if read not in JUDGES or read == "trivial" or read in run_rescored()]
    if unknown:
        raise OptionError(f"reads must be scoring judges that score one sample alone (e.g. "
                          f"pre_answer,p_true), got {', '.join(unknown)}")
    if reads and (run_id is None or kind != "signals"):
        raise OptionError("reads are the scores of a run's judges: give --run, with kind "
                          "signals")
    if hard_negatives and (reads or target != "answerable" or kind != "signals"):
        raise OptionError("hard negatives are made questions with no run's reads and no "
                          "answers: use them with target answerable, kind signals, no reads")
    if llm_grader and target != "answer_ok":
        raise OptionError("the LLM grader grades a run's answers: use it with target "
                          "answer_ok")
    if not 1 <= epochs <= 20:
        raise OptionError(f"epochs must lie in 1..20, got {epochs}")


def reads_reader(store: Store, run_id: int, reads: Sequence[str]) -> str:
    """The one model the run's `reads` were read from: a trained judge reads them all from
    one model at use (OptionError when the run read them from several)."""
    read_by = RunConfig.from_dict(get_run(store, run_id).config).read_by(reads)
    models = sorted(set(read_by.values()))
    if len(models) > 1:
        by = ", ".join(f"{read} by {model}" for read, model in read_by.items())
        raise OptionError(f"run {run_id} read {by}: a trained judge reads its scores from one "
                          "model; choose reads read by one model, or train on a run whose "
                          "judges all read from one (--judge-model)")
    return models[0]


def train_judge(store: Store, settings: Settings, name: str, dataset: str, *,
                target: str = "answerable", run_id: int | None = None,
                kind: str = "signals", reads: Sequence[str] = (),
                hard_negatives: bool = False, epochs: int = TRAINING_EPOCHS,
                llm_grader: bool = False,
                progress: Callable[[int, int], None] | None = None) -> TrainedJudgeInfo:
    """Train trained:NAME on the dataset's labels, measure it on groups it did not see, and
    keep it in the cache directory with its card. Kind signals: nested grouped
    cross-validation, then a model fitted on every label; kind cross-encoder: about a
    quarter of the groups held out. With `llm_grader` (target answer_ok), an answer is right
    when the rules match or the configured model grades it accurate: long reference answers
    (ClapNQ) defeat the rules."""
    _check_request(name, target, kind, run_id, reads, hard_negatives, epochs, llm_grader)
    reader = reads_reader(store, run_id, reads) if reads and run_id is not None else ""
    if target == "answer_ok":
        assert run_id is not None  # _check_request asks for a run for this target
        grader = configured_grader(settings, store) if llm_grader else None
        examples, from_people = answer_examples(store, dataset, run_id, reads, grader)
    else:
        examples, from_people = answerable_examples(store, dataset, run_id, reads)
    check_counts(examples, f"dataset {dataset!r}")
    if len({e.group for e in examples}) < 2:
        raise UserError(f"dataset {dataset!r}: its labelled samples form one group (one "
                        "article); a held-out measure needs at least two")
    root = judges_dir(settings.cache_dir)
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=root))
    try:
        trained = (_train_signals(examples, target, reads, hard_negatives, work, progress)
                   if kind == "signals" else
                   _train_encoder(examples, dataset, work, epochs, progress))
        trained["split"]["run"] = run_id
        trained["split"]["answers_graded_by"] = (
            None if target != "answer_ok" else "rules or LLM grader" if llm_grader else "rules")
        card = ModelCard(
            name=name, target=target, dataset=dataset,
            labels={"total": len(examples), "positive": sum(e.label for e in examples),
                    "from_people": from_people, "from_dataset": len(examples) - from_people},
            code_version=code_version(), created_at=datetime.now(timezone.utc).isoformat(),
            weights_sha256=weights_digest(work, kind), kind=kind, reads=list(reads),
            reader=reader, **trained)
        (work / CARD_FILE).write_text(json.dumps(card.to_dict(), indent=2), encoding="utf-8")
        final = root / name
        _publish(work, final)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return TrainedJudgeInfo(f"{PREFIX}{name}", final, card)


def _train_signals(examples: list[Labelled], target: str, reads: Sequence[str],
                   with_negatives: bool, work: Path,
                   progress: Callable[[int, int], None] | None) -> dict[str, Any]:
    """Signals of every labelled sample (and of the made negatives), the grouped-CV figures,
    and the final model written to model.json; the card's fields."""
    started = time.perf_counter()
    reader = SignalReader()
    group = {e.sample.id: e.group for e in examples}
    made = (hard_negatives([e.sample for e in examples if e.label],
                           lambda sample: group[sample.id]) if with_negatives else [])
    total = len(examples) + len(made)
    features = feature_names(target, reads)

    def rows_of(items: Sequence[Labelled], done: int) -> np.ndarray:
        parts = []
        for first in range(0, len(items), SIGNAL_BATCH):
            chunk = items[first:first + SIGNAL_BATCH]
            parts.append(feature_rows(reader, target, [e.sample for e in chunk],
                                      [e.answer for e in chunk], [e.reads for e in chunk]))
            if progress is not None:
                progress(done + first + len(chunk), total)
        return np.vstack(parts) if parts else np.zeros((0, len(features)))

    rows = rows_of(examples, 0)
    labels = np.asarray([e.label for e in examples], dtype=bool)
    groups = [e.group for e in examples]
    extra = None
    if made:
        negatives = [Labelled(s, None, False, group[s.id.split("#")[0]]) for s in made]
        extra = Extra(rows_of(negatives, len(examples)), np.zeros(len(made), dtype=bool),
                      np.asarray([n.group for n in negatives], dtype=object))
    try:
        cv = grouped_cv(rows, labels, groups, features, extra)
        model = fit_final(rows, labels, groups, features, extra)
    except ValueError as exc:  # no fold holds both classes
        raise UserError(f"the labels cannot be cross-validated by group: {exc}") from exc
    (work / WEIGHTS_FILES["signals"]).write_text(json.dumps(model.to_dict(), indent=2),
                                                 encoding="utf-8")
    scored = ~np.isnan(cv.out_of_fold)
    return {"base_model": "logistic regression over signals (all-MiniLM-L6-v2, packaged)",
            "split": {"by": "grouped cross-validation (groups: first passage's title, else "
                            "sample id)", "training": len(examples),
                      "held_out": int(scored.sum()), "held_out_groups": []},
            "metrics": held_out_metrics(cv.out_of_fold[scored], labels[scored]),
            "cv": {**cv.summary(), "strength": model.strength, "features": features},
            "epochs": 0, "train_seconds": round(time.perf_counter() - started, 1),
            "hard_negatives": len(made)}


def _train_encoder(examples: list[Labelled], dataset: str, work: Path, epochs: int,
                   progress: Callable[[int, int], None] | None) -> dict[str, Any]:
    """The packaged MiniLM fine-tuned on about three quarters of the groups, measured on the
    rest; the card's fields."""
    training, held_out = held_out_split([e.example() for e in examples])
    check_counts(training, f"dataset {dataset!r} (training part)")
    seconds = train_cross_encoder(packaged_embedding_path(), training, work, epochs=epochs,
                                  progress=progress)
    tokenizer, model = load_base(work)
    scores = predict(tokenizer, model, held_out)
    labels = np.asarray([e.label for e in held_out], dtype=bool)
    return {"base_model": "all-MiniLM-L6-v2 (packaged)",
            "split": {"by": "group (first passage's title, else sample id)",
                      "training": len(training), "held_out": len(held_out),
                      "held_out_groups": sorted({e.group for e in held_out})[:20]},
            "metrics": held_out_metrics(scores, labels), "epochs": epochs,
            "train_seconds": round(seconds, 1)}


class JudgeTrainer:
    """The trainings this app started, one at a time, each a background job
    (services/jobs.py) at the lower CPU priority of the app's runs; a job's key is the
    judge's name, its result the TrainedJudgeInfo."""

    KIND = "training"

    def __init__(self, store: Store, settings: Settings, jobs: Jobs | None = None) -> None:
        self.store, self.settings = store, settings
        self.jobs = jobs or Jobs()

    def start(self, name: str, dataset: str, *, hard_negatives: bool = False) -> Job:
        """Start training trained:NAME (kind signals) on the dataset's answerable labels;
        UserError at once for a bad name, too few labels, or a training still going."""
        check_judge_name(name)
        ready = readiness(self.store, dataset)
        if not ready.enough:
            raise UserError(ready.message())

        def train(job: Job) -> TrainedJudgeInfo:
            return train_judge(self.store, self.settings, name, dataset,
                               hard_negatives=hard_negatives, progress=job.progress)

        with self.jobs.one_at_a_time(self.KIND):
            return self.jobs.start(self.KIND, name, train, background=True, about=dataset)

    def trainings(self) -> list[Job]:
        """Newest first."""
        return self.jobs.of_kind(self.KIND)[::-1]


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
