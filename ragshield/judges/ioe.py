"""If-or-Else (docs/METHODS.md 4.8): continuing the answer's conversation, ask the model to keep its
answer if it is very confident and to update it otherwise. An unchanged answer (matcher of
docs/METHODS.md 2) is kept. A changed one leads to a second question, continuing the same
conversation: which of the two answers is correct, A (the original) or B (the update)?
The answer is kept only if the model goes back to A.

Score (with a backend that gives log-probs): the probability that the update begins as
the original answer does, read from the distribution of the update's first answer token
(`readers.same_start_probability`): how firmly the model stood by its answer, which the
written reply, almost always a repeat on a small model, does not show. Without log-probs,
or when that token cannot be found, the verdict is hard (score None).
An empty update or an unreadable choice discards (flagged as a parse error): the model did
not stand by its answer when asked, and withholding is the conservative side.
"""

from __future__ import annotations

import re

from ragshield.judges.base import Judge
from ragshield.judges.follow_up import ask_answer, ask_value, follow_up
from ragshield.judges.readers import same_start_probability
from ragshield.llm.base import LOGPROBS
from ragshield.llm.traced import TracedLLM
from ragshield.metrics.correctness import same_answer
from ragshield.types import Answer, Sample, Verdict

ANSWER_TOKENS = 32
CHOICE_TOKENS = 8
TOP_LOGPROBS = 10

UPDATE_QUESTION = (
    "If you are very confident in your answer, keep it: repeat it. Otherwise, update it. "
    "Reply in one line:\nAnswer: <your final short answer>"
)
CHOICE_QUESTION = (
    "Which answer to the question is correct?\nA: {original}\nB: {updated}\n"
    "Reply with only the letter A or B."
)

# "A", "(B)", "B.", "A: Paris", "**A**", "B is correct" at the start (not the article in
# "A city in France"); or "answer A", "Answer: B", "the answer is B", "option (B)" anywhere.
_LEADING_LETTER = re.compile(r"^[\W_]*([AB])(?=\s*$|[.,:;!)\]*]|\s+is\b)")
# The letter must be a capital: "the answer is a city" names no option.
_NAMED_LETTER = re.compile(r"\b(?i:answer|option|choice)(?:\s+is)?\s*[\"'(*:]*\s*([AB])\b")


def read_choice(text: str, original: str, updated: str) -> str | None:
    """"A" or "B" from a reply, tolerantly: a leading capital letter, a named option, or the
    reply repeating exactly one of the two answers. None when it cannot tell."""
    text = text or ""
    if match := _LEADING_LETTER.match(text):
        return match.group(1)
    named = set(_NAMED_LETTER.findall(text))
    if len(named) == 1:
        return named.pop()
    if text.strip():
        repeats_a, repeats_b = same_answer(text, original), same_answer(text, updated)
        if repeats_a != repeats_b:
            return "A" if repeats_a else "B"
    return None


class IfOrElseJudge(Judge):
    name = "ioe"
    continues_answer = True
    cost = "moderate"  # a whole new answer (up to 32 tokens), then often a second question

    def decide(self, sample: Sample, answer: Answer, llm: TracedLLM) -> Verdict:
        update = ask_answer(llm, follow_up(answer.conversation, UPDATE_QUESTION),
                            len(sample.passages), purpose="ioe: keep or update",
                            max_tokens=ANSWER_TOKENS,
                            top_logprobs=TOP_LOGPROBS if LOGPROBS in llm.capabilities else 0)
        score = (same_start_probability(update.tokens, "Answer:", answer.text)
                 if update.tokens else None)
        details = {"original": answer.text, "updated": update.text, "raw": update.raw,
                   "changed": False, "choice": None, "p_same_start": score}
        firm = "" if score is None else f"; P(it starts the same way) = {score:.2f}"
        if not update.text:
            return Verdict(judge=self.name, keep=False, details=details,
                           parse_error="empty reply to keep-or-update",
                           rationale=f"no answer read in {update.raw!r}; withheld")
        if same_answer(update.text, answer.text):
            return Verdict(judge=self.name, keep=True, score=score, details=details,
                           rationale=f"the model kept its answer ({update.text!r}){firm}")
        details["changed"] = True
        question = CHOICE_QUESTION.format(original=answer.text, updated=update.text)
        choice, reply = ask_value(
            llm, follow_up(update.conversation, question),
            lambda text: read_choice(text, answer.text, update.text),
            purpose="ioe: choose", max_tokens=CHOICE_TOKENS, unreadable="neither A nor B",
        )
        details.update(choice=choice, choice_reply=reply)
        changed = f"the model changed its answer to {update.text!r}"
        if choice is None:
            return Verdict(judge=self.name, keep=False, score=score, details=details,
                           parse_error=f"no choice of A or B in {reply!r}",
                           rationale=f"{changed} and its choice was unreadable; withheld{firm}")
        if choice == "A":
            return Verdict(judge=self.name, keep=True, score=score, details=details,
                           rationale=f"{changed}, then chose the original "
                                     f"{answer.text!r}{firm}")
        return Verdict(judge=self.name, keep=False, score=score, details=details,
                       rationale=f"{changed} and chose the update{firm}")
