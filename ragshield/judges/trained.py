"""A judge that learnt from labels (`ragshield judges train`), kept in the cache directory
with its model card and used by the name `trained:NAME` like any other judge; its score is
P(good). Two kinds:
- `signals` (the default): a logistic regression over cheap signals of the question, the
  passages (and the answer, for target answer_ok) and, when trained with them, the LLM's
  probability reads (ragshield.judges.learned); its reasons name what pushed the score;
- `cross-encoder`: the packaged MiniLM fine-tuned on the labels (ragshield.judges.training);
  no LLM call, but it learns the articles it saw (docs/QUALITY.md).

The model card says what the model learnt from and how well it did on samples it never
saw; a directory without a card, with a card of another format, or whose weights no longer
match the card's digest, is refused with the reason."""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, Sequence

import numpy as np

from ragshield.answerers.context import PromptOptions
from ragshield.errors import UserError
from ragshield.judges.base import Cost, Judge
from ragshield.judges.builtin import JUDGES
from ragshield.judges.judge_readers import SELF
from ragshield.judges.learned import FeatureModel, log_odds
from ragshield.judges.signals import ANSWER_SIGNALS, QUESTION_SIGNALS, SignalReader
from ragshield.judges.training import Example, load_base, pair_texts, predict
from ragshield.llm.traced import TracedLLM
from ragshield.types import Answer, LLMCall, Sample, Verdict

PREFIX = "trained:"
CARD_FILE = "ragshield-judge.json"
CARD_FORMAT = "ragshield-trained-judge/2"
FORMATS = ("ragshield-trained-judge/1", CARD_FORMAT)  # /1: a cross-encoder, before kinds
KINDS = ("signals", "cross-encoder")
WEIGHTS_FILES = {"signals": "model.json", "cross-encoder": "model.safetensors"}
TARGETS = ("answerable", "answer_ok")


NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")


def valid_name(name: str) -> bool:
    """A trained judge's name: lower-case letters, digits, '_', '.', '-' (a directory name)."""
    return NAME_PATTERN.fullmatch(name) is not None and ".." not in name


class TrainedJudgeError(UserError, ValueError):
    """A trained judge that cannot be used: missing, not a trained judge, or stale."""


@dataclass(frozen=True)
class ModelCard:
    name: str
    target: str  # answerable | answer_ok
    base_model: str
    dataset: str
    labels: dict[str, int]  # total, positive, from_people, from_dataset
    split: dict[str, Any]  # by, training, held_out, held_out_groups
    metrics: dict[str, Any]  # on the held-out samples
    epochs: int
    train_seconds: float
    code_version: str
    created_at: str
    weights_sha256: str
    threshold: float = 0.5
    format: str = CARD_FORMAT
    notes: list[str] = field(default_factory=list)
    kind: str = "cross-encoder"
    reads: list[str] = field(default_factory=list)  # the LLM judges whose scores it reads
    cv: dict[str, Any] = field(default_factory=dict)  # grouped cross-validation, by fold
    hard_negatives: int = 0  # made unanswerable samples it trained on (never measured on)
    # The model its reads came from (one, judge_readers.py); "" without reads and in cards
    # written before readers were recorded, whose reads came from the answering model.
    reader: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def cost(self) -> Cost:
        """What the judge costs (judges.base.COSTS): its LLM reads are cheap calls."""
        return "cheap" if self.reads else "free"


def judges_dir(cache_dir: Path) -> Path:
    return cache_dir / "judges"


def weights_digest(directory: Path, kind: str) -> str:
    digest = hashlib.sha256()
    with open(directory / WEIGHTS_FILES[kind], "rb") as weights:
        for block in iter(lambda: weights.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_card(directory: Path, check_weights: bool = True) -> ModelCard:
    """The card of a trained judge's directory, checked against its weights (unless not
    `check_weights`: hashing a cross-encoder's weights reads 90 MB)."""
    path = directory / CARD_FILE
    if not directory.is_dir():  # named, not its path: the guard API answers with this
        trained = sorted(f"{PREFIX}{found.name}" for found in directory.parent.glob("[!.]*")
                         if found.is_dir()) if directory.parent.is_dir() else []
        raise TrainedJudgeError(
            f"no trained judge '{PREFIX}{directory.name}' (trained judges here: "
            f"{', '.join(trained) or 'none'}; `python -m ragshield judges list` lists every "
            "judge, `python -m ragshield judges train NAME --dataset D` trains one)")
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TrainedJudgeError(f"{directory} is not a trained judge: it has no {CARD_FILE}")
    except (OSError, ValueError) as exc:
        raise TrainedJudgeError(f"{path}: unreadable model card ({exc})") from exc
    if not isinstance(body, dict) or body.get("format") not in FORMATS:
        found = body.get("format") if isinstance(body, dict) else type(body).__name__
        raise TrainedJudgeError(f"{path}: a model card of format {found!r}, expected "
                                f"{CARD_FORMAT!r}: train the judge again")
    if body.get("kind", "cross-encoder") not in KINDS:
        raise TrainedJudgeError(f"{path}: unknown kind {body.get('kind')!r}, expected one of "
                                f"{', '.join(KINDS)}")
    known = {f.name for f in fields(ModelCard)}
    missing = sorted(f.name for f in fields(ModelCard) if f.name not in body
                     and f.default is MISSING and f.default_factory is MISSING)
    if missing:
        raise TrainedJudgeError(f"{path}: the model card lacks {', '.join(missing)}")
    card = ModelCard(**{key: value for key, value in body.items() if key in known})
    weights = WEIGHTS_FILES[card.kind]
    if not (directory / weights).is_file():
        raise TrainedJudgeError(f"{directory} has a model card but no {weights}")
    if check_weights and weights_digest(directory, card.kind) != card.weights_sha256:
        raise TrainedJudgeError(f"{path} is stale: the weights beside it are not the ones it "
                                "describes; train the judge again")
    return card


def trained_read_by(name: str, cache_dir: Path) -> dict[str, str]:
    """{`name`: the model its reads must come from} for a trained judge that reads LLM
    scores, {} for one that reads none (TrainedJudgeError when it is missing). Its weights
    are checked where the judge is built, right after."""
    card = read_card(judges_dir(cache_dir) / name[len(PREFIX):], check_weights=False)
    return {name: card.reader or SELF} if card.reads else {}


def feature_names(target: str, reads: Sequence[str]) -> list[str]:
    """The inputs of a signals model, in order: the question's signals, the answer's (target
    answer_ok), then each LLM read as log-odds."""
    names = list(QUESTION_SIGNALS) + (list(ANSWER_SIGNALS) if target == "answer_ok" else [])
    return names + [f"{read} (log-odds)" for read in reads]


def feature_rows(reader: SignalReader, target: str, samples: Sequence[Sample],
                 answers: Sequence[str | None], reads: Sequence[Sequence[float | None]]
                 ) -> np.ndarray:
    """One row of feature_names() per sample; `reads[i]` are sample i's read scores."""
    signals = reader.read(samples, list(answers) if target == "answer_ok" else None)
    if not reads or not len(reads[0]):
        return signals
    columns = np.column_stack([log_odds(column) for column in zip(*reads)])
    return np.hstack([signals, columns])


class TrainedJudge(Judge):
    name: ClassVar[str] = "trained"  # an instance is named trained:NAME
    requires = frozenset()  # a signals model trained with LLM reads requires theirs
    # Its own small model, 0.1-0.2 s a sample on 2 cores; with reads, cheap.
    cost: ClassVar[Cost] = "free"

    def __init__(self, directory: Path, options: PromptOptions = PromptOptions()) -> None:
        """Loads the model now, so a missing or stale judge fails before a run starts."""
        super().__init__(options)
        self.card = read_card(directory)
        self.name = f"{PREFIX}{self.card.name}"  # type: ignore[misc]
        if self.card.kind == "cross-encoder":
            self.tokenizer, self.model = load_base(directory)
            return
        path = directory / WEIGHTS_FILES["signals"]
        try:
            self.model = FeatureModel.from_dict(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise TrainedJudgeError(f"{path}: not a signals model ({exc})") from exc
        if self.model.features != feature_names(self.card.target, self.card.reads):
            raise TrainedJudgeError(f"{path}: its inputs ({', '.join(self.model.features)}) "
                                    "are not the signals this version reads: train it again")
        unknown = [read for read in self.card.reads if read not in JUDGES]
        if unknown:
            raise TrainedJudgeError(f"{directory / CARD_FILE}: it reads judges this version "
                                    f"does not have: {', '.join(unknown)}")
        self.reads = [JUDGES[read](options=options)
                      for read in self.card.reads]
        self.requires = frozenset().union(*(r.requires for r in self.reads))  # type: ignore[misc]
        self.cost = self.card.cost  # type: ignore[misc]
        self.signals = SignalReader()

    def decide(self, sample: Sample, answer: Answer, llm: TracedLLM) -> Verdict:
        if self.card.kind == "cross-encoder":
            return self._cross_encoder(sample, answer, llm)
        read = [r.decide(sample, answer, llm).score for r in self.reads]
        started = time.perf_counter()
        row = feature_rows(self.signals, self.card.target, [sample], [answer.text], [read])
        score = float(self.model.probability(row)[0])
        pushes = self.model.contributions(row)
        llm.calls.append(LLMCall(
            purpose=f"{self.name}: weigh the signals", kind="classify", parsed=score,
            messages=[], output=f"P({self.card.target}) {score:.3f}",
            seconds=time.perf_counter() - started))
        strongest = "; ".join(f"{name} {value:.2f} ({'+' if push >= 0 else '-'}"
                              f"{abs(push):.2f})" for name, value, push in pushes[:3])
        return self._verdict(score, f"the strongest pushes: {strongest}",
                             {"signals": {n: v for n, v, _ in pushes},
                              "pushes": {n: p for n, _, p in pushes}})

    def _cross_encoder(self, sample: Sample, answer: Answer, llm: TracedLLM) -> Verdict:
        answer_text = answer.text if self.card.target == "answer_ok" else None
        first, second = pair_texts(sample, answer_text)
        started = time.perf_counter()
        score = float(predict(self.tokenizer, self.model,
                              [Example(sample.id, first, second, False, "")])[0])
        llm.calls.append(LLMCall(
            purpose=f"{self.name}: classify", kind="classify", parsed=score,
            messages=[{"role": "user", "content": f"{first}\n\n{second}"}],
            output=f"P({self.card.target}) {score:.3f}", seconds=time.perf_counter() - started))
        return self._verdict(score, "", {})

    def _verdict(self, score: float, why: str, details: dict[str, Any]) -> Verdict:
        keep = score >= self.card.threshold
        what = ("the passages answer the question" if self.card.target == "answerable"
                else "the answer is right and supported")
        return Verdict(
            judge=self.name, keep=keep, score=score,
            details={"target": self.card.target, "threshold": self.card.threshold,
                     "held_out": self.card.metrics, "dataset": self.card.dataset, **details},
            rationale=(f"P({what}) = {score:.2f} ({'>=' if keep else '<'} "
                       f"{self.card.threshold:g}), by a model trained on "
                       f"{self.card.labels.get('total', 0)} labels of {self.card.dataset}"
                       + (f"; {why}" if why else "")))
