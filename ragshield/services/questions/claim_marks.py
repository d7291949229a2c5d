"""Where an answer is and is not supported: the support judge's claims as spans of the answer,
for every face (the Demo and Browse mark them, the JSON of the API and `Shield` carries them,
a redacted answer leaves the unsupported ones out).

Claims are read from a verdict's details, which may come from a stored run or an imported
bundle: a span that is not a span of this answer, or that overlaps the one before it, is
left out rather than trusted, and no more than MAX_CLAIMS are read (the judge writes no more).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ragshield.claims import MAX_CLAIMS, without_spans
from ragshield.judges.support import SupportJudge
from ragshield.types import Verdict

SUPPORT = SupportJudge.name


@dataclass(frozen=True)
class ClaimMark:
    start: int
    end: int
    score: float | None  # P(supported); None when the judge could not read its reply
    supported: bool | None
    passage: int | None  # the passage closest to the claim

    def to_dict(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "score": self.score,
                "supported": self.supported, "passage": self.passage}


def _details(verdict: Verdict | Mapping[str, Any]) -> tuple[str, Any]:
    if isinstance(verdict, Verdict):
        return verdict.judge, verdict.details
    return str(verdict.get("judge")), verdict.get("details")


def _mark(claim: Any, length: int, after: int) -> ClaimMark | None:
    if not isinstance(claim, Mapping):
        return None
    start, end, score = claim.get("start"), claim.get("end"), claim.get("score")
    if not (type(start) is int and type(end) is int and after <= start < end <= length):
        return None
    if not (isinstance(score, (int, float)) and not isinstance(score, bool)
            and math.isfinite(score) and 0.0 <= score <= 1.0):
        score = None
    supported = claim.get("supported")
    passage = claim.get("passage")
    return ClaimMark(start, end, None if score is None else float(score),
                     supported if isinstance(supported, bool) else None,
                     passage if type(passage) is int and passage >= 0 else None)


def claim_marks(answer: str, verdicts: Iterable[Verdict | Mapping[str, Any]]) -> list[ClaimMark]:
    """The support judge's claims among `verdicts` (Verdicts, or stored verdicts as dicts),
    in order; none when no support verdict has claims."""
    for verdict in verdicts:
        judge, details = _details(verdict)
        if judge != SUPPORT or not isinstance(details, Mapping):
            continue
        claims = details.get("claims")
        marks: list[ClaimMark] = []
        for claim in claims[:MAX_CLAIMS] if isinstance(claims, list) else []:
            mark = _mark(claim, len(answer), marks[-1].end if marks else 0)
            if mark is not None:
                marks.append(mark)
        return marks
    return []


def unsupported(marks: Iterable[ClaimMark]) -> list[ClaimMark]:
    """The claims the judge did not find supported (an unread claim counts as unsupported:
    nothing vouched for it)."""
    return [mark for mark in marks if mark.supported is not True]


def redacted(answer: str, marks: list[ClaimMark]) -> str:
    """The answer without its unsupported claims."""
    return without_spans(answer, [(m.start, m.end) for m in unsupported(marks)])
