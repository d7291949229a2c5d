"""Partial answers: what to do with an answer some of whose sentences the passages do not
support (`on_unsupported`, per request and per API key).

- "withhold" (the default): the decision rule decides on the whole answer, as it always has.
- "redact": the answer is shown without its unsupported sentences, marked as shortened,
  when what remains still answers the question and the rule would keep it so shortened.
  What remains still answers the question when its first sentence is left: an answer states
  what it answers first and explains after (measured on LFQA-Verification, docs/QUALITY.md,
  "Support judge"). The rule decides again with the support judge's score of the remaining
  sentences (the least supported of them); the other judges' verdicts stand as they are.

Nothing is redacted without a support verdict that checked the answer claim by claim.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from typing import Literal, get_args

from ragshield.decision_rule import Rule
from ragshield.judging import JudgedSample, decide
from ragshield.services.questions.claim_marks import (SUPPORT, ClaimMark, claim_marks, redacted,
                                                      unsupported)
from ragshield.types import KEEP, RuleDecision, decision_word

OnUnsupported = Literal["withhold", "redact"]
ON_UNSUPPORTED: tuple[OnUnsupported, ...] = get_args(OnUnsupported)
WITHHOLD, REDACT = ON_UNSUPPORTED


@dataclass(frozen=True)
class Redaction:
    """An answer shown shortened: its text without the unsupported sentences, the spans
    taken out, and the decision on what remains."""

    text: str
    removed: list[tuple[int, int]]
    decision: RuleDecision


def still_answers(marks: list[ClaimMark]) -> bool:
    """Whether the supported sentences still answer the question: the first is among them."""
    return bool(marks) and marks[0].supported is True


def redaction(judged: JudgedSample, rule: Rule,
              on_unsupported: OnUnsupported) -> Redaction | None:
    """The shortened answer to show, or None: not asked for, nothing unsupported, nothing
    supported, what remains answers nothing, or the rule withholds it even shortened."""
    if on_unsupported != REDACT or judged.answer.refusal:
        return None
    marks = claim_marks(judged.answer.text, judged.verdicts)
    cut = unsupported(marks)
    if not cut or len(cut) == len(marks) or not still_answers(marks):
        return None
    remaining = min(m.score for m in marks if m.supported is True and m.score is not None)
    verdicts = [replace(v, keep=True, score=remaining,
                        rationale=f"{v.rationale}; without its {len(cut)} unsupported "
                                  f"sentences, the least supported left at {remaining:.2f}")
                if v.judge == SUPPORT else v for v in judged.verdicts]
    again = decide(verdicts, rule, judged.answer.refusal)
    if decision_word(again) != KEEP:
        return None
    words = "sentence" if len(cut) == 1 else "sentences"
    decision = RuleDecision(True, again.rule, f"shown shortened, without {len(cut)} unsupported "
                                              f"{words} (on_unsupported=redact): {again.reason}")
    return Redaction(redacted(judged.answer.text, marks), [(m.start, m.end) for m in cut],
                     decision)
