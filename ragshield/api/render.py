"""The guard API's answers as JSON: a judged call (decision, verdicts with their reasons,
cost and time) and, for the proxy, the upstream's completion with what the user may see."""

from __future__ import annotations

import copy
from typing import Any

from ragshield.judging import decision_word
from ragshield.services.asking import ABSTAIN_MESSAGE, AskResult
from ragshield.services.guard import Guarded
from ragshield.types import CostSummary, LLMCall, Verdict


def _cost(calls: list[LLMCall]) -> dict[str, Any]:
    cost = CostSummary.of(calls)
    return {"calls": cost.calls, "prompt_tokens": cost.prompt_tokens,
            "completion_tokens": cost.completion_tokens,
            "cached_prompt_tokens": cost.cached_prompt_tokens, "cache_hits": cost.cache_hits,
            "seconds": round(cost.seconds, 4)}


def _verdict(verdict: Verdict, trace: bool) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "judge": verdict.judge, "keep": verdict.keep, "score": verdict.score,
        "reason": verdict.rationale, "available": verdict.available, "error": verdict.error,
        "cost": _cost(verdict.trace)}
    if trace:
        shown["trace"] = [call.to_dict() for call in verdict.trace]
    return shown


def shown_text(result: AskResult) -> str:
    """What the user sees: the answer when kept, else the fallback answer or the abstain
    message."""
    if result.fallback is None:
        return result.judged.answer.text
    answer = result.fallback.answer
    return answer.text if answer is not None else ABSTAIN_MESSAGE


def judged_json(guarded: Guarded, *, trace: bool = False,
                passages: bool = False) -> dict[str, Any]:
    result = guarded.result
    judged, decision = result.judged, result.judged.decision
    answer = judged.answer
    every_call = answer.calls + [call for v in judged.verdicts for call in v.trace]
    fallback = result.fallback
    body: dict[str, Any] = {
        # "keep", "abstain", "defer" (a policy asks a person), or None: undecided
        "decision": decision_word(decision),
        "kept": fallback is None,
        "rule": decision.rule if decision else None,
        "reason": decision.reason if decision else None,
        "shown": shown_text(result),
        "answer": {"text": answer.text, "model": result.answer_model,
                   "refusal": answer.refusal, "cited_passages": answer.evidence},
        "fallback": None if fallback is None else {
            "strategy": fallback.strategy, "model": fallback.model or None,
            "text": fallback.answer.text if fallback.answer is not None else None},
        "verdicts": [_verdict(verdict, trace) for verdict in judged.verdicts],
        "cost": _cost(every_call),
        "timings_ms": {name: round(seconds * 1000, 1)
                       for name, seconds in guarded.seconds.items()},
        "record": None if result.record is None else {
            "run_id": result.record.run_id, "dataset": result.record.dataset,
            "sample_id": result.record.sample_id, "stored": result.record.stored},
    }
    if passages:
        body["passages"] = [{"text": p.text, "title": p.title, "id": p.doc_id, "score": p.score}
                            for p in result.prepared.sample.passages]
        body["passages_from"] = result.prepared.source
    if trace:
        body["answer"]["trace"] = [call.to_dict() for call in answer.calls]
    return body


def completion_json(guarded: Guarded) -> dict[str, Any]:
    """The upstream's completion as it came, except that a withheld answer is replaced by
    what the user may see (and its token log-probs, which would spell it out, removed);
    ragshield's verdicts ride along in the extra field `ragshield`."""
    assert guarded.upstream is not None
    body = copy.deepcopy(guarded.upstream.body)
    choice = body["choices"][0]
    if guarded.result.fallback is not None:
        choice["message"]["content"] = shown_text(guarded.result)
        choice.pop("logprobs", None)
    body["ragshield"] = judged_json(guarded)
    return body
