"""Self-consistency (docs/METHODS.md 4.12): sample k more answers to the base answer's own prompt
(temperature 0.7, seeds 1..k) and compare each with the base (greedy) answer.

keep = the share of samples that match the base answer (matcher of docs/METHODS.md 2) >=
threshold. score = the samples' mean agreement with the base answer: a matching sample counts
1, another its word overlap with it (`answer_agreement`, at most 0.7), so that k samples give
a graded score rather than k+1 levels. The score is never below the share, and ranks a base
answer that the samples nearly repeat above one they contradict.

The samples reuse the base prompt word for word, so the backend's cached prefix covers all
of it and only generation costs; and since only their answers are compared, a sample stops
where an evidence line would begin (about half of an evidence answer's tokens). Samples are
read with the answerers' parser (final answer after a "Response:"/"Final Answer:" label when
present, else the first line); an empty sample counts as a refusal and matches only a refusal.
"""

from __future__ import annotations

from ragshield.answerers.base import Answerer
from ragshield.answerers.context import PromptOptions
from ragshield.answerers.prompted import REASONING_TOKENS
from ragshield.errors import OptionError
from ragshield.judges.base import Judge
from ragshield.judges.follow_up import ask_answer
from ragshield.llm.traced import TracedLLM
from ragshield.metrics.correctness import answer_agreement
from ragshield.types import Answer, Sample, Verdict

# Enough for the reasoning answerers' replies (answer plus rationale); short replies stop
# early, so the cap costs nothing for them.
MAX_TOKENS = Answerer.max_tokens + REASONING_TOKENS
STOP_BEFORE_EVIDENCE = ["\nEvidence"]


class SelfConsistencyJudge(Judge):
    name = "self_consistency"
    cost = "costly"
    continues_answer = True

    def __init__(
        self, k: int = 5, temperature: float = 0.7, threshold: float = 0.5,
        max_tokens: int = MAX_TOKENS, options: PromptOptions = PromptOptions(),
    ) -> None:
        super().__init__(options)
        if not (isinstance(k, int) and k >= 1):
            raise OptionError(f"k must be a positive integer; got {k!r}")
        if temperature <= 0:
            raise OptionError(f"temperature must be > 0 for samples to differ; got {temperature!r}")
        self.k = k
        self.temperature = temperature
        self.threshold = threshold
        self.max_tokens = max_tokens

    def decide(self, sample: Sample, answer: Answer, llm: TracedLLM) -> Verdict:
        samples = [
            ask_answer(llm, answer.messages, len(sample.passages),
                       purpose=f"self-consistency sample {seed}", max_tokens=self.max_tokens,
                       temperature=self.temperature, seed=seed, stop=STOP_BEFORE_EVIDENCE)
            for seed in range(1, self.k + 1)
        ]
        agreements = [answer_agreement(s.text, answer.text) for s in samples]
        matches = [agreement == 1.0 for agreement in agreements]
        share, score = sum(matches) / self.k, sum(agreements) / self.k
        keep = share >= self.threshold
        others = sorted({s.text for s, same in zip(samples, matches) if not same})
        return Verdict(
            judge=self.name, keep=keep, score=score,
            rationale=(f"{sum(matches)}/{self.k} samples agree with {answer.text!r} "
                       f"({'>=' if keep else '<'} threshold {self.threshold:g}); mean "
                       f"agreement {score:.2f}"
                       + (f"; others said {', '.join(map(repr, others))}" if others else "")),
            details={"base": answer.text, "temperature": self.temperature,
                     "threshold": self.threshold,
                     "samples": [{"seed": seed, "answer": s.text, "raw": s.raw, "match": same,
                                  "agreement": round(agreement, 4)}
                                 for seed, (s, same, agreement)
                                 in enumerate(zip(samples, matches, agreements), 1)]},
        )
