"""An answer split into the claims a support judge checks, each with its span in the answer.

A claim is a sentence of the answer (a short answer is one claim); a line break ends one too.
What is not a claim:
code blocks (fenced with ``` or ~~~), markdown headings, a line that only introduces what
follows ("The main causes are:"), a sentence that declines to answer (refusal.py), and text
without a letter or a digit. Each list item starts a claim of its own. Citation marks
([1], [1, 2], [1][3], [Passage 2]) stay in the span, so that a redacted answer loses them
with their sentence, but are left out of the claim's text the judge reads.

Sentence ends: ".", "!" or "?" (then closing quotes or brackets and citation marks) followed
by white space and the start of a new sentence; not after common abbreviations ("e.g.",
"Dr.", "U.S.") nor after a single initial ("J. K. Rowling"), and never inside a number
("3.5"). The spans cover the answer without overlap, in order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Iterator

from ragshield.refusal import is_refusal

MAX_CLAIMS = 40  # a longer answer's later sentences are judged together in its last claim

_FENCE = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n.*?(^[ \t]*\1[^\n]*$|\Z)", re.MULTILINE | re.DOTALL)
_MARK = (r"(?:\[(?:\d+(?:\s*[-,;]\s*\d+)*|(?i:passage|source|doc|document|ref)\s*\d+)\]"
         r"|\u3010\d+\u3011)")
_CITATION = re.compile(r"\s*" + _MARK)
_BULLET = r"(?:[-*+\u2022]|\d{1,3}[.)])"  # a list item's marker: - * + or a bullet, 1. or 1)
_LIST_MARK = re.compile(r"[ \t]*" + _BULLET + r"[ \t]+")  # at a line's start
_BARE_BULLET = re.compile(r"(?m)^[ \t]*" + _BULLET + r"[ \t]*$\n?")  # an item cut empty
_HEADING = re.compile(r"^[ \t]*#{1,6}[ \t]")
# A sentence end: punctuation, closing quotes or brackets, citation marks, then white space.
_END = re.compile(r"[.!?]+[\"'\u201d\u2019)\]]*(?:\s*" + _MARK + r")*"
                  r"(?=\s+[\"'\u201c\u2018(\[]?[A-Z0-9\u00c0-\u024f])")
_ABBREVIATIONS = frozenset(
    "e.g i.e etc vs cf al approx ca no fig mr mrs ms dr prof sr jr st mt ft inc ltd co corp "
    "jan feb mar apr jun jul aug sep sept oct nov dec u.s u.k u.n a.m p.m".split())
_MARKUP = re.compile(r"[*_`]+")


@dataclass(frozen=True)
class Claim:
    text: str  # what the judge reads: the sentence without citation marks and markup
    start: int  # its span in the answer: answer[start:end]
    end: int


def _lines(answer: str) -> Iterator[tuple[int, int]]:
    """Spans of the answer's lines outside code blocks, headings and blank lines (a model's
    sentence does not run over a line break; a list item is a line of its own)."""
    code = [m.span() for m in _FENCE.finditer(answer)]
    start = 0
    for line in answer.splitlines(keepends=True):
        end = start + len(line)
        inside_code = any(a <= start < b for a, b in code)
        if not inside_code and line.strip() and not _HEADING.match(line):
            yield start, end
        start = end


def _ends_abbreviation(text: str, dot: int) -> bool:
    """Whether the "." at `dot` ends an abbreviation or an initial, not a sentence."""
    word = re.search(r"([A-Za-z][A-Za-z.]*)$", text[:dot])
    if not word:
        return False
    token = word.group(1).lower()
    return token in _ABBREVIATIONS or (len(token) == 1 and word.group(1).isupper())


def _sentences(answer: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    cut = start
    marker = _LIST_MARK.match(answer, start, end)  # "1. " starts an item, ends no sentence
    for match in _END.finditer(answer, marker.end() if marker else start, end):
        if answer[match.start()] == "." and _ends_abbreviation(answer, match.start()):
            continue
        yield cut, match.end()
        cut = match.end()
    yield cut, end


def claim_text(span: str) -> str:
    """What the judge reads of a span: no list marker, citation marks or emphasis markup."""
    text = span.strip()
    marker = _LIST_MARK.match(text)
    text = text[marker.end():] if marker else text
    text = _CITATION.sub("", text)
    return " ".join(_MARKUP.sub("", text).split())


def _is_claim(text: str) -> bool:
    return (any(c.isalnum() for c in text) and not text.endswith(":")
            and not is_refusal(text))


def split_claims(answer: str, limit: int = MAX_CLAIMS) -> list[Claim]:
    """The claims of `answer`, in order; none for a refusal or an answer of code alone."""
    if is_refusal(answer):
        return []
    claims: list[Claim] = []
    for line in _lines(answer):
        for start, end in _sentences(answer, *line):
            span = answer[start:end]
            lead = len(span) - len(span.lstrip())
            trail = len(span.rstrip())
            text = claim_text(span)
            if _is_claim(text):
                claims.append(Claim(text, start + lead, start + trail))
    if len(claims) > limit:
        last = claims[limit - 1]
        tail = answer[last.start:claims[-1].end]
        claims = [*claims[:limit - 1], Claim(claim_text(tail), last.start, claims[-1].end)]
    return claims


def _whole_line(answer: str, start: int, end: int) -> tuple[int, int]:
    """A span that is a whole line takes its line break with it."""
    if (start == 0 or answer[start - 1] == "\n") and answer[end:end + 1] == "\n":
        return start, end + 1
    return start, end


def without_spans(answer: str, spans: Iterable[tuple[int, int]]) -> str:
    """The answer with the given character spans taken out, white space tidied where they
    were (a redacted answer keeps its paragraphs and list items)."""
    cuts = sorted(_whole_line(answer, max(0, a), min(len(answer), b)) for a, b in spans if b > a)
    kept, position = [], 0
    for start, end in cuts:
        if start >= position:
            kept.append(answer[position:start])
            position = end
        else:
            position = max(position, end)
    kept.append(answer[position:])
    text = "".join(kept)
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = _BARE_BULLET.sub("", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return re.sub(r"[ \t]{2,}", " ", text).strip()
