"""One answer as a person shows it on a screen to someone who has never seen the tool: the
question, the answer with the sentences the passages do not vouch for marked, whether it was
shown and the one reason in plain words, and the passages with the sentence that supports the
answer highlighted.

The supporting sentence of a passage is the one sharing the most words with the claim (or,
without the support judge's marks, with the answer) among the passages the support judge
matched to each claim (or the answer cited); it is a pointer for the reader, not a judgement:
the judges' verdicts say whether the answer is supported."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ragshield.claims import split_claims
from ragshield.services.questions.claim_marks import ClaimMark, unsupported
from ragshield.types import RuleDecision

_WORD = re.compile(r"[^\W_]+")
# Words too common to say that two sentences speak of the same thing.
_COMMON = frozenset("a an the of in on at to for and or is are was were be by with as it its "
                    "that this from which who what when where how".split())
MIN_SHARED = 2  # words a sentence must share with the claim (or all, of a shorter claim)
QUOTED_CHARS = 160  # of an unsupported sentence quoted in the reason


@dataclass(frozen=True)
class PanelPassage:
    title: str
    text: str
    highlights: tuple[tuple[int, int], ...]  # spans of text[start:end] that support the answer


@dataclass(frozen=True)
class AnswerPanel:
    question: str
    answer: str
    marks: tuple[ClaimMark, ...]
    outcome: str  # shown, withheld, asked a person, not decided
    reason: str  # one sentence in plain words
    passages: tuple[PanelPassage, ...]


def _words(text: str) -> set[str]:
    return {w for w in (m.group().lower() for m in _WORD.finditer(text)) if w not in _COMMON}


def supporting_sentence(passage: str, claim: str) -> tuple[int, int] | None:
    """The span of the passage's sentence sharing the most words with `claim` (at least
    MIN_SHARED, or every word of a shorter claim), None when none does."""
    wanted = _words(claim)
    best, span = min(MIN_SHARED, len(wanted)) - 1, None
    if not wanted:
        return None
    for sentence in split_claims(passage, limit=10_000):
        shared = len(wanted & _words(sentence.text))
        if shared > best:
            best, span = shared, (sentence.start, sentence.end)
    return span


def _outcome(decision: RuleDecision | None) -> str:
    if decision is None or (decision.keep is None and not decision.deferred):
        return "not decided"
    if decision.deferred:
        return "asked a person"
    return "shown" if decision.keep else "withheld"


def _quoted(text: str) -> str:
    text = " ".join(text.split())
    return f"“{text if len(text) <= QUOTED_CHARS else text[:QUOTED_CHARS - 1] + '…'}”"


def plain_reason(answer: str, marks: Sequence[ClaimMark], decision: RuleDecision | None,
                 refusal: bool) -> str:
    """Why, in one sentence a stakeholder reads: what the passages do not say, that they say
    all of it, that the model said it does not know, or else the rule's own reason."""
    outcome = _outcome(decision)
    lead = outcome[0].upper() + outcome[1:]
    if refusal:
        return f"{lead}: the model said it does not know."
    failing = unsupported(marks)
    if failing:
        more = f" (and {len(failing) - 1} more sentences)" if len(failing) > 1 else ""
        though = ", though" if outcome == "shown" else ":"
        return (f"{lead}{though} the passages do not say "
                f"{_quoted(answer[failing[0].start:failing[0].end])}{more}.")
    if marks and outcome == "shown":
        return f"{lead}: the passages say every sentence of the answer."
    reason = decision.reason if decision is not None and decision.reason else "no rule ran"
    return f"{lead}: {reason}."


def _highlights(passages: Sequence[Mapping[str, Any]], answer: str,
                marks: Sequence[ClaimMark], cited: Sequence[Any]) -> list[set[tuple[int, int]]]:
    spans: list[set[tuple[int, int]]] = [set() for _ in passages]
    if marks:
        pointers = [(m.passage, answer[m.start:m.end]) for m in marks if m.supported is True]
    else:
        pointers = [(index, answer) for index in cited]
    for index, text in pointers:
        if type(index) is int and 0 <= index < len(passages):
            span = supporting_sentence(str(passages[index].get("text") or ""), text)
            if span is not None:
                spans[index].add(span)
    return spans


def answer_panel(question: str, answer: str, passages: Sequence[Mapping[str, Any]],
                 marks: Sequence[ClaimMark], decision: RuleDecision | None, *,
                 refusal: bool = False, cited: Sequence[Any] = ()) -> AnswerPanel:
    """The panel of one answer: `passages` as stored (text, title), `marks` the support
    judge's (claim_marks), `cited` the passages the answer cites (its evidence)."""
    spans = _highlights(passages, answer, marks, cited)
    shown = tuple(PanelPassage(str(p.get("title") or ""), str(p.get("text") or ""),
                               tuple(sorted(s))) for p, s in zip(passages, spans))
    return AnswerPanel(question, answer, tuple(marks), _outcome(decision),
                       plain_reason(answer, marks, decision, refusal), shown)
