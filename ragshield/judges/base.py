"""The judge protocol: a judge declares what it needs from the backend and decides.

`Judge.judge` is the one entry point. It reports a judge the backend cannot serve as
unavailable (never skipped or faked), turns a backend failure into a verdict with `error`,
and attaches the full trace of calls. Subclasses implement `decide` only.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Literal, Sequence

from ragshield.answerers.context import PromptOptions, estimated_tokens
from ragshield.llm.base import CHAT, LLM, LLMError
from ragshield.llm.traced import TracedLLM
from ragshield.types import Answer, DetailTable, GivenAnswer, Sample, Verdict


# What a judge costs on top of the base answer, as the faces present it. On a small CPU
# model a call costs the tokens of its own instructions and of its reply (the shared prefix
# is cached), about 0.5 s for a one-token reply to a question of 20-30 tokens on 2 cores.
# free: no model call (reads what the answer already carries, or a separate small model);
# cheap: one call read at its first token (a yes/no, a digit);
# moderate: a reply of a few words (an answer of its own), or one call per passage;
# costly: many calls or a long generation (counterfactual rounds, samples, reasoning).
Cost = Literal["free", "cheap", "moderate", "costly"]
COSTS: tuple[str, ...] = ("free", "cheap", "moderate", "costly")


# The most tokens of answer a cheap call reads beside its question (about 20 words): a longer
# answer makes the call as long as a re-read of the answer, a moderate one.
CHEAP_ANSWER_TOKENS = 30


def cost_for(judge: type[Judge] | Judge, given: GivenAnswer | None) -> Cost:
    """What judging an answer costs, which is not always the judge's class. For a given
    answer nothing of a generation is cached: a judge that continues the answer's
    conversation (`continues_answer`) reads the answerer's prompt and the whole answer again,
    and so does one whose cheap reading is the answer's own log-probs
    (`reads_answer_logprobs`) where the answer came without them; a judge whose question
    quotes the answer (`quotes_answer`) reads all of a long one. Each is then at least a
    moderate call. (A generated answer's length is not known when its judges are chosen.)"""
    if given is not None and (
            judge.continues_answer or (judge.reads_answer_logprobs and not given.tokens)
            or (judge.quotes_answer and estimated_tokens(given.text) > CHEAP_ANSWER_TOKENS)):
        return max(judge.cost, "moderate", key=COSTS.index)
    return judge.cost


class Judge(ABC):
    name: ClassVar[str]
    requires: ClassVar[frozenset[str]] = frozenset({CHAT})
    cost: ClassVar[Cost] = "cheap"
    # False for judges whose calls do not start with the sample's shared prefix (e.g. a
    # no-passage answer): the pipeline runs them last so they do not evict the cached prefix.
    shares_prefix: ClassVar[bool] = True
    # True for judges whose calls start with the base answer's whole prompt (they continue
    # its conversation or sample it again): run right after the base answer, they find all
    # of it, the answerer's instructions and the answer included, in the cached prefix.
    continues_answer: ClassVar[bool] = False
    # True for judges that read the answer's own token log-probs where it came with them:
    # the guard's proxy then asks its upstream for them (judges/token_prob.py).
    reads_answer_logprobs: ClassVar[bool] = False
    # True for judges whose question quotes the whole answer after the shared prefix (P(True)):
    # a long answer is read whole, at the cost of a re-read (cost_for).
    quotes_answer: ClassVar[bool] = False

    def __init__(self, options: PromptOptions = PromptOptions()) -> None:
        self.options = options

    def missing_capabilities(self, answer: Answer, llm: LLM) -> frozenset[str]:
        """What `llm` lacks of what this judge needs to judge `answer` (`requires`, unless
        the answer already carries what the judge would ask the model for)."""
        # A judge that requires nothing does not wait for a server's capability probe.
        return self.requires - llm.capabilities if self.requires else frozenset()

    def reads_model(self, sample: Sample) -> bool:
        """Whether judging `sample` calls a model (an ask that needs none opens none). A
        judge that requires nothing of the backend calls none."""
        return bool(self.requires)

    def judge(self, sample: Sample, answer: Answer, llm: LLM) -> Verdict:
        missing = self.missing_capabilities(answer, llm)
        if missing:
            return Verdict(
                judge=self.name, keep=None, available=False,
                rationale=f"unavailable: {llm.name} cannot provide {', '.join(sorted(missing))}",
            )
        traced = TracedLLM(llm)
        try:
            verdict = self.decide(sample, answer, traced)
        except LLMError as exc:
            return Verdict(judge=self.name, keep=None, error=str(exc),
                           rationale=f"error: {exc}", trace=traced.calls)
        verdict.trace = traced.calls
        return verdict

    @abstractmethod
    def decide(self, sample: Sample, answer: Answer, llm: TracedLLM) -> Verdict:
        """The judge's own logic; every model call goes through `llm` (and into the trace)."""

    @classmethod
    def rescore_run(cls, details: Sequence[dict[str, Any]]) -> list[float | None] | None:
        """Scores that need the whole run, one per verdict of this judge in the run (given
        their `details`), or None when the judge's own scores stand. A judge whose score
        compares a sample with the others (ranks, percentiles) overrides this."""
        return None

    @classmethod
    def detail_view(cls, details: dict[str, Any],
                    trace: Sequence[dict[str, Any]]) -> list[DetailTable] | None:
        """The judge's own view of a stored verdict's details for a case study, or None to
        show the details as they are."""
        return None
