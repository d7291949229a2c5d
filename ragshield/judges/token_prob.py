"""Answer token probability (docs/METHODS.md 4.12): how sure the model was of the reply it generated.

The log-probs of the base answer's generation call are used when the answer carries them;
otherwise the reply is re-scored after its prompt with `score()`. The judge declares SCORE
because it cannot know in advance which case it meets.

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
from ragshield.llm.base import SCORE
from ragshield.llm.traced import TracedLLM
from ragshield.types import Answer, Sample, TokenLogprob, Verdict


def generation_logprobs(answer: Answer) -> list[TokenLogprob] | None:
    """The per-token log-probs recorded when the answer's reply was generated, if any."""
    for call in reversed(answer.calls):
        if call.kind == "chat" and call.output == answer.raw:
            return call.logprobs or None
    return None


class TokenProbJudge(Judge):
    name = "token_prob"
    cost = "free"
    requires = frozenset({SCORE})

    def __init__(self, threshold: float = 0.7, options: PromptOptions = PromptOptions()) -> None:
        super().__init__(options)
        self.threshold = threshold

    def decide(self, sample: Sample, answer: Answer, llm: TracedLLM) -> Verdict:
        if not answer.raw.strip():
            return Verdict(judge=self.name, keep=False, score=None, parse_error="empty answer",
                           rationale="empty answer: nothing to score; withheld")
        tokens = generation_logprobs(answer)
        source = "generation"
        if tokens is None:
            tokens = llm.score(answer.messages, answer.raw, purpose=f"{self.name}: re-score").tokens
            source = "re-scored"
        logprobs = [t.logprob for t in tokens]
        mean = sum(logprobs) / len(logprobs)
        weakest = min(tokens, key=lambda t: t.logprob)
        score = math.exp(mean)
        keep = score >= self.threshold
        return Verdict(
            judge=self.name, keep=keep, score=score,
            rationale=(f"mean token probability {score:.2f} over {len(tokens)} tokens "
                       f"({'>=' if keep else '<'} threshold {self.threshold:g}); least sure of "
                       f"{weakest.token!r} (p = {math.exp(weakest.logprob):.2f})"),
            details={"source": source, "tokens": len(tokens), "mean_logprob": mean,
                     "min_logprob": weakest.logprob, "min_token": weakest.token,
                     "threshold": self.threshold},
        )
