"""Reading an answerer's reply: the final answer and the passages it cites (docs/METHODS.md 4.1).

Model output is untrusted, so nothing here raises on any text: what cannot be read is
reported in `parse_error` (a short reason) and the caller keeps the raw reply.
"""

from __future__ import annotations

import re
from typing import NamedTuple

# Labels a reply may put before its final answer; when several occur, the last one wins
# (a chain of thought may say "the answer: ..." before its "Final Answer: ..."). The
# distinctive labels count anywhere; a plain "answer:" only near the start of a line or a
# sentence ("Short answer:"), not inside one ("the passages that contain the answer: ...").
_ANSWER_PREFIX = re.compile(
    r"(?:(?<!\w)(?:final[ \t_-]*answer|response)"
    r"|(?:^|(?<=[.!?]))[ \t>*#-]*(?:[a-z]+[ \t]+){0,2}answer)"
    r"[ \t]*(?:\*+[ \t]*)?:[ \t*]*",
    re.IGNORECASE | re.MULTILINE,
)
_EVIDENCE_LABEL = re.compile(
    r"(?<!\w)(evidence|sources?|citations?|passages?[ \t]+used)[ \t]*(?:\*+[ \t]*)?:",
    re.IGNORECASE,
)
# Labels of the reasoning part, dropped when the answer has to be taken from it.
_REASONING_LABEL = re.compile(
    r"^(thought|thinking|rationale|reasoning|explanation)[ \t]*(?:\*+[ \t]*)?:\s*",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
_THINK_BLOCK = re.compile(r"<think>.*?(</think>|$)", re.IGNORECASE | re.DOTALL)
# "Passage-0", "[Passage 1]", "passages 0 and 2", "Passage-0, Passage-2", "Document #3".
# At most 9 digits, so a long run of digits is never converted (and never a valid id).
_ID = r"\d{1,9}(?!\d)"
_NAME = r"(?:passages?|documents?|docs?)[ \t_#:.-]*"
_SEPARATOR = r"\s*(?:,|&|/|\+|\band\b|\bor\b)(?:\s*(?:and|or)\b)?\s*"
_CITATION = re.compile(
    rf"(?<!\w){_NAME}({_ID}(?:{_SEPARATOR}(?:{_NAME})?{_ID})*)", re.IGNORECASE
)
# Inline citations left in an answer line: "Paris [Passage-0]", "Paris (passages 1, 2)".
_INLINE_CITATION = re.compile(rf"(?<!\s)\s*[\[(]\s*{_NAME}[^\])\n]*[\])]", re.IGNORECASE)
# "## Passage-0 ##" (or an unclosed "## Passage-0") left on the answer line; a leading "## "
# with no citation is a markdown heading and stays for _LINE_LEAD.
_MARKED_SPAN = re.compile(
    rf"(?<!\s)\s*##(?:[^#\n]*##|\s*(?:{_NAME}\d|internal\b|none\b).*$)", re.IGNORECASE
)
_INTERNAL = re.compile(
    r"\b(internal|own|my|parametric|general|prior|background)\s+knowledge\b", re.IGNORECASE
)
# Opening quote -> closing quote (English, German, French styles).
_QUOTE_PAIRS = {'"': '"', "'": "'", "`": "`", "\u201c": "\u201d", "\u2018": "\u2019",
                "\u201e": "\u201c", "\u00ab": "\u00bb"}
# Markdown heading, block quote or bullet at the start of a line (not a minus sign).
_LINE_LEAD = re.compile(r"^(?:\s*(?:#+|>|[-*\u2022](?=\s)))+\s*")


class ParsedAnswer(NamedTuple):
    """What was read from a reply; `parse_error` says what could not be read (or None)."""

    text: str
    evidence: list[int]
    cites_internal_knowledge: bool
    parse_error: str | None


def parse_answer(
    raw: str,
    n_passages: int,
    *,
    expected_prefix: str | None = None,
    wants_evidence: bool = False,
) -> ParsedAnswer:
    """The final answer and cited passages of a reply.

    `expected_prefix` names the label the prompt asked for before the final answer
    ("Response", "Final Answer"): without it in the reply, the last sentence is taken as the
    answer and the reply is flagged. `wants_evidence` flags a reply that cites neither a
    passage nor internal knowledge. Cited ids outside 0..n_passages-1 are dropped and noted.
    """
    notes: list[str] = []
    text, prefix_note = final_answer(raw, expected_prefix)
    if prefix_note:
        notes.append(prefix_note)
    evidence, internal, evidence_note = cited_passages(raw, n_passages)
    if evidence_note:
        notes.append(evidence_note)
    if wants_evidence and not evidence and not internal:
        notes.append("no passage ids or 'internal knowledge' cited")
    return ParsedAnswer(text, evidence, internal, "; ".join(notes) or None)


def final_answer(raw: str, expected_prefix: str | None = None) -> tuple[str, str | None]:
    """The answer part of a reply, cleaned, and a note when it could not be read as asked."""
    body = _THINK_BLOCK.sub("\n", raw or "")
    prefixes = list(_ANSWER_PREFIX.finditer(body))
    note = None
    if prefixes:
        lines = _lines(_before_evidence(body[prefixes[-1].end():]))
        text = lines[0] if lines else ""
    else:
        lines = _lines(_before_evidence(body))
        if expected_prefix:
            # The reasoning came without its labelled conclusion: its last sentence is the
            # closest thing to an answer.
            last = _REASONING_LABEL.sub("", lines[-1]) if lines else ""
            text = _SENTENCE_END.split(last.strip())[-1]
            note = f"no '{expected_prefix}:' line; took the last sentence"
        else:
            text = lines[0] if lines else ""
    text = _clean(text)
    if not text:
        note = "empty answer" if note is None else f"{note}; empty answer"
    return text, note


def cited_passages(raw: str, n_passages: int) -> tuple[list[int], bool, str | None]:
    """Cited passage indices (in citation order, without repeats), whether the reply says it
    used internal knowledge, and a note naming dropped out-of-range ids.

    Looks from the first "Evidence:" label on when there is one (small models repeat the
    label, one passage per line), else anywhere in the reply.
    """
    body = _THINK_BLOCK.sub("\n", raw or "")
    label = _EVIDENCE_LABEL.search(body)
    section = body[label.end():] if label else body
    cited: list[int] = []
    for match in _CITATION.finditer(section):
        for number in re.findall(_ID, match.group(1)):
            if int(number) not in cited:
                cited.append(int(number))
    valid = [i for i in cited if i < n_passages]
    dropped = [i for i in cited if i >= n_passages]
    note = None
    if dropped:
        note = (f"dropped cited passage ids out of range: {', '.join(map(str, dropped))} "
                f"(there are {n_passages} passages)")
    return valid, bool(_INTERNAL.search(section)), note


def _before_evidence(text: str) -> str:
    label = _EVIDENCE_LABEL.search(text)
    return text[: label.start()].rstrip(" \t([{-:,;") if label else text


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if _clean(line)]


def _clean(text: str) -> str:
    """An answer line without markdown, citations and wrapping quotes."""
    text = _MARKED_SPAN.sub("", _INLINE_CITATION.sub("", text))
    text = _LINE_LEAD.sub("", text.replace("**", "")).strip().strip("*").strip()
    return _unquote(text).strip()


def _unquote(text: str) -> str:
    """'"Paris".' -> 'Paris.'; text with more quotes inside is left alone."""
    closer = _QUOTE_PAIRS.get(text[:1])
    if closer is None:
        return text
    end = text.rstrip(".!?")
    inner = end[1:-1]
    if len(end) < 3 or not end.endswith(closer) or text[0] in inner or closer in inner:
        return text
    return inner.strip() + text[len(end):]
