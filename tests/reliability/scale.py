"""How big the suite's runs are: short by default (CI), long with RAGSHIELD_RELIABILITY_LONG=1
(scripts/reliability.py --long)."""

from __future__ import annotations

import os

LONG = os.environ.get("RAGSHIELD_RELIABILITY_LONG") == "1"


def sized(short: int, long: int) -> int:
    """`long` in the long version of the suite, else `short`."""
    return long if LONG else short
