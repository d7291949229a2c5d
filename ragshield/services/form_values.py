"""Values typed into a form, checked: a number box may send a float, text or nothing."""

from __future__ import annotations

from typing import Any

from ragshield.errors import OptionError


LARGEST = 2**31 - 1  # the largest id or count a database integer column holds everywhere


def whole_number(value: Any, what: str, *, minimum: int, maximum: int = LARGEST) -> int:
    """`value` as an int within the bounds; OptionError naming `what` otherwise."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise OptionError(f"{what}: give a whole number, got {value!r}") from None
    if not number.is_integer() or not minimum <= number <= maximum:
        raise OptionError(f"{what}: give a whole number from {minimum} to {maximum}, got "
                          f"{value!r}")
    return int(number)
