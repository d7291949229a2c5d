"""Plain data types shared across the package."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Sequence, TypedDict


class Message(TypedDict):
    role: str  # "system" | "user" | "assistant"
    content: str


@dataclass(frozen=True)
class TokenLogprob:
    """One generated (or scored) token, its log-probability and the top alternatives."""

    token: str
    logprob: float
    top: dict[str, float] = field(default_factory=dict)


def with_token_logprobs(data: dict[str, Any]) -> dict[str, Any]:
    """`data` (a dataclass read back from JSON) with its "tokens" as TokenLogprobs."""
    tokens = data.get("tokens")
    return {**data, "tokens": None if tokens is None else [TokenLogprob(**t) for t in tokens]}


@dataclass
class Completion:
    """The result of one chat call, whichever backend served it."""

    text: str
    backend: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    finish_reason: str | None = None
    cached_prompt_tokens: int = 0  # prompt tokens reused from the backend's prefix cache
    tokens: list[TokenLogprob] | None = None  # set when log-probs were asked for
    cache_hit: bool = False  # served from ragshield's call cache, not the model

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Completion:
        return cls(**with_token_logprobs(data))


@dataclass
class ContinuationScore:
    """Log-probability of a given continuation after given messages (one entry per token)."""

    tokens: list[TokenLogprob]
    backend: str
    model: str
    seconds: float
    cache_hit: bool = False

    @property
    def total_logprob(self) -> float:
        return sum(t.logprob for t in self.tokens)

    @property
    def mean_logprob(self) -> float:
        return self.total_logprob / len(self.tokens) if self.tokens else float("nan")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ContinuationScore:
        return cls(**{**data, "tokens": [TokenLogprob(**t) for t in data["tokens"]]})


@dataclass
class Passage:
    """A piece of text shown to the model: given by a dataset or found by retrieval."""

    text: str
    title: str | None = None
    doc_id: str | None = None  # the document (or chunk) it comes from
    score: float | None = None  # retrieval score, when retrieved
    meta: dict[str, Any] = field(default_factory=dict)  # offsets, relevance flags, source...


@dataclass
class GivenAnswer:
    """An answer written by an outside system and read from a dataset, to be judged as it is."""

    text: str
    model: str | None = None  # the model that wrote it, when known
    tokens: list[TokenLogprob] | None = None  # its tokens' log-probs, when the system gave them
    cited: list[int] | None = None  # indices of the passages it cites, when known

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GivenAnswer:
        return cls(**with_token_logprobs(data))


@dataclass
class Sample:
    """One question with its passages and what is known about its answer (docs/METHODS.md 1)."""

    id: str
    question: str
    passages: list[Passage] = field(default_factory=list)
    reference_answers: list[str] = field(default_factory=list)
    answerable: bool | None = None  # do the passages contain an answer, when known
    meta: dict[str, Any] = field(default_factory=dict)  # domain, question type, query time...
    given_answer: GivenAnswer | None = None  # an outside system's answer, judged as it is


# The kind of a trace entry that is no model call: a given answer's text with the log-probs
# its own system reported, kept where judges look for a generation's log-probs.
GIVEN_CALL = "given"


@dataclass
class LLMCall:
    """One model call made by an answerer or a judge, as shown in a case study."""

    purpose: str  # e.g. "base answer", "cf-quality round 1", "fusion"
    messages: list[Message]
    output: str  # the raw text (for a scoring call: the scored continuation)
    parsed: Any = None  # the value read from the output, if any
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    cache_hit: bool = False
    seconds: float = 0.0
    kind: str = "chat"  # "chat" | "score" | "classify" | GIVEN_CALL
    logprobs: list[TokenLogprob] | None = None
    parse_error: str | None = None
    model: str = ""  # the model that served the call ("backend:model"); "" in older traces

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class CostSummary:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    cache_hits: int = 0
    seconds: float = 0.0

    @classmethod
    def of(cls, calls: list[LLMCall]) -> CostSummary:
        """The cost of the model calls among `calls` (a given answer's entry costs nothing)."""
        return cls(
            calls=sum(c.kind != GIVEN_CALL for c in calls),
            prompt_tokens=sum(c.prompt_tokens for c in calls),
            completion_tokens=sum(c.completion_tokens for c in calls),
            cached_prompt_tokens=sum(c.cached_prompt_tokens for c in calls),
            cache_hits=sum(c.cache_hit for c in calls),
            seconds=sum(c.seconds for c in calls),
        )


@dataclass
class Answer:
    """What an answerer produced for one sample, with the conversation that produced it so
    that multi-turn judges can continue it (and reuse the model's cached prefix)."""

    answerer: str
    text: str  # the parsed final answer
    raw: str  # the model's whole reply
    messages: list[Message]  # the prompt; the reply is `raw`
    evidence: list[int] = field(default_factory=list)  # indices of cited passages
    cites_internal_knowledge: bool = False
    refusal: bool = False
    parse_error: str | None = None
    calls: list[LLMCall] = field(default_factory=list)

    @property
    def conversation(self) -> list[Message]:
        """The prompt followed by the model's reply, ready for a follow-up turn."""
        return [*self.messages, {"role": "assistant", "content": self.raw}]


# The one vocabulary every face uses for what a judge (or a decision rule) did with an
# answer: kept it, withheld it ("abstain"), could not be served by the backend, or failed.
KEEP, ABSTAIN, UNAVAILABLE, ERROR = "keep", "abstain", "unavailable", "error"
OUTCOMES = (KEEP, ABSTAIN, UNAVAILABLE, ERROR)


def outcome(keep: bool | None, *, available: bool = True, error: str | None = None) -> str:
    """The outcome word of a verdict's fields: unavailable and error first, then keep or
    abstain; a verdict without a decision and without an error counts as an error."""
    if not available:
        return UNAVAILABLE
    if error or keep is None:
        return ERROR
    return KEEP if keep else ABSTAIN


def keep_word(keep: bool | None, undecided: str = "-") -> str:
    """keep / abstain for a decision, `undecided` when there is none."""
    return undecided if keep is None else KEEP if keep else ABSTAIN


@dataclass
class Verdict:
    """A judge's decision on one answer (docs/METHODS.md 1). keep is None when unavailable or
    failed."""

    judge: str
    keep: bool | None
    score: float | None = None
    rationale: str = ""
    available: bool = True
    error: str | None = None  # the judge failed (e.g. the model server was down)
    parse_error: str | None = None  # some model output could not be read; raw text in trace
    trace: list[LLMCall] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)  # judge-specific, e.g. rounds

    @property
    def cost(self) -> CostSummary:
        return CostSummary.of(self.trace)

    @property
    def outcome(self) -> str:
        return outcome(self.keep, available=self.available, error=self.error)


# The retrieval methods by name (ragshield/retrieval), for settings and forms that name one
# without loading the search libraries.
RetrievalMode = Literal["bm25", "dense", "hybrid", "rrf", "two-stage"]
# What a guard call does when its latency budget passes before the rule can decide
# (judge_budget.py): show the answer, withhold it, or answer with an error.
OnBudget = Literal["keep", "abstain", "error"]


@dataclass
class RuleDecision:
    """A decision rule's verdict on one answer (ragshield/judging.py decides)."""

    keep: bool | None  # None: the rule could not decide (its judge unavailable or failed)
    rule: str
    reason: str
    deferred: bool = False  # a policy asks a person (keep is None)


def decision_word(decision: RuleDecision | None) -> str | None:
    """"keep", "abstain", "defer" (a policy asks a person), or None when the rule could not
    decide."""
    if decision is not None and decision.deferred:
        return "defer"
    if decision is None or decision.keep is None:
        return None
    return keep_word(decision.keep)


@dataclass
class Table:
    """A titled table of plain values, as the reports and the Dashboard show it."""

    title: str
    headers: list[str]
    rows: list[list[Any]]  # text and numbers; a face renders any other cell its own way
    note: str = ""


@dataclass
class DetailTable:
    """A judge's own view of its details for a case study: a titled table of plain values,
    with optional texts (raw replies, prompts) shown folded below it. Faces render it; the
    judge decides what matters."""

    title: str
    columns: list[str]
    rows: list[list[Any]]
    texts: list[tuple[str, str]] = field(default_factory=list)  # (caption, text)


def passage_label(index: int) -> str:
    """How prompts and pages name the passage at `index`."""
    return f"Passage-{index}"


def evidence_labels(evidence: Sequence[Any] | None) -> str:
    """Cited passage ids as people read them ("Passage-0, Passage-2"), "-" for none."""
    return ", ".join(passage_label(i) if isinstance(i, int) else str(i)
                     for i in evidence or []) or "-"
