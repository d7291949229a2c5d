"""How split a sample's judges are: the disagreement-first label queue orders samples by it."""

from __future__ import annotations

from typing import Sequence


def disagreement(keeps: Sequence[bool | None]) -> float | None:
    """How split the deciding judges are: 0 when unanimous, 1 when exactly half keep.
    None with fewer than two deciding judges."""
    deciding = [keep for keep in keeps if keep is not None]
    if len(deciding) < 2:
        return None
    share = sum(deciding) / len(deciding)
    return 1 - abs(2 * share - 1)
