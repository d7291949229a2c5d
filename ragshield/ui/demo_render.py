"""HTML of the Demo tab: the passages, the answer, each judge's badge, the decision and the
fallback, re-rendered as the judges report. Every piece of dataset or model text goes
through `esc`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence
from urllib.parse import urlencode

from ragshield.services.learning.policies import is_policy_rule
from ragshield.services.questions.ask_types import Fallback
from ragshield.services.questions.asking import ABSTAIN_MESSAGE
from ragshield.services.questions.claim_marks import ClaimMark, claim_marks
from ragshield.services.questions.live_runs import LiveRecord
from ragshield.services.rendering import fmt
from ragshield.types import (Answer, CostSummary, Passage, RuleDecision, Verdict, decision_word,
                             passage_label)
from ragshield.ui.html_render import esc, marked_answer_html, message_html, table_html

CSS = """
.rs-demo-status { color: #555; font-size: 0.9em; margin: 0.2em 0 0.6em; }
.rs-demo-section { margin: 0.8em 0; }
.rs-demo-section h4 { margin: 0 0 0.3em; }
.rs-demo-passage { border: 1px solid #ddd; border-radius: 6px; padding: 0.4em 0.6em;
  margin: 0.3em 0; }
.rs-demo-passage.rs-demo-cited { border: 2px solid #2f7d32; background: #f1f8f1; }
.rs-demo-passage-head { font-size: 0.85em; color: #555; margin-bottom: 0.2em; }
.rs-demo-passage-text { white-space: pre-wrap; overflow-wrap: anywhere; }
.rs-demo-answer { font-size: 1.15em; font-weight: 600; white-space: pre-wrap;
  overflow-wrap: anywhere; }
.rs-demo-verdict { border-bottom: 1px solid #eee; padding: 0.3em 0; }
.rs-demo-reason { white-space: pre-wrap; overflow-wrap: anywhere; }
.rs-demo-cost { font-size: 0.8em; color: #777; }
.rs-demo-badge { display: inline-block; min-width: 6.5em; text-align: center; border-radius: 4px;
  padding: 0 0.4em; margin-right: 0.5em; font-weight: 600; font-size: 0.85em; color: #fff; }
.rs-demo-badge-keep { background: #2f7d32; }
.rs-demo-badge-abstain, .rs-demo-badge-withhold { background: #c05800; }
.rs-demo-badge-answer { background: #2f7d32; }
.rs-demo-badge-ask { background: #1f5fa8; }
.rs-demo-badge-unavailable { background: #888; }
.rs-demo-badge-error { background: #a01010; }
.rs-demo-badge-pending, .rs-demo-badge-undecided { background: #ccc; color: #333; }
.rs-demo-badge-cited, .rs-demo-badge-noise { background: #e7e7e7; color: #333; min-width: 0; }
.rs-demo-decision { font-size: 1.1em; }
.rs-demo-partial { font-size: 1.15em; white-space: pre-wrap; overflow-wrap: anywhere; color: #444; }
.rs-demo-replayed { display: inline-block; background: #e8eefa; color: #1f3f78; border-radius: 4px;
  padding: 0 0.4em; margin-left: 0.5em; font-size: 0.85em; font-weight: 600; }
"""
LLM_CALLS = ("chat", "score")  # the trace entries that the call cache can answer


def badge_html(word: str, shown: str | None = None) -> str:
    return (f'<span class="rs-demo-badge rs-demo-badge-{esc(word)}">'
            f'{esc(shown or word)}</span>')


def cost_html(cost: CostSummary) -> str:
    calls = "1 call" if cost.calls == 1 else f"{cost.calls} calls"
    text = (f"{calls} · {cost.prompt_tokens} prompt + {cost.completion_tokens} "
            f"generated tokens · {cost.seconds:.2f} s")
    if cost.cache_hits:
        text += f" · {cost.cache_hits} from the call cache"
    return f'<div class="rs-demo-cost">{esc(text)}</div>'


def passage_html(index: int, passage: Passage, cited: bool) -> str:
    head = [passage_label(index)]
    if passage.doc_id:
        head.append(f"doc {passage.doc_id}")
    if passage.title:
        head.append(passage.title)
    if passage.score is not None:
        head.append(f"score {passage.score:.3f}")
    marks = (badge_html("cited") if cited else "") + (
        badge_html("noise") if passage.meta.get("noise") else "")
    css = "rs-demo-passage rs-demo-cited" if cited else "rs-demo-passage"
    return (f'<div class="{css}"><div class="rs-demo-passage-head">{marks}'
            f'{esc(" · ".join(head))}</div>'
            f'<div class="rs-demo-passage-text">{esc(passage.text)}</div></div>')


def answer_html(answer: Answer, model: str, marks: Sequence[ClaimMark] = ()) -> str:
    """The answer (its unsupported sentences marked, once the support judge has spoken), the
    answerer and model, and its cost."""
    notes = [f"{answer.answerer} answerer on {model}"]
    if answer.refusal:
        notes.append("a refusal")
    if answer.cites_internal_knowledge:
        notes.append("cites internal knowledge")
    if answer.parse_error:
        notes.append(f"parse problem: {answer.parse_error}")
    text = marked_answer_html(answer.text, marks) if answer.text else esc(answer.raw)
    return (f'<div class="rs-demo-answer">{text}</div>'
            f'<div class="rs-demo-cost">{esc("; ".join(notes))}</div>'
            + cost_html(CostSummary.of(answer.calls)))


def verdict_html(verdict: Verdict) -> str:
    score = "" if verdict.score is None else f" · score {fmt(verdict.score)}"
    parse = f" (parse problem: {verdict.parse_error})" if verdict.parse_error else ""
    readers = sorted({call.model for call in verdict.trace if call.model})
    read_by = (f'<div class="rs-demo-cost rs-demo-reader">read by {esc(", ".join(readers))}'
               f"</div>" if readers else "")
    return (f'<div class="rs-demo-verdict" data-judge="{esc(verdict.judge)}">'
            f"{badge_html(verdict.outcome)}<b>{esc(verdict.judge)}</b>{esc(score)}"
            f'<div class="rs-demo-reason">{esc(verdict.rationale + parse)}</div>'
            f"{cost_html(verdict.cost)}{read_by}</div>")


def pending_html(judge: str) -> str:
    return (f'<div class="rs-demo-verdict" data-judge="{esc(judge)}">'
            f"{badge_html('pending')}<b>{esc(judge)}</b></div>")


# A policy's decisions in its own words: it answers, withholds, or asks a person.
POLICY_WORDS = {"keep": "answer", "abstain": "withhold", "defer": "ask"}


def decision_html(decision: RuleDecision, why: str = "") -> str:
    """The decision's badge, the rule that made it and its reason, and why that rule."""
    word = decision_word(decision) or "undecided"
    if is_policy_rule(decision.rule):
        word = POLICY_WORDS.get(word, word)
    badge = badge_html(word, "ask a human" if word == "ask" else None)
    why_html = (f'<div class="rs-demo-rule-why">Why this rule: {esc(why.rstrip("."))}.</div>'
                if why else "")
    return (f'<div class="rs-demo-decision">{badge}rule <b>{esc(decision.rule)}</b>'
            f'</div><div class="rs-demo-reason">{esc(decision.reason)}</div>{why_html}')


def fallback_html(fallback: Fallback) -> str:
    if fallback.answer is None:
        return f'<div class="rs-demo-answer">{esc(ABSTAIN_MESSAGE)}</div>'
    return answer_html(fallback.answer, fallback.model)


def record_text(record: LiveRecord) -> str:
    where = f"sample {record.sample_id} of dataset {record.dataset}, live run {record.run_id}"
    return (f"Kept as {where}: browse it, label it, count it." if record.stored
            else f"Already kept today with these settings as {where}.")


def record_html(record: LiveRecord) -> str:
    """Where the ask was kept, and a link to its case study in Browse, which opens on the
    answer as a person shows it on a screen."""
    link = urlencode({"run": record.run_id, "sample": record.sample_id})
    return (f'<div class="rs-demo-record">{esc(record_text(record))} '
            f'<a class="rs-demo-screen" href="?{esc(link)}" target="_top">Show it on a screen '
            "(Browse)</a></div>")


def section(title: str, body: str, css: str) -> str:
    return f'<div class="rs-demo-section {css}"><h4>{esc(title)}</h4>{body}</div>'


@dataclass
class AskView:
    """Everything known so far about one question; `html()` renders it whole."""

    question: str
    source: str  # where the passages come from, in words
    passages: list[Passage]
    judges: list[str]  # in the order they run
    status: str = ""
    partial: str = ""  # the answer's text while the model writes it
    answer: Answer | None = None
    answer_model: str = ""
    verdicts: list[Verdict] = field(default_factory=list)
    decision: RuleDecision | None = None
    rule_reason: str = ""  # why the rule decides (Prepared.rule_reason)
    fallback: Fallback | None = None
    record: LiveRecord | None = None  # where the ask was kept
    error: str | None = None

    @property
    def replayed(self) -> bool:
        """True when the answer and every verdict so far came from the call cache alone
        (a stored question asked again with the same settings), with at least one call."""
        if self.answer is None:
            return False
        calls = [c for c in [*self.answer.calls, *(c for v in self.verdicts for c in v.trace)]
                 if c.kind in LLM_CALLS]
        return bool(calls) and all(c.cache_hit for c in calls)

    def html(self) -> str:
        cited = set(self.answer.evidence) if self.answer else set()
        passages = "".join(passage_html(i, p, i in cited) for i, p in enumerate(self.passages))
        replayed = ('<span class="rs-demo-replayed" title="every model call of this question '
                    'was answered from the call cache">replayed</span>' if self.replayed else "")
        parts = [f'<div class="rs-demo-status">{esc(self.status)}{replayed}</div>',
                 section(f"Question ({self.source})", f"<div>{esc(self.question)}</div>",
                         "rs-demo-question"),
                 section(f"Passages ({len(self.passages)})",
                         passages or "<div>no passages</div>", "rs-demo-passages")]
        if self.answer is not None:
            marks = claim_marks(self.answer.text, self.verdicts)
            parts.append(section("Answer", answer_html(self.answer, self.answer_model, marks),
                                 "rs-demo-answer-section"))
        elif self.partial:
            parts.append(section("Answer (being written)",
                                 f'<div class="rs-demo-partial">{esc(self.partial)}</div>',
                                 "rs-demo-answer-section"))
        if self.answer is not None or self.verdicts:
            done = {v.judge: v for v in self.verdicts}
            rows = "".join(verdict_html(done[j]) if j in done else pending_html(j)
                           for j in self.judges)
            parts.append(section("Judges", rows, "rs-demo-verdicts"))
        if self.decision is not None:
            parts.append(section("Decision", decision_html(self.decision, self.rule_reason),
                                 "rs-demo-decision-section"))
        if self.fallback is not None:
            parts.append(section(f"Fallback ({self.fallback.strategy})",
                                 fallback_html(self.fallback), "rs-demo-fallback"))
        if self.record is not None:
            parts.append(record_html(self.record))
        if self.error is not None:
            parts.append(message_html(self.error, "error"))
        return f'<div class="rs-demo">{"".join(parts)}</div>'


def operating_points_html(judge: str, points: dict[str, dict[str, Any]]) -> str:
    """A table of the judge's coverage and risk under each set of decisions in `points`
    (label -> ragshield.metrics.risk.risk_metrics)."""
    rows = []
    for label, metrics in points.items():
        counts = metrics["counts"]
        kept, n = counts["AK"] + counts["UK"], sum(counts.values())
        rows.append([label, f"{kept} of {n}", fmt(metrics["coverage"]), fmt(metrics["risk"]),
                     counts["AK"], counts["UK"]])
    note = ("risk = wrong answers among those kept, UK / (AK + UK); coverage = share of the "
            "answers kept, (AK + UK) / N; an answer counts as answerable when it is correct.")
    return (f"<div><b>{esc(judge)}</b></div>"
            + table_html(["decisions", "kept", "coverage", "risk", "AK", "UK"], rows,
                         table_id="rs-demo-threshold-table")
            + f'<div class="rs-demo-cost">{esc(note)}</div>')
