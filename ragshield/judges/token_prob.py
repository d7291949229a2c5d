"""Answer token probability (docs/METHODS.md 4.12): how sure the model was of the reply it
generated.

The log-probs of the base answer's generation call are used when the answer carries them,
and so are those an outside system gave with a given answer; otherwise the reply is
re-scored after its prompt with `score()` (the judge model's continuation score). `details`
and the rationale say which: source "generation", "given" or "re-scored". The judge declares
SCORE, which only the re-scoring needs: an answer that carries its log-probs is judged by a
model without it (an OpenAI-compatible server that returned them with the answer).

score = exp(mean token log-prob) of the whole reply (`answer.raw`, as generated): the
geometric-mean token probability, in (0, 1], higher = more trustworthy. The mean and min
log-probs are in `details`. keep = score >= threshold; the default is a placeholder until a
threshold is fitted on labelled samples (docs/METHODS.md 4.12, risk-controlled threshold).
An empty reply has nothing to score: it is discarded with a parse error.
"""

from __future__ import annotations

import math

from ragshield.answerers.context import PromptOptions
from ragshield.judges.base import Judge
from ragshield.llm.base import LLM, SCORE
from ragshield.llm.traced import TracedLLM
from ragshield.types import GIVEN_CALL, Answer, Sample, TokenLogprob, Verdict


SOURCES = {"chat": "generation", GIVEN_CALL: "given"}  # trace entry kind -> source
SOURCE_WORDS = {"generation": "log-probs of its generation", "given": "given log-probs",
                "re-scored": "re-scored by the judge model"}


def reply_logprobs(answer: Answer) -> tuple[list[TokenLogprob], str] | None:
    """The per-token log-probs that came with the answer's reply, if any: recorded when it
    was generated, or given with it by an outside system; and which of the two."""
    for call in reversed(answer.calls):
        if call.kind in SOURCES and call.output == answer.raw:
            return (call.logprobs, SOURCES[call.kind]) if call.logprobs else None
    return None


class TokenProbJudge(Judge):
    name = "token_prob"
    cost = "free"
    requires = frozenset({SCORE})
    reads_answer_logprobs = True

    def __init__(self, threshold: float = 0.7, options: PromptOptions = PromptOptions()) -> None:
        super().__init__(options)
        self.threshold = threshold

    def missing_capabilities(self, answer: Answer, llm: LLM) -> frozenset[str]:
        if answer.raw.strip() and reply_logprobs(answer) is not None:
            return frozenset()  # nothing to re-score
        return super().missing_capabilities(answer, llm)

    def reads_model(self, sample: Sample) -> bool:
        given = sample.given_answer
        return not (given is not None and given.tokens and given.text.strip())

    def decide(self, sample: Sample, answer: Answer, llm: TracedLLM) -> Verdict:
        if not answer.raw.strip():
            return Verdict(judge=self.name, keep=False, score=None, parse_error="empty answer",
                           rationale="empty answer: nothing to score; withheld")
        recorded = reply_logprobs(answer)
        if recorded is None:
            tokens = llm.score(answer.messages, answer.raw, purpose=f"{self.name}: re-score").tokens
            source = "re-scored"
        else:
            tokens, source = recorded
        logprobs = [t.logprob for t in tokens]
        mean = sum(logprobs) / len(logprobs)
        place, weakest = min(enumerate(tokens), key=lambda item: item[1].logprob)
        score = math.exp(mean)
        keep = score >= self.threshold
        # The least sure token by its place, not its text: reasons are shown to callers that
        # a withheld answer is kept from.
        return Verdict(
            judge=self.name, keep=keep, score=score,
            rationale=(f"mean token probability {score:.2f} over {len(tokens)} tokens, "
                       f"{SOURCE_WORDS[source]} ({'>=' if keep else '<'} threshold "
                       f"{self.threshold:g}); least sure of token {place + 1} "
                       f"(p = {math.exp(weakest.logprob):.2f})"),
            details={"source": source, "tokens": len(tokens), "mean_logprob": mean,
                     "min_logprob": weakest.logprob, "min_token": weakest.token,
                     "threshold": self.threshold},
        )
