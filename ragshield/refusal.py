"""Detecting refusals ("I don't know") tolerantly: small models mangle refusal tokens
(DONT_KNOW, NOT_KNOW, "Dont know.") and phrase them many ways (docs/METHODS.md 1)."""

from __future__ import annotations

import re

REFUSAL_TOKEN = "__DONT_KNOW__"

_REFUSAL_PATTERNS = [
    r"_*\s*(i\s*)?do\s*n[o']?t[\s_]*know\s*_*",
    r"_*\s*not[\s_]*know\s*_*",
    r"_*\s*dont[\s_]*know\s*_*",
    r"(i\s+am|i'm)\s+not\s+sure",
    r"unknown",
    r"(there\s+is\s+)?(not|no)\s+enough\s+(information|info|context|evidence)",
    r"insufficient\s+(information|info|context|evidence)",
    r"(the\s+)?((provided|given|above|retrieved)\s+)?(context|passages?|documents?|information)"
    r"\s+(does|do)\s*n[o']?t\s+(contain|provide|mention|say|include|specify|answer)",
    r"none\s+of\s+the\s+((provided|given|above|retrieved)\s+)?(context|passages?|documents?)",
    r"there\s+is\s+no\s+(information|mention|answer)",
    r"(i\s+)?(cannot|can\s*not|can't|am\s+unable\s+to|unable\s+to)\s+"
    r"(answer|determine|find|tell|say)",
    r"(it\s+is\s+)?(not\s+possible|impossible)\s+to\s+(answer|determine|tell|say)",
    r"no\s+answer",
    r"invalid\s+question",
    r"n/a",  # not "NA" or "Na": those are answers too (sodium, North America)
]
# Polite openings before the refusal itself: "Sorry, I don't know", "Unfortunately, the
# passages do not mention it", "Based on the passages, I cannot answer".
_LEAD_IN = (
    r"((i'm\s+|i\s+am\s+)?sorry|unfortunately|based\s+on\s+the\s+(provided\s+|given\s+)?"
    r"(passages?|context|documents?|information))\W*(but\s+)?"
)
_REFUSAL = re.compile(
    r"^\W*(?:" + _LEAD_IN + r")?(?P<refusal>" + "|".join(_REFUSAL_PATTERNS) + r")\b",
    re.IGNORECASE,
)
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})


def is_refusal(text: str | None) -> bool:
    """True when the answer declines to answer. Judged on its opening words, so
    "Unknown Pleasures is an album" is not a refusal but "Unknown." is. A reply without a
    single letter or digit ("", "...", "-") answers nothing and counts as a refusal."""
    if not text or not any(c.isalnum() for c in text):
        return True
    stripped = text.strip().translate(_APOSTROPHES)
    if REFUSAL_TOKEN.strip("_").lower() in stripped.lower().replace(" ", "_"):
        return True
    match = _REFUSAL.match(stripped)
    if not match:
        return False
    if match.group("refusal").lower() == "unknown":
        # "Unknown" alone, not a title that starts with it
        rest = stripped[match.end():].strip(" .!\"'")
        return not rest or rest.lower().startswith(("answer", "from the", "based on"))
    return True


def is_invalid_question(text: str | None) -> bool:
    """CRAG's false-premise answer."""
    return text is not None and "invalid question" in text.lower()
