"""The shapes of one ask, from the request to the result: the request, what settling it
decides (services/questions/settlement.py), what asking (services/questions/asking.py) makes
and what keeping it in a live run (services/questions/live_runs.py) reads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, get_args

from ragshield.answerers.base import Answerer
from ragshield.datasets.demo import DEMO_DATASET
from ragshield.judges.base import Judge
from ragshield.judges.judge_readers import JudgeReaders
from ragshield.decision_rule import Rule
from ragshield.judging import JudgedSample
from ragshield.retrieval.demo_corpus import DEMO_CORPUS_NAME
from ragshield.services.questions.redaction import WITHHOLD, OnUnsupported, Redaction
from ragshield.types import Answer, GivenAnswer, OnBudget, Passage, RetrievalMode, Sample

FallbackName = Literal["abstain message", "No-RAG answer", "larger-model answer"]
FALLBACKS: tuple[FallbackName, ...] = get_args(FallbackName)
ABSTAIN_FALLBACK, NORAG_FALLBACK, LARGER_FALLBACK = FALLBACKS


@dataclass(frozen=True)
class AskRequest:
    """One question through the system: typed (`question`, retrieved from `corpus`, or
    read with the `passages` it comes with) or stored (`sample_id` of `dataset`, with its
    own passages); `noise` random chunks of `corpus` are added either way. With
    `given_answer` (a typed question only) no model answers: the given answer is judged as
    it is. `rule` None: the default rule (settlement.default_rule: a pinned policy, else the
    configured one) where it fits the judges, else majority."""

    question: str | None = None
    sample_id: str | None = None
    dataset: str = DEMO_DATASET
    corpus: str = DEMO_CORPUS_NAME
    mode: RetrievalMode = "hybrid"
    k: int = 3
    noise: int = 0
    answerer: str | None = None  # None: Settings.answerer
    judges: tuple[str, ...] | None = None  # None: settlement.default_judges
    rule: str | None = None
    fallback: FallbackName = ABSTAIN_FALLBACK
    model: str | None = None  # a packaged model to answer with; None: the configured
    # A packaged model every judge reads from, or "self" (the answering model); None:
    # Settings.judge_model, and without one the measured default (judges/judge_readers.py).
    judge_model: str | None = None
    keep_record: bool = True  # keep the question, answer and verdicts in a live run
    passages: tuple[Passage, ...] | None = None  # None: retrieved (typed) or the sample's own
    given_answer: GivenAnswer | None = None  # an outside system's answer to judge
    # A latency budget for the judges (judge_budget.py; the guard's calls), and what to do
    # when the rule cannot decide within it; None: the settings' (guard_budget_ms, ...).
    budget_ms: int | None = None
    on_budget: OnBudget | None = None
    # An answer some of whose sentences the passages do not support: withheld or shown whole as the
    # rule decides ("withhold"), or shown without them ("redact"; services/questions/redaction.py).
    on_unsupported: OnUnsupported = WITHHOLD


# The defaults of an ask, for the faces that fill in what a caller left out.
ASK_DEFAULTS = AskRequest()


class DefaultRule(NamedTuple):
    """The rule that decides where none is named, and why it is the default, in words."""

    rule: str
    reason: str


@dataclass(frozen=True)
class Settlement:
    """Everything one ask will do, settled once from the request, the server's settings and
    the store (settlement.settle); nothing after it resolves a default again. The request's
    own fields (the passages, model, fallback, on_unsupported) are as it asked."""

    request: AskRequest  # checked; the API key's defaults merged in
    judges: tuple[Judge, ...]  # built with their readers' thresholds, in deciding order
    readers: JudgeReaders  # the model each judge reads from, fitted judges pinned to theirs
    rule: Rule  # parsed once, a fitted rule read (the stored policy, the shipped rule)
    rule_note: str | None  # set when the default rule did not fit the judges
    rule_reason: str  # why this rule decides, in words: the page and the API show it
    answerer: str  # the answerer's name (the given-answer one for a given answer)
    budget_ms: int | None  # the judges' latency budget of a guard call (None: none)
    on_budget: OnBudget  # what a guard call does when the rule cannot decide within it


@dataclass(frozen=True)
class Prepared:
    """A settled request made concrete: the sample with its passages, where they came from
    in words, and the answerer that will write the answer."""

    settled: Settlement
    sample: Sample
    source: str
    answerer: Answerer

    @property
    def request(self) -> AskRequest:
        return self.settled.request

    @property
    def judges(self) -> tuple[Judge, ...]:
        return self.settled.judges

    @property
    def rule(self) -> Rule:
        return self.settled.rule

    @property
    def rule_note(self) -> str | None:
        return self.settled.rule_note

    @property
    def rule_reason(self) -> str:
        return self.settled.rule_reason

    @property
    def readers(self) -> JudgeReaders:
        return self.settled.readers

    @property
    def needs_model(self) -> bool:
        """Whether the ask calls a model: to write the answer, for a judge that reads one
        (it requires a capability of it), or for a fallback answer. Without one it neither
        opens a model nor waits for its turn at one."""
        return (self.request.given_answer is None or self.request.fallback != ABSTAIN_FALLBACK
                or any(judge.reads_model(self.sample) for judge in self.judges))


@dataclass(frozen=True)
class Fallback:
    """What the user sees instead of an answer that was not kept: the fixed abstain message
    (no answer) or another answer to the same question."""

    strategy: FallbackName
    answer: Answer | None = None
    model: str = ""


@dataclass
class AskResult:
    prepared: Prepared
    judged: JudgedSample
    model: str  # the model that answered
    fallback: Fallback | None = None  # None when the answer was kept
    redaction: Redaction | None = None  # the answer shown shortened (on_unsupported=redact)
    record: Any = None  # the live run's record of this ask (questions.live_runs.LiveRecord)

    @property
    def answer_model(self) -> str | None:
        """The model that wrote the answer: the outside system's for a given answer (None
        when it did not say), else ours."""
        given = self.prepared.request.given_answer
        return given.model if given is not None else self.model
