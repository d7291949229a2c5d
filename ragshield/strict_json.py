"""JSON text from files people give, parsed with what `json.loads` lets through refused, and
JSON text written so that strict parsers read it.

Python's json accepts NaN and Infinity, turns 1e999 into infinity, and nests as deep as the
interpreter's stack allows, then raises RecursionError. None of that is data a store, a metric
or a page can use, and deep values break the recursive code downstream (checks, serialisers,
renderers), so `loads` refuses them with a ValueError naming the field at fault. On request it
refuses text no store can keep too: lone surrogates ("\\ud800" is a valid escape, but no text:
nothing can encode it) and NUL characters (PostgreSQL's text cannot hold "\\u0000").
`dumps` writes what strict parsers read: a non-finite number as null (the store's JSON columns
and `runs export` write with it).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from ragshield.errors import UserError

MAX_DEPTH = 100  # nested arrays and objects; real records nest a handful of levels
_UNSTORABLE = re.compile("[\ud800-\udfff\x00]")
# Where such a character can come from: a \u escape of one (the text is decoded), or the text.
_MAY_HOLD_UNSTORABLE = re.compile("\\\\u([dD][89abcdefABCDEF]|0000)|[\ud800-\udfff\x00]")


class JsonValueError(UserError, ValueError):
    """Well-formed JSON holding a value that is refused; `field` is its path ("a.b[2]"),
    None for the whole value or when the place is unknown."""

    def __init__(self, reason: str, field: str | None = None) -> None:
        self.reason, self.field = reason, field
        super().__init__(f"field {field!r}: {reason}" if field else reason)


class _Refused:
    """Stands in for a number the parser met that no caller may receive."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _constant(text: str) -> _Refused:
    return _Refused(f"{text} is not a finite number")


def _float(text: str) -> float | _Refused:
    value = float(text)
    return value if math.isfinite(value) else _constant(text)


def _int(text: str) -> int | _Refused:
    try:
        return int(text)
    except ValueError:  # more digits than int() converts (sys.get_int_max_str_digits)
        return _Refused(f"an integer of {len(text.lstrip('-'))} digits is too long")


def loads(text: str, field: str | None = None, *, storable: bool = False) -> Any:
    """The value of `text`; json.JSONDecodeError for bad syntax, JsonValueError for
    non-finite numbers, overlong integers and nesting deeper than MAX_DEPTH, and with
    `storable` for a string or key holding a lone surrogate or a NUL. `field` names the
    text itself when it is part of a record (a CSV cell), to prefix the fields in errors."""
    try:
        value = json.loads(text, parse_constant=_constant, parse_float=_float, parse_int=_int)
    except RecursionError:
        raise JsonValueError(f"nested deeper than {MAX_DEPTH} levels", field) from None
    texts = storable and _MAY_HOLD_UNSTORABLE.search(text) is not None
    _check(value, (field,) if field else (), texts)
    return value


def _field(path: tuple[str | int, ...]) -> str | None:
    """("a", 2, "b") as "a[2].b"."""
    text = "".join(f"[{key}]" if isinstance(key, int) else f".{key}" for key in path)
    return text.removeprefix(".") or None


def _check_text(text: str, path: tuple[str | int, ...], what: str = "") -> None:
    found = _UNSTORABLE.search(text)
    if found is None:
        return
    if found.group() == "\x00":
        raise JsonValueError(f"{what}a NUL character (\\u0000) is not text a store can keep",
                             _field(path))
    raise JsonValueError(f"{what}a lone surrogate (\\u{ord(found.group()):04x}) is not text",
                         _field(path))


def _check(value: Any, root: tuple[str, ...], texts: bool = False) -> None:
    """Walk the value without recursion (it may be deep) for refused numbers and depth, and
    with `texts` for lone surrogates and NUL (a key is checked before it names a field)."""
    if isinstance(value, _Refused):
        raise JsonValueError(value.reason, _field(root))
    if texts and isinstance(value, str):
        _check_text(value, root)
    if not isinstance(value, (dict, list)):
        return
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, root)]
    while stack:
        container, path = stack.pop()
        if len(path) - len(root) >= MAX_DEPTH:
            outermost = path[: len(root) + 1]  # the whole path would be MAX_DEPTH keys long
            raise JsonValueError(f"nested deeper than {MAX_DEPTH} levels", _field(outermost))
        items = container.items() if isinstance(container, dict) else enumerate(container)
        for key, item in items:
            if texts and isinstance(key, str):
                _check_text(key, path, "a key with ")
            if isinstance(item, _Refused):
                raise JsonValueError(item.reason, _field((*path, key)))
            if texts and isinstance(item, str):
                _check_text(item, (*path, key))
            if isinstance(item, (dict, list)):
                stack.append((item, (*path, key)))


def finite(value: Any) -> Any:
    """`value` with every non-finite number (NaN, Infinity) in it replaced by None: a number
    that means nothing is stored and exported as absent, never as a word that strict JSON
    parsers refuse."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    return value


def dumps(value: Any, **options: Any) -> str:
    """JSON text that strict parsers read: json.dumps with non-finite numbers written as null
    (json.dumps writes NaN and Infinity, which no standard parser reads). `options` go to
    json.dumps."""
    try:
        return json.dumps(value, allow_nan=False, **options)
    except ValueError:  # a non-finite number somewhere in it: the rare case walks the value
        return json.dumps(finite(value), allow_nan=False, **options)
