"""The question the judges read when an answer ends a conversation: the last user message,
and, when it leans on what was said before ("and the second one?"), the turns it leans on.

A follow-up is a question that refers back (it, they, that, the second, the other...), opens
with a joining word ("and", "but", "what about"), or is too short to stand alone (four words
or fewer). For a follow-up, the most recent earlier user and assistant turns go before it,
newest kept first, each cut to MAX_TURN_CHARS and all of them to MAX_CONTEXT_CHARS: the judges
read a bounded prefix, never the whole conversation. System messages are instructions, not
content, and are left out. A question that stands alone is judged alone, so its passages and
its live-run sample are the same as if it had been asked first.

A dataset row carries its conversation as `history` (Sample.meta, HISTORY: a list of
{"role", "content"}, oldest first); a run answers and judges such a sample as the guard API
does a request with `history` (`in_conversation`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ragshield.types import Sample

MAX_TURNS = 4  # earlier messages read, at most
MAX_TURN_CHARS = 400  # of each (its end is kept: the latest words carry the referent)
MAX_CONTEXT_CHARS = 1_200
_REFERS_BACK = re.compile(
    r"\b(it|its|they|them|their|theirs|this|that|these|those|he|him|his|she|her|hers|one|ones|"
    r"former|latter|same|other|another|second|third|previous|else)\b", re.IGNORECASE)
_JOINS = re.compile(r"^\W*(and|but|or|so|then|also|what about|how about|what of)\b",
                    re.IGNORECASE)
SPEAKERS = {"user": "User", "assistant": "Assistant"}
ROLES = ("user", "assistant", "system")
HISTORY = "history"  # the Sample.meta key of a dataset row's earlier turns
MAX_HISTORY_TURNS = 50  # kept of a row's history (the judges read MAX_TURNS of them)
JUDGED_QUESTION_CHARS = 2000  # a run's question as the judges read it, at most


@dataclass(frozen=True)
class Turn:
    role: str  # "user" or "assistant"; other roles are not read
    text: str


def is_follow_up(question: str) -> bool:
    """Whether the question leans on earlier turns to be understood."""
    return (bool(_REFERS_BACK.search(question)) or bool(_JOINS.match(question))
            or len(question.split()) <= 4)


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_TURN_CHARS else "..." + text[-(MAX_TURN_CHARS - 3):]


def judged_question(question: str, earlier: Sequence[Turn], limit: int) -> str:
    """The question as the judges read it: `question` alone, or for a follow-up, the
    earlier turns it leans on (bounded) and then it; never longer than `limit` characters
    (the question itself is never cut)."""
    turns = [t for t in earlier if t.role in SPEAKERS and t.text.strip()][-MAX_TURNS:]
    if not turns or not is_follow_up(question):
        return question
    room = min(MAX_CONTEXT_CHARS, limit - len(question) - 60)
    lines: list[str] = []
    for turn in reversed(turns):  # the newest first, until the room is used
        line = f"{SPEAKERS[turn.role]}: {_cut(turn.text)}"
        if len(line) + 1 > room:
            break
        lines.insert(0, line)
        room -= len(line) + 1
    if not lines:
        return question
    return "Earlier in the conversation:\n" + "\n".join(lines) + f"\nQuestion now: {question}"


def history_of(meta: Mapping[str, Any]) -> list[Turn]:
    """The earlier turns a sample's meta carries (`HISTORY`), read tolerantly: entries that
    are not {"role", "content"} with a known role and text are left out."""
    turns = meta.get(HISTORY)
    if not isinstance(turns, list):
        return []
    return [Turn(turn["role"], turn["content"]) for turn in turns
            if isinstance(turn, dict) and turn.get("role") in ROLES
            and isinstance(turn.get("content"), str)]


def in_conversation(sample: Sample) -> Sample:
    """The sample as a run answers and judges it: its question with the turns it leans on
    (`judged_question`), when its row carries a history."""
    earlier = history_of(sample.meta)
    if not earlier:
        return sample
    return replace(sample, question=judged_question(sample.question, earlier,
                                                    max(JUDGED_QUESTION_CHARS,
                                                        len(sample.question) + 60)))
