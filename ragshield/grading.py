"""The optional LLM grader of answer correctness (docs/METHODS.md 2, CRAG style) and its agreement
with the rule matcher.

The grader asks a model whether a prediction means the same as any reference and reads a
strict-JSON reply `{"accurate": true|false}` tolerantly: model output is untrusted, so an
unreadable reply gives `accurate=None` with the raw text and a parse error, never an
exception. Grades are cached by (question, prediction, references) through the LLM call
cache: build the model with `make_llm(settings, store=store)` and an identical request is
served from the database (the request depends only on that triple, references in their
given order, at temperature 0).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ragshield.judges.readers import read_yes_no
from ragshield.llm.base import LLM
from ragshield.metrics.agreement import kappa_from_counts
from ragshield.refusal import is_refusal
from ragshield.types import Message

GRADER_MAX_TOKENS = 24  # '{"accurate": false}' plus a little room for a fence or a space

SYSTEM_PROMPT = (
    "You grade answers to questions. You are given a question, one or more reference "
    "answers and a predicted answer. Decide whether the prediction means the same as at "
    "least one reference: the same entity, value or fact, even if it is worded differently, "
    "abbreviated or more detailed. A prediction that contradicts every reference, is about "
    "something else, or only hedges is not accurate. "
    'Reply with strict JSON and nothing else: {"accurate": true} or {"accurate": false}.'
)

_OBJECT = re.compile(r"\{[^{}]*\}")
_KEY_VALUE = re.compile(r"""["']?accurate["']?\s*[:=]\s*["']?(true|false|yes|no)\b(?!\s*\|)""",
                        re.IGNORECASE)
_WORDS = {"true": True, "yes": True, "false": False, "no": False}


@dataclass(frozen=True)
class GradeResult:
    """One grade: `accurate` is None when the reply could not be read (see parse_error)."""

    accurate: bool | None
    raw: str = ""  # the model's reply ("" when no call was made)
    parse_error: str | None = None
    cache_hit: bool = False  # served from the LLM call cache
    called: bool = False  # whether the model was asked at all


def _as_flag(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _WORDS.get(value.strip().lower())
    return None


def _json_flags(text: str) -> list[bool]:
    """`accurate` values of the JSON objects found in the text (keys in any case)."""
    flags = []
    for match in _OBJECT.finditer(text):
        try:
            data = json.loads(match.group(0))
        except ValueError:
            continue
        if isinstance(data, dict):
            for key, value in data.items():
                flag = _as_flag(value) if str(key).strip().lower() == "accurate" else None
                if flag is not None:
                    flags.append(flag)
    return flags


def parse_grade(text: str | None) -> tuple[bool | None, str | None]:
    """(accurate, parse_error) from a reply: JSON (possibly in a code fence or prose), then an
    `accurate: value` pair in any case (True, FALSE, 'yes'), then a bare leading yes/no/true/false.
    Conflicting values or nothing readable give (None, reason)."""
    text = (text or "").strip()
    if not text:
        return None, "empty reply"
    flags = _json_flags(text) or [_WORDS[m.group(1).lower()] for m in _KEY_VALUE.finditer(text)]
    if flags:
        if len(set(flags)) > 1:
            return None, "conflicting 'accurate' values in the reply"
        return flags[0], None
    said = read_yes_no(text)
    if said is not None:
        return said, None
    return None, "no 'accurate' value and no yes/no in the reply"


def grader_messages(question: str, prediction: str, references: Sequence[str]) -> list[Message]:
    """The grading request; it depends only on the triple (references in the given order)."""
    refs = "\n".join(f"- {ref}" for ref in references)
    user = (f"Question: {question}\n\nReference answers:\n{refs}\n\n"
            f"Predicted answer: {prediction}\n\n"
            'Does the predicted answer mean the same as any reference? Reply with '
            '{"accurate": true} or {"accurate": false}.')
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


class LLMGrader:
    """Grades a prediction against references with an LLM (docs/METHODS.md 2)."""

    def __init__(self, llm: LLM, *, max_tokens: int = GRADER_MAX_TOKENS) -> None:
        self.llm = llm
        self.max_tokens = max_tokens

    def grade(self, question: str, prediction: str, references: Sequence[str]) -> GradeResult:
        """A refusal (or an empty prediction, or no reference) is not accurate, without a call;
        otherwise ask the model at temperature 0 and read its reply tolerantly."""
        refs = [str(ref) for ref in references]
        if is_refusal(prediction) or not refs:
            return GradeResult(accurate=False)
        completion = self.llm.chat(grader_messages(question, prediction, refs),
                                   max_tokens=self.max_tokens, temperature=0.0, seed=0)
        accurate, error = parse_grade(completion.text)
        return GradeResult(accurate=accurate, raw=completion.text, parse_error=error,
                           cache_hit=completion.cache_hit, called=True)


def rule_llm_agreement(rule: Sequence[bool], llm: Sequence[bool | None]) -> dict[str, Any]:
    """Agreement of the rule matcher and the LLM grader over the pairs the grader read
    (llm not None): n, percent agreement (a fraction), Cohen's kappa (None when undefined,
    e.g. 0/0 when both always give the same single value, or n = 0) and the 2x2 counts."""
    if len(rule) != len(llm):
        raise ValueError(f"rule and llm differ in length ({len(rule)} != {len(llm)})")
    pairs = [(bool(r), bool(g)) for r, g in zip(rule, llm) if g is not None]
    n = len(pairs)
    both = sum(r and g for r, g in pairs)
    rule_only = sum(r and not g for r, g in pairs)
    llm_only = sum(g and not r for r, g in pairs)
    neither = n - both - rule_only - llm_only
    counts = {"rule_and_llm": both, "rule_only": rule_only, "llm_only": llm_only,
              "neither": neither}
    if n == 0:
        return {"n": 0, "agreement": None, "kappa": None, "counts": counts}
    kappa = kappa_from_counts(both + neither, n, np.array([both + rule_only, llm_only + neither]),
                              np.array([both + llm_only, rule_only + neither]))
    return {"n": n, "agreement": (both + neither) / n,
            "kappa": None if math.isnan(kappa) else kappa, "counts": counts}
