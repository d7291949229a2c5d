"""Dual generation (docs/METHODS.md 4.11, after Wu et al.'s ClashEval): did the passages make
the model more confident than its own knowledge does?

The judge generates a_norag with the No-RAG answerer's prompt (system text and question, no
passages), then scores each answer's mean token log-likelihood under its own condition:
a_rag (the base answer's parsed text) after the base prompt, a_norag after the no-passage
prompt. The parsed text rather than the whole reply is scored, so that format tokens the
model predicts with near certainty (an "Evidence: ## Passage-0 ##" line) do not inflate
one side; the whole reply is scored only when no answer could be parsed from it.

The method's score compares percentile ranks over the run's samples,
pct(a_rag) - pct(a_norag); one verdict cannot see the run. So each verdict records both
means (`rag_mean_logprob`, `norag_mean_logprob`) and carries the provisional score
rag_mean - norag_mean; `rescore_run` replaces it with `percentile_scores` over the run's samples.
keep = provisional score >= threshold (default 0: the passages made the model at least as
confident as its own knowledge).

An empty no-passage answer cannot be scored: the answer is discarded (keep=False, score
None, parse_error set), the conservative side; keep=None stays for unavailable or failed
judges. Its calls do not start with the sample's shared prefix (shares_prefix = False), so
the pipeline runs it after the judges that do.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from typing import Any, Sequence, TypeGuard

from ragshield.answerers.context import PromptOptions
from ragshield.answerers.norag import NoRagAnswerer
from ragshield.judges.base import Judge
from ragshield.judges.follow_up import ask_answer
from ragshield.llm.base import CHAT, SCORE
from ragshield.llm.traced import TracedLLM
from ragshield.types import Answer, Sample, Verdict


def percentile_ranks(values: Sequence[float]) -> list[float]:
    """Each value's percentile rank in `values`, in [0, 1]: the share of values below it plus
    half the share equal to it (itself included), so ties share one rank."""
    ordered = sorted(values)
    n = len(ordered)
    return [(bisect_left(ordered, v) + bisect_right(ordered, v)) / (2 * n) for v in values]


def percentile_scores(rag: Sequence[float], norag: Sequence[float]) -> list[float]:
    """pct(a_rag) - pct(a_norag) per sample (docs/METHODS.md 4.11), each mean log-likelihood ranked
    among the run's values of its own condition. Scores lie in (-1, 1)."""
    if len(rag) != len(norag):
        raise ValueError(
            f"rag and norag need one value per sample; got {len(rag)} and {len(norag)}"
        )
    if not all(math.isfinite(v) for v in [*rag, *norag]):
        raise ValueError("mean log-likelihoods must be finite numbers (drop unscored samples)")
    return [r - n for r, n in zip(percentile_ranks(rag), percentile_ranks(norag))]


class DualGenerationJudge(Judge):
    name = "dual_generation"
    cost = "costly"
    requires = frozenset({CHAT, SCORE})
    shares_prefix = False

    def __init__(self, threshold: float = 0.0, options: PromptOptions = PromptOptions()) -> None:
        super().__init__(options)
        self.threshold = threshold
        self.norag = NoRagAnswerer(options)

    def decide(self, sample: Sample, answer: Answer, llm: TracedLLM) -> Verdict:
        a_rag = answer.text or answer.raw.strip()
        details: dict[str, object] = {"rag_answer": a_rag, "threshold": self.threshold}
        if not a_rag:
            return Verdict(judge=self.name, keep=False, details=details,
                           parse_error="empty base answer: nothing to score",
                           rationale="the base answer is empty; withheld")
        # Scored first, while the base prompt is still the backend's cached prefix.
        rag_mean = llm.score(answer.messages, a_rag,
                             purpose="dual generation: score with passages").mean_logprob
        norag_messages = self.norag.messages(sample)
        reply = ask_answer(llm, norag_messages, 0, max_tokens=self.norag.max_tokens,
                           purpose="dual generation: answer without passages")
        a_norag = reply.text or reply.raw.strip()
        details.update(norag_answer=a_norag, norag_raw=reply.raw, rag_mean_logprob=rag_mean)
        if not a_norag:
            return Verdict(judge=self.name, keep=False, details=details,
                           parse_error="empty answer without passages: nothing to score",
                           rationale="the model gave no answer without passages; withheld")
        norag_mean = llm.score(norag_messages, a_norag,
                               purpose="dual generation: score without passages").mean_logprob
        score = rag_mean - norag_mean
        keep = score >= self.threshold
        details["norag_mean_logprob"] = norag_mean
        return Verdict(
            judge=self.name, keep=keep, score=score, details=details,
            rationale=(f"mean log-likelihood {rag_mean:.2f} with passages ({a_rag!r}) vs "
                       f"{norag_mean:.2f} without ({a_norag!r}): difference {score:+.2f} "
                       f"({'>=' if keep else '<'} threshold {self.threshold:g}; provisional "
                       f"until ranked over the run)"),
        )

    @classmethod
    def rescore_run(cls, details: Sequence[dict[str, Any]]) -> list[float | None]:
        """The method's score, pct(a_rag) - pct(a_norag), over the run's verdicts; a
        verdict without both means (an empty answer) gets none."""
        means = [((d or {}).get("rag_mean_logprob"), (d or {}).get("norag_mean_logprob"))
                 for d in details]
        found = [(i, rag, norag) for i, (rag, norag) in enumerate(means)
                 if _finite(rag) and _finite(norag)]
        ranked = percentile_scores([rag for _, rag, _ in found], [norag for _, _, norag in found])
        scores: list[float | None] = [None] * len(details)
        for (i, _, _), score in zip(found, ranked):
            scores[i] = score
        return scores


def _finite(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
