"""The multi-turn and multi-sample judges with the real embedded model (Qwen2.5-0.5B via
llama.cpp) on two short hand-written samples: shapes, sane values and the cost design
(follow-up turns reuse the cached base conversation), not the model's opinions."""

from __future__ import annotations

import json

import pytest

from ragshield.answerers.evidence import EvidenceAnswerer
from ragshield.judges.counterfactual import ANSWER_TOKENS, FUSION_TOKENS, CounterfactualJudge
from ragshield.judges.dual_generation import DualGenerationJudge
from ragshield.judges.ioe import IfOrElseJudge
from ragshield.judges.self_consistency import SelfConsistencyJudge
from ragshield.types import Answer, Passage, Sample, Verdict

SAMPLES = [
    Sample(id="france", question="What is the capital of France?",
           passages=[Passage("Paris is the capital and largest city of France."),
                     Passage("Lyon is a French city known for its cuisine.")],
           reference_answers=["Paris"]),
    Sample(id="vienna", question="Which river flows through Vienna?",
           passages=[Passage("Vienna, the capital of Austria, lies on the river Danube."),
                     Passage("The Rhine flows through Basel and Cologne.")],
           reference_answers=["Danube"]),
]


def base_answer(sample: Sample, llm) -> Answer:
    return EvidenceAnswerer().answer(sample, llm)


def assert_sane(verdict: Verdict, purposes: set[str]) -> None:
    assert verdict.available and verdict.error is None
    assert isinstance(verdict.keep, bool)
    assert verdict.trace and {c.purpose for c in verdict.trace} <= purposes
    assert verdict.cost.prompt_tokens > 0 and verdict.cost.completion_tokens > 0
    assert verdict.rationale
    json.dumps(verdict.details)


def test_counterfactual_with_the_embedded_model(embedded_llm) -> None:
    purposes = {"cf-quality round 1", "cf-usage round 1", "fusion (direct) on cf-quality",
                "fusion (direct) on cf-usage"}
    ratios = []
    for sample in SAMPLES:
        # The base answer right before the judge, as in a run: its conversation is cached.
        answer = base_answer(sample, embedded_llm)
        verdict = CounterfactualJudge().judge(sample, answer, embedded_llm)
        if answer.refusal:  # nothing to challenge; discarded without calls
            assert verdict.keep is False and verdict.trace == []
            continue
        assert_sane(verdict, purposes)
        assert 0.0 <= verdict.score <= 1.0
        assert set(verdict.details["scenarios"]) == {"cf-quality", "cf-usage"}
        base_call = answer.calls[0]
        for call in verdict.trace:
            # Each follow-up reads only its own new turn (and, for fusion, the branch's reply):
            # the system text, passages, question and base reply come from the KV cache.
            assert call.cached_prompt_tokens >= base_call.prompt_tokens
            assert call.completion_tokens <= max(ANSWER_TOKENS, FUSION_TOKENS)
        ratios.append(verdict.cost.seconds / base_call.seconds)
        print(f"\n{sample.id}: base answer {base_call.seconds:.2f} s "
              f"({base_call.prompt_tokens} prompt tokens), counterfactual "
              f"{verdict.cost.seconds:.2f} s ({verdict.cost.calls} calls): "
              f"ratio {ratios[-1]:.2f}; {verdict.rationale}")
    assert ratios, "the model refused both samples"


def test_ioe_with_the_embedded_model(embedded_llm) -> None:
    sample = SAMPLES[0]
    verdict = IfOrElseJudge().judge(sample, base_answer(sample, embedded_llm), embedded_llm)
    assert_sane(verdict, {"ioe: keep or update", "ioe: choose"})
    assert 0 <= verdict.score <= 1 and isinstance(verdict.details["updated"], str)


def test_self_consistency_with_the_embedded_model(embedded_llm) -> None:
    sample = SAMPLES[1]
    answer = base_answer(sample, embedded_llm)
    verdict = SelfConsistencyJudge(k=2).judge(sample, answer, embedded_llm)
    assert_sane(verdict, {"self-consistency sample 1", "self-consistency sample 2"})
    assert verdict.score in (0.0, 0.5, 1.0) and len(verdict.details["samples"]) == 2
    # The samples repeat the base prompt word for word: all of it but the last token cached.
    assert all(c.cached_prompt_tokens >= c.prompt_tokens - 1 for c in verdict.trace)


def test_dual_generation_with_the_embedded_model(embedded_llm) -> None:
    sample = SAMPLES[0]
    verdict = DualGenerationJudge().judge(sample, base_answer(sample, embedded_llm), embedded_llm)
    assert verdict.available and verdict.error is None and isinstance(verdict.keep, bool)
    assert [c.kind for c in verdict.trace] == ["score", "chat", "score"]
    rag, norag = verdict.details["rag_mean_logprob"], verdict.details["norag_mean_logprob"]
    assert rag <= 0 and norag <= 0
    assert verdict.score == pytest.approx(rag - norag)
