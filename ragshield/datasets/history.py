"""A dataset row's conversation before its question (`history`: [{"role", "content"}, ...],
oldest first), checked as it is read: each turn an object with a role of user, assistant or
system and its text, at most MAX_TURNS turns of at most MAX_TURN_CHARS characters each. A CSV
cell holds it as JSON text. It goes into Sample.meta (conversation.HISTORY), where runs,
Annotate, Browse and the case study read it."""

from __future__ import annotations

from typing import Any

from ragshield import strict_json
from ragshield.conversation import ROLES
from ragshield.datasets.records import Record

MAX_TURNS = 200
MAX_TURN_CHARS = 20_000


def history_field(record: Record, field: str) -> list[dict[str, str]]:
    """The turns in `field` of the row (none when absent or empty); an error naming the
    field, and the turn, for anything else."""
    value = record.data.get(field)
    if value is None or value == "":
        return []
    if isinstance(value, str):
        try:
            value = strict_json.loads(value, field)
        except ValueError:
            raise record.error(field, "expected a list of {role, content} turns (JSON text in "
                                      f"a table cell), found {value[:60]!r}") from None
    turns = Record({field: value}, record.path, record.where, record.prefix).records(field)
    if len(turns) > MAX_TURNS:
        raise record.error(field, f"holds {len(turns)} turns; at most {MAX_TURNS}")
    return [_turn(turn) for turn in turns]


def _turn(turn: Record) -> dict[str, Any]:
    role = turn.text("role")
    if role not in ROLES:
        raise turn.error("role", f"expected one of {', '.join(ROLES)}, found {role!r:.40}")
    content = turn.text("content")
    if len(content) > MAX_TURN_CHARS:
        raise turn.error("content", f"holds {len(content):,} characters; at most "
                                    f"{MAX_TURN_CHARS:,}")
    return {"role": role, "content": content}
