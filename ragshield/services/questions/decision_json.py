"""One JSON shape for a judged question, in every face: `ragshield ask --json`, the guard
API's answers, and `Decision.to_dict()` of the Python front door (ragshield.Shield)."""

from __future__ import annotations

from typing import Any, Mapping

from ragshield.judge_budget import unfinished_judges
from ragshield.services.questions.ask_types import AskResult
from ragshield.services.questions.asking import ABSTAIN_MESSAGE
from ragshield.services.questions.claim_marks import claim_marks
from ragshield.types import CostSummary, LLMCall, Verdict, decision_word


def cost_json(calls: list[LLMCall]) -> dict[str, Any]:
    cost = CostSummary.of(calls)
    return {"calls": cost.calls, "prompt_tokens": cost.prompt_tokens,
            "completion_tokens": cost.completion_tokens,
            "cached_prompt_tokens": cost.cached_prompt_tokens, "cache_hits": cost.cache_hits,
            "seconds": round(cost.seconds, 4)}


def verdict_json(verdict: Verdict, answer: str, trace: bool = False) -> dict[str, Any]:
    """One verdict; a support verdict's claims as spans of `answer` (claim_marks)."""
    shown: dict[str, Any] = {
        "judge": verdict.judge, "keep": verdict.keep, "score": verdict.score,
        "reason": verdict.rationale, "available": verdict.available, "error": verdict.error,
        "cost": cost_json(verdict.trace)}
    marks = claim_marks(answer, [verdict])
    if marks:
        shown["claims"] = [mark.to_dict() for mark in marks]
    if trace:
        shown["trace"] = [call.to_dict() for call in verdict.trace]
    return shown


def shown_text(result: AskResult) -> str:
    """What the user sees: the answer when kept (without its unsupported sentences when it
    was redacted), else the fallback answer or the abstain message."""
    if result.redaction is not None:
        return result.redaction.text
    if result.fallback is None:
        return result.judged.answer.text
    answer = result.fallback.answer
    return answer.text if answer is not None else ABSTAIN_MESSAGE


def decision_json(result: AskResult, seconds: Mapping[str, float] | None = None, *,
                  trace: bool = False, passages: bool = False) -> dict[str, Any]:
    """The decision (keep, abstain, defer, or None when the rule could not decide), the rule
    and why it decides, what the user sees, the answer, the fallback, every verdict with its
    reason and cost, where the time went and the live run's record."""
    judged, decision = result.judged, result.judged.decision
    answer = judged.answer
    every_call = answer.calls + [call for v in judged.verdicts for call in v.trace]
    fallback = result.fallback
    body: dict[str, Any] = {
        "decision": decision_word(decision),
        "kept": fallback is None,
        "rule": decision.rule if decision else None,
        "reason": decision.reason if decision else None,
        "rule_reason": result.prepared.rule_reason,
        "shown": shown_text(result),
        "shortened": None if result.redaction is None else {
            "removed": [list(span) for span in result.redaction.removed]},
        "question": result.prepared.sample.question,
        "answer": {"text": answer.text, "model": result.answer_model,
                   "answerer": answer.answerer, "refusal": answer.refusal,
                   "cited_passages": answer.evidence, "parse_error": answer.parse_error},
        "fallback": None if fallback is None else {
            "strategy": fallback.strategy, "model": fallback.model or None,
            "text": fallback.answer.text if fallback.answer is not None else None},
        "verdicts": [verdict_json(verdict, answer.text, trace) for verdict in judged.verdicts],
        "cost": cost_json(every_call),
        "timings_ms": {name: round(value * 1000, 1) for name, value in (seconds or {}).items()},
        "record": None if result.record is None else {
            "run_id": result.record.run_id, "dataset": result.record.dataset,
            "sample_id": result.record.sample_id, "stored": result.record.stored},
    }
    unfinished = unfinished_judges(judged.verdicts)
    if unfinished:  # the call had a latency budget, and these judges did not finish in it
        body["unfinished"] = unfinished
    if passages:
        body["passages"] = [{"text": p.text, "title": p.title, "id": p.doc_id, "score": p.score}
                            for p in result.prepared.sample.passages]
        body["passages_from"] = result.prepared.source
    if trace:
        body["answer"]["trace"] = [call.to_dict() for call in answer.calls]
        body["answer"]["raw"] = answer.raw
    return body
