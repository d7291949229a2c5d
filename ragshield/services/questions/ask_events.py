"""What one ask reports as it goes, each step one typed event (asking.answer_and_judge posts
them; the Demo renders each as it arrives)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Union

from ragshield.services.questions.ask_types import Fallback
from ragshield.types import Answer, RuleDecision, Verdict


@dataclass(frozen=True)
class Status:
    """Words on where the ask is ("Answering…", waiting for the model)."""

    text: str


@dataclass(frozen=True)
class Partial:
    """The answer so far, where the backend streams it."""

    text: str


@dataclass(frozen=True)
class Answered:
    answer: Answer
    model: str  # the model that wrote it


@dataclass(frozen=True)
class Judged:
    verdict: Verdict


@dataclass(frozen=True)
class Decided:
    """The decision: as soon as the rule's judges are in, again when a redaction changes it."""

    decision: RuleDecision


@dataclass(frozen=True)
class FellBack:
    fallback: Fallback


@dataclass(frozen=True)
class Recorded:
    record: Any  # the live run's record of the ask (questions.live_runs.LiveRecord)


AskEvent = Union[Status, Partial, Answered, Judged, Decided, FellBack, Recorded]
Post = Callable[[AskEvent], None]
