"""Labels by people: the use cases of the Annotate tab and of `ragshield labels ...`.

The store keeps the labels, skips and undos (ragshield.store.labels), picks the next sample
(annotation_queue), says what to show (annotation_item) and moves label files
(label_transfer). This module adds the rules around them: who the annotator is, which
dataset a queue opens on, and what an annotator is handed after a label or a skip.

The app puts the demo set into the store once, at start-up. A command may be the first to
open a fresh database, so the use cases that a command starts with (`label_sample`,
`next_to_label`, `import_label_file`) put it in themselves; the tab's calls, which run on
every click, skip that query.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragshield.datasets.demo import DEMO_DATASET
from ragshield.errors import OptionError, UserError
from ragshield.services.data.datasets import ensure_demo_dataset
from ragshield.services.learning.policies import value_mix
from ragshield.store.annotation_item import AnnotationItem, annotation_item
from ragshield.store.annotation_queue import STRATEGIES, next_sample
from ragshield.store.database import Store
from ragshield.store.label_transfer import export_labels, import_labels
from ragshield.store.labels import (LabelRecord, Progress, add_annotator, add_label,
                                    get_guidelines, label_history, progress, set_guidelines,
                                    skip)
from ragshield.store.label_undo import undo
from ragshield.store.models import LABEL_VALUES
from ragshield.store.samples import count_samples

__all__ = [
    "LABEL_VALUES", "STRATEGIES", "AnnotationItem", "AnnotatorMissingError", "LabelRecord",
    "Next", "Progress", "Queue", "add_annotator", "annotation_item", "annotator_name",
    "annotator_progress", "default_dataset", "export_labels", "get_guidelines", "hand_over",
    "import_label_file", "label_history", "label_sample", "label_then_next", "next_sample_id",
    "next_to_label", "parse_mix", "progress", "set_guidelines", "sign_in", "skip",
    "skip_then_next", "undo",
]


class AnnotatorMissingError(UserError, ValueError):
    """Nobody is named: a label must record who gave it."""


@dataclass(frozen=True)
class Queue:
    """Which samples an annotator is handed, in which order (ragshield.store.annotation_queue):
    `overlap` annotators per sample, `seed` for `random`, `run_id` for `disagreement`
    (default: the dataset's newest run)."""
    dataset: str = DEMO_DATASET
    strategy: str = "unlabelled"
    overlap: int = 1
    seed: int = 0
    run_id: int | None = None
    policy: str | None = None  # `value`: whose defer band (default: the newest fitted here)
    shares: tuple[float, float, float] | None = None  # `value`: band, disagreement, random


@dataclass(frozen=True)
class Next:
    """What the queue hands the annotator after a label or skip, which is stored either
    way: the next sample's id, None when nothing is left for them, or the error that kept
    the queue from answering (a strategy, overlap or run it does not know)."""
    sample_id: str | None
    error: UserError | None = None
    item: AnnotationItem | None = None  # what to show of the sample


# -- who labels, and where ----------------------------------------------------------------

def annotator_name(typed_name: str | None, login_name: str | None = None) -> str:
    """The login name when there is one (it cannot be overridden), else the typed name."""
    name = (login_name or typed_name or "").strip()
    if not name:
        raise AnnotatorMissingError(
            "No annotator name: type your name in the box above (every label records who gave it).")
    return name


def sign_in(store: Store, typed_name: str | None, login_name: str | None = None) -> str:
    """The annotator's name (see `annotator_name`), added to the store when new."""
    name = annotator_name(typed_name, login_name)
    add_annotator(store, name)
    return name


def default_dataset(names: list[str]) -> str:
    """The dataset a queue opens on: the demo set while there is one (or no dataset at all),
    else the first of `names`."""
    return DEMO_DATASET if DEMO_DATASET in names or not names else names[0]


# -- the queue ----------------------------------------------------------------------------

MIX_SOURCES = ("band", "disagreement", "random")


def parse_mix(text: str) -> tuple[float, float, float]:
    """`band=0.4,disagreement=0.4,random=0.2` (any subset; the others 0) as shares."""
    shares = dict.fromkeys(MIX_SOURCES, 0.0)
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = part.partition("=")
        if name.strip() not in shares:
            raise OptionError(f"mix: unknown source {name.strip()!r}; sources: "
                              f"{', '.join(MIX_SOURCES)}")
        try:
            shares[name.strip()] = float(value)
        except ValueError:
            raise OptionError(f"mix: {name.strip()} needs a number, got {value!r}") from None
    return shares["band"], shares["disagreement"], shares["random"]


def next_sample_id(store: Store, annotator: str, queue: Queue) -> str | None:
    """The id of the sample the annotator labels next, None when they are done."""
    mix = (value_mix(store, queue.dataset, queue.policy, queue.shares)
           if queue.strategy == "value" else None)
    return next_sample(store, queue.dataset, annotator, strategy=queue.strategy,
                       overlap=queue.overlap, seed=queue.seed, run_id=queue.run_id, mix=mix)


def next_to_label(store: Store, annotator: str, queue: Queue) -> str | None:
    """`next_sample_id` on a store that may be new: the demo set is put in first."""
    ensure_demo_dataset(store)
    return next_sample_id(store, annotator, queue)


def hand_over(store: Store, annotator: str, queue: Queue, *, blind: bool = False) -> Next:
    """The sample the annotator labels next and what to show of it (`annotation_item`),
    read in one transaction: on a database server, a label's queue and item queries
    otherwise cost a connection check and a commit per store call."""
    try:
        with store.one_transaction():
            sample_id = next_sample_id(store, annotator, queue)
            if sample_id is None:
                return Next(None)
            return Next(sample_id, item=annotation_item(store, queue.dataset, sample_id,
                                                        annotator, blind=blind))
    except UserError as error:
        return Next(None, error)


def label_then_next(store: Store, queue: Queue, annotator: str, sample_id: str, label: str, *,
                    note: str | None = None, request_id: str | None = None,
                    passages_shown: list[Any] | None = None, answer_id: int | None = None,
                    blind: bool = False) -> tuple[LabelRecord, Next]:
    """Store a label on a sample of the queue's dataset (once per `request_id`; with the
    passages and the answer the annotator was shown) and hand over the next sample. The
    label is committed on its own, before the next sample is looked for."""
    record = add_label(store, queue.dataset, sample_id, annotator, label, note=note,
                       request_id=request_id, passages_shown=passages_shown,
                       answer_id=answer_id)
    return record, hand_over(store, annotator, queue, blind=blind)


def skip_then_next(store: Store, queue: Queue, annotator: str, sample_id: str, *,
                   blind: bool = False) -> Next:
    """Pass over a sample of the queue's dataset and hand over the next one."""
    skip(store, queue.dataset, sample_id, annotator)
    return hand_over(store, annotator, queue, blind=blind)


def label_sample(store: Store, dataset: str, sample_id: str, annotator: str, label: str, *,
                 answer_correct: bool | None = None, note: str | None = None,
                 request_id: str | None = None) -> LabelRecord:
    """Store a label (a new version when the annotator labelled the sample before) on a
    store that may be new: the demo set is put in first."""
    ensure_demo_dataset(store)
    return add_label(store, dataset, sample_id, annotator, label,
                     answer_correct=answer_correct, note=note, request_id=request_id)


# -- progress and files -------------------------------------------------------------------

def annotator_progress(store: Store, dataset: str, annotator: str | None) -> Progress:
    """The annotator's samples labelled and skipped in the dataset, of its size; zero counts
    for an annotator who has done nothing there, or for None."""
    rows = progress(store, dataset)
    total = rows[0].total if rows else count_samples(store, dataset)
    mine = next((row for row in rows if row.annotator == annotator), None)
    return mine or Progress(annotator or "", 0, 0, total)


def import_label_file(store: Store, path: Path, format: str | None = None) -> tuple[int, int]:
    """Import a label file made by `export_labels`, all rows or none; (added, already there).
    The demo set is put in first, as its labels may be in the file."""
    ensure_demo_dataset(store)
    return import_labels(store, path, format)
