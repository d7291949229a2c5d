"""Values typed into a form, checked: a number box may send a float, text or nothing."""

from __future__ import annotations

from typing import Any

from ragshield.errors import OptionError


def whole_number(value: Any, what: str, *, minimum: int, maximum: int | None = None) -> int:
    """`value` as an int within the bounds; OptionError naming `what` otherwise."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise OptionError(f"{what}: give a whole number, got {value!r}") from None
    if not number.is_integer() or number < minimum or (maximum is not None and number > maximum):
        bounds = f"from {minimum} to {maximum}" if maximum is not None else f"at least {minimum}"
        raise OptionError(f"{what}: give a whole number {bounds}, got {value!r}")
    return int(number)
