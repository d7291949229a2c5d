"""Telling a refusal ("I don't know", "__DONT_KNOW__", "not enough information", ...) from an
answer, tolerantly: small models mangle refusal tokens (METHODS 1)."""

from __future__ import annotations

import re

REFUSAL = re.compile(
    r"""\b(?:do\s*n[o']?t|not)\s*know\b
      | \bno\s+idea\b
      | \b(?:not\s+enough|insufficient)\s+(?:information|context|evidence)\b
      | \b(?:cannot|can't|can\s+not|unable\s+to)\s+(?:answer|determine|be\s+determined)\b
      | \bno\s+(?:relevant\s+)?information\b
      | \binvalid\s+question\b""",
    re.IGNORECASE | re.VERBOSE,
)
BARE_UNKNOWN = re.compile(r"\W*unknown\W*", re.IGNORECASE)


def is_refusal(answer: str) -> bool:
    text = answer.replace("_", " ").replace("\u2019", "'")
    return bool(REFUSAL.search(text) or BARE_UNKNOWN.fullmatch(text))
