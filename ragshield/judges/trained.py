"""A judge that learnt from labels: a cross-encoder fine-tuned by `ragshield judges train`
(ragshield.judges.training), kept in the cache directory with its model card, and used by
the name `trained:NAME` like any other judge. No LLM call: it reads the question (with the
answer, for target answer_ok) and the passages, and its score is P(good).

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
from typing import Any, ClassVar

from ragshield.answerers.context import PromptOptions
from ragshield.errors import UserError
from ragshield.judges.base import Judge
from ragshield.judges.training import Example, load_base, pair_texts, predict
from ragshield.llm.traced import TracedLLM
from ragshield.types import Answer, LLMCall, Sample, Verdict

PREFIX = "trained:"
CARD_FILE = "ragshield-judge.json"
CARD_FORMAT = "ragshield-trained-judge/1"
WEIGHTS_FILE = "model.safetensors"
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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def judges_dir(cache_dir: Path) -> Path:
    return cache_dir / "judges"


def weights_digest(directory: Path) -> str:
    digest = hashlib.sha256()
    with open(directory / WEIGHTS_FILE, "rb") as weights:
        for block in iter(lambda: weights.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_card(directory: Path) -> ModelCard:
    """The card of a trained judge's directory, checked against its weights."""
    path = directory / CARD_FILE
    if not directory.is_dir():
        raise TrainedJudgeError(f"no trained judge at {directory} (train one with `python -m "
                                "ragshield judges train NAME --dataset D`)")
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TrainedJudgeError(f"{directory} is not a trained judge: it has no {CARD_FILE}")
    except (OSError, ValueError) as exc:
        raise TrainedJudgeError(f"{path}: unreadable model card ({exc})") from exc
    if not isinstance(body, dict) or body.get("format") != CARD_FORMAT:
        found = body.get("format") if isinstance(body, dict) else type(body).__name__
        raise TrainedJudgeError(f"{path}: a model card of format {found!r}, expected "
                                f"{CARD_FORMAT!r}: train the judge again")
    known = {f.name for f in fields(ModelCard)}
    missing = sorted(f.name for f in fields(ModelCard) if f.name not in body
                     and f.default is MISSING and f.default_factory is MISSING)
    if missing:
        raise TrainedJudgeError(f"{path}: the model card lacks {', '.join(missing)}")
    card = ModelCard(**{key: value for key, value in body.items() if key in known})
    if not (directory / WEIGHTS_FILE).is_file():
        raise TrainedJudgeError(f"{directory} has a model card but no {WEIGHTS_FILE}")
    if weights_digest(directory) != card.weights_sha256:
        raise TrainedJudgeError(f"{path} is stale: the weights beside it are not the ones it "
                                "describes; train the judge again")
    return card


class TrainedJudge(Judge):
    name: ClassVar[str] = "trained"  # an instance is named trained:NAME
    requires = frozenset()
    cost = "free"  # no LLM call: its own small model, about 30 ms a sample on 2 cores

    def __init__(self, directory: Path, options: PromptOptions = PromptOptions()) -> None:
        """Loads the model now, so a missing or stale judge fails before a run starts."""
        super().__init__(options)
        self.card = read_card(directory)
        self.name = f"{PREFIX}{self.card.name}"  # type: ignore[misc]
        self.tokenizer, self.model = load_base(directory)

    def decide(self, sample: Sample, answer: Answer, llm: TracedLLM) -> Verdict:
        answer_text = answer.text if self.card.target == "answer_ok" else None
        first, second = pair_texts(sample, answer_text)
        started = time.perf_counter()
        score = float(predict(self.tokenizer, self.model,
                              [Example(sample.id, first, second, False, "")])[0])
        llm.calls.append(LLMCall(
            purpose=f"{self.name}: classify", kind="classify", parsed=score,
            messages=[{"role": "user", "content": f"{first}\n\n{second}"}],
            output=f"P({self.card.target}) {score:.3f}", seconds=time.perf_counter() - started))
        keep = score >= self.card.threshold
        what = ("the passages answer the question" if self.card.target == "answerable"
                else "the answer is right and supported")
        return Verdict(
            judge=self.name, keep=keep, score=score,
            details={"target": self.card.target, "threshold": self.card.threshold,
                     "held_out": self.card.metrics, "dataset": self.card.dataset},
            rationale=(f"P({what}) = {score:.2f} ({'>=' if keep else '<'} "
                       f"{self.card.threshold:g}), by a model trained on "
                       f"{self.card.labels.get('total', 0)} labels of {self.card.dataset}"))
