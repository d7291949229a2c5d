"""An answer split into the claims a support judge checks, each with its span in the answer.

Every piece of an answer's text is read, in some claim, or is formatting without a word
(markup, bullets, rules, blank lines): text the judge never reads must not pass as supported.
A claim is a sentence of the answer (a short answer is one claim); a line break ends one too,
and each list item starts a claim of its own. A code block (fenced with ``` or ~~~) is one
claim, its code read as it is. A heading, and a line that introduces what follows ("The main
causes are:"), is read with the first claim after it ("The main causes are: Heat"), or alone
when none follows. Left unread are headings, lead-ins and sentences that decline to answer
(refusal.py) whose words all come from FILLER, a small fixed list of words that state nothing
("Here is what I found:", "## Summary", "I don't know."); with any other word they are read
("I don't know its population" is a claim). An answer that declines as a whole has no claim.
Citation marks ([1], [1, 2], [1][3], [Passage 2]) stay in the span, so that a redacted answer
loses them with their sentence, but are left out of the claim's text the judge reads.

Sentence ends: ".", "!" or "?" (then closing quotes or brackets and citation marks) followed
by white space and the start of a new sentence; not after common abbreviations ("e.g.",
"Dr.", "U.S.") nor after a single initial ("J. K. Rowling"), and never inside a number
("3.5"). The spans cover the answer without overlap, in order. Splitting takes time linear
in the answer's length: every pattern here reads each character a bounded number of times.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from typing import Iterable, Iterator

from ragshield.refusal import is_refusal

MAX_CLAIMS = 40  # a longer answer's later sentences are judged together in its last claim

# A fenced code block: its opening fence and info string (the language, as a rule), its
# code, and its closing fence (a line of the same fence and nothing else) or the answer's end.
_FENCE = re.compile(r"^[ \t]*(?P<fence>(?P<char>[`~])(?P=char){2,})(?P<info>[^\n]*)\n"
                    r"(?P<code>.*?)(?:^[ \t]*(?P=fence)(?P=char)*[ \t]*$|\Z)",
                    re.MULTILINE | re.DOTALL)
_LANGUAGE = re.compile(r"[\w+#.-]*")  # an info string that only names the code's language
_MARK = (r"(?:\[(?:\d+(?:\s*[-,;]\s*\d+)*|(?i:passage|source|doc|document|ref)\s*\d+)\]"
         r"|\u3010\d+\u3011)")
# Citation marks and the white space before them; a run of white space is tried once, from
# its start (tried from each of its characters, a long run took quadratic time).
_CITATION = re.compile(r"(?<!\s)\s*" + _MARK)
_BULLET = r"(?:[-*+\u2022]|\d{1,3}[.)])"  # a list item's marker: - * + or a bullet, 1. or 1)
_HEADING_MARK = r"#{1,6}(?:[ \t]+|$)"  # a markdown heading's: # to ######
# What starts a line before its words: a heading's marker, a list item's, or both.
_MARKER = re.compile(r"[ \t]*(?P<heading>" + _HEADING_MARK + r")?(?:" + _BULLET + r"[ \t]+)?")

_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")  # "## Title ##"
_BARE_BULLET = re.compile(r"(?m)^[ \t]*" + _BULLET + r"[ \t]*$\n?")  # an item cut empty
# A sentence end: punctuation, closing quotes or brackets, citation marks, then white space.
# Tried once a run of punctuation, from its start, and never given back (possessive): tried
# from each "." of a long run of dots, it took quadratic time.
_END = re.compile(r"(?<![.!?])[.!?]++[\"'\u201d\u2019)\]]*(?:\s*" + _MARK + r")*"
                  r"(?=\s+[\"'\u201c\u2018(\[]?[A-Z0-9\u00c0-\u024f])")
_ABBREVIATIONS = frozenset(
    "e.g i.e etc vs cf al approx ca no fig mr mrs ms dr prof sr jr st mt ft inc ltd co corp "
    "jan feb mar apr jun jul aug sep sept oct nov dec u.s u.k u.n a.m p.m".split())
_WORD_OR_DOT = frozenset(string.ascii_letters + ".")  # what an abbreviation is made of
_MARKUP = re.compile(r"[*_`]+")
# Words that state nothing: a heading, a lead-in or a refusal of these words alone is left
# unread (any other word, and any number, makes it a claim). Fixed and small on purpose: a
# word that could carry a fact does not belong here.
FILLER = frozenset("""
    a an the this that these those some any all each both other such one
    i i'm i've me my we we're our us you your it it's its they their them
    is are was were be been being am isn't aren't wasn't weren't
    do does did don't doesn't didn't can cannot can't could couldn't will won't would
    wouldn't should may might must have has had haven't hasn't
    not no nor none never n
    what which who whom how why when where whether
    of in on at to for from by with without about as into than then and or but so if
    also just only however though
    here there following below above found find see know sure say says said tell
    mention mentions mentioned provide provides provided give given contain contains
    include includes specify specifies determine answer answers question information
    info context passage passages document documents source sources text retrieved
    summary overview detail details key main point points note notes step steps result
    results list let look well unfortunately sorry based according enough insufficient
    unable possible impossible unknown invalid
    """.split())
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")

# The kinds of pieces of an answer.
SENTENCE, CODE, HEADING, LEAD_IN, REFUSAL = "sentence", "code", "heading", "lead-in", "refusal"
_INTRODUCES = {HEADING, LEAD_IN}  # read with the claim after them
_UNREAD_WHEN_EMPTY = {HEADING, LEAD_IN, REFUSAL}  # left unread when they state nothing


@dataclass(frozen=True)
class Claim:
    text: str  # what the judge reads: the sentence without citation marks and markup
    start: int  # its span in the answer: answer[start:end]
    end: int


def _marker_at(text: str, start: int = 0, end: int | None = None) -> re.Match[str]:
    """_MARKER at `start`: it matches everywhere (every part of it is optional)."""
    match = _MARKER.match(text, start, len(text) if end is None else end)
    assert match is not None
    return match


def _ends_abbreviation(text: str, dot: int) -> bool:
    """Whether the "." at `dot` ends an abbreviation or an initial, not a sentence. Reads
    back over the letters and dots before it only (a sentence end is followed by white
    space, so no character is read for two of them)."""
    start = dot
    while start > 0 and text[start - 1] in _WORD_OR_DOT:
        start -= 1
    word = text[start:dot].lstrip(".")  # from its first letter
    return word.lower() in _ABBREVIATIONS or (len(word) == 1 and word.isupper())


def _sentences(answer: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    cut = start
    marker = _marker_at(answer, start, end)  # "1. " starts an item, ends no sentence
    for match in _END.finditer(answer, marker.end(), end):
        if answer[match.start()] == "." and _ends_abbreviation(answer, match.start()):
            continue
        yield cut, match.end()
        cut = match.end()
    yield cut, end


def claim_text(span: str) -> str:
    """What the judge reads of a span: no heading or list marker, citation marks or
    emphasis markup."""
    text = span.strip()
    marker = _marker_at(text)
    text = text[marker.end():]
    if marker.group("heading") is not None:
        text = _CLOSING_HASHES.sub("", text)
    text = _CITATION.sub("", text)
    return " ".join(_MARKUP.sub("", text).split())


def states_nothing(text: str) -> bool:
    """Whether every word of `text` is a FILLER word."""
    words = _WORD.findall(text.lower().replace("\u2019", "'"))
    return all(word in FILLER for word in words)


def _trimmed(answer: str, start: int, end: int, text: str) -> Claim:
    """A claim of `text` over answer[start:end] less its white space at either end."""
    span = answer[start:end]
    return Claim(text, start + len(span) - len(span.lstrip()), start + len(span.rstrip()))


def _kind(text: str, heading: bool) -> str:
    if text.endswith(":"):
        return LEAD_IN
    if heading:
        return HEADING
    return REFUSAL if is_refusal(text) else SENTENCE


def _line_pieces(answer: str, start: int, end: int) -> Iterator[tuple[Claim, str]]:
    """The sentences of answer[start:end]'s lines that hold a letter or a digit, each with
    its kind (a model's sentence does not run over a line break; a list item is a line of
    its own)."""
    for line in answer[start:end].splitlines(keepends=True):
        heading = _marker_at(answer, start, start + len(line)).group("heading") is not None
        for a, b in _sentences(answer, start, start + len(line)):
            text = claim_text(answer[a:b])
            if any(c.isalnum() for c in text):
                yield _trimmed(answer, a, b, text), _kind(text, heading)
        start += len(line)


def _code_text(block: re.Match[str]) -> str:
    """What the judge reads of a code block: its code, after its info string unless that
    only names the language."""
    info, code = block.group("info").strip(), block.group("code").strip()
    return code if _LANGUAGE.fullmatch(info) else f"{info}\n{code}".strip()


def _pieces(answer: str) -> Iterator[tuple[Claim, str]]:
    """Every piece of the answer that holds a letter or a digit, in order, with its kind:
    each code block whole, each sentence of the lines around them."""
    position = 0
    for block in _FENCE.finditer(answer):
        yield from _line_pieces(answer, position, block.start())
        text = _code_text(block)
        if any(c.isalnum() for c in text):
            yield _trimmed(answer, block.start(), block.end(), text), CODE
        position = block.end()
    yield from _line_pieces(answer, position, len(answer))


def _joined(intro: Claim | None, claim: Claim) -> Claim:
    """`claim` read after the heading or lead-in that introduces it, if any."""
    if intro is None:
        return claim
    glue = " " if intro.text.endswith((":", ".", "!", "?")) else ": "
    return Claim(f"{intro.text}{glue}{claim.text}", intro.start, claim.end)


def _within(claims: list[Claim], limit: int) -> list[Claim]:
    """At most `limit` claims: the last one reads all the claims from there on."""
    if len(claims) <= limit:
        return claims
    tail = claims[limit - 1:]
    return [*claims[:limit - 1],
            Claim(" ".join(c.text for c in tail), tail[0].start, tail[-1].end)]


def split_claims(answer: str, limit: int = MAX_CLAIMS) -> list[Claim]:
    """The claims of `answer`, in order; none for a refusal or an answer of filler alone."""
    if is_refusal(answer):
        return []
    claims: list[Claim] = []
    intro: Claim | None = None  # headings and lead-ins waiting for the claim they introduce
    for piece, kind in _pieces(answer):
        if kind in _UNREAD_WHEN_EMPTY and states_nothing(piece.text):
            continue
        if kind in _INTRODUCES:
            intro = _joined(intro, piece)
            continue
        claims.append(_joined(intro, piece))
        intro = None
    if intro is not None:  # nothing after it: read alone
        claims.append(intro)
    return _within(claims, limit)


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
    text = re.sub(r"(?<![ \t])[ \t]+\n", "\n", text)  # each run of spaces tried once
    text = _BARE_BULLET.sub("", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return re.sub(r"[ \t]{2,}", " ", text).strip()
