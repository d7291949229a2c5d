"""Names that people type (annotators, datasets, corpora): checked on the way in, because
they end up in database columns of bounded size, in terminals and on web pages."""

from __future__ import annotations

import unicodedata

from ragshield.errors import UserError

NAME_MAX_LENGTH = 200  # the size of the name columns
# Embedding and override marks reorder the text around them (a name that shows as "bob"
# but is not). Other format characters, such as the zero-width non-joiner of Persian
# names, are allowed.
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


class InvalidNameError(UserError, ValueError):
    """A name is blank, too long or holds control characters."""


def check_name(value: object, field: str, max_length: int = NAME_MAX_LENGTH) -> str:
    """`value` stripped of surrounding blanks, or an error naming `field`: names must be
    text, not blank, at most `max_length` characters, and free of control characters and
    bidirectional overrides (which would rewrite a terminal or disguise text on a page)."""
    if not isinstance(value, str):
        raise InvalidNameError(f"field {field!r} must be text, got {type(value).__name__}")
    name = value.strip()
    if not name:
        raise InvalidNameError(f"field {field!r} must not be empty or blank")
    if len(name) > max_length:
        raise InvalidNameError(f"field {field!r} must be at most {max_length} characters, "
                               f"got {len(name)}")
    bad = next((c for c in name if unicodedata.category(c) in ("Cc", "Cs") or c in BIDI_CONTROLS),
               None)
    if bad is not None:
        raise InvalidNameError(f"field {field!r} must not hold control characters "
                               f"(found U+{ord(bad):04X})")
    return name


def name_list(names: list[str], limit: int = 20) -> str:
    """Names for a message: each quoted (so control characters show as escapes, not as
    terminal commands), at most `limit` of them."""
    if not names:
        return "none yet"
    shown = ", ".join(repr(name) for name in names[:limit])
    return shown if len(names) <= limit else f"{shown} and {len(names) - limit} more"
