"""Built-in thresholds of the yes/no judges by the model they read from. A judge's own default
(0.5) was set for the embedded 0.5B; the packaged 1.5B says "yes" more readily, so at 0.5 it
keeps most answers (pre_answer 84% of them on SQuAD 2.0). Its thresholds were tuned on four
public labelled sets together, the threshold that shows 60% of the right answers, and each
set left out in turn decided by thresholds tuned on the other three alone: docs/QUALITY.md,
"Across datasets". A policy fitted on a team's own labels overrides them."""

from __future__ import annotations

from typing import Any

from ragshield.llm.packaged_models import LARGER_MODEL

THRESHOLDS: dict[str, dict[str, float]] = {LARGER_MODEL: {"pre_answer": 0.76, "p_true": 0.71}}


def reader_options(reader: str | None) -> dict[str, dict[str, Any]]:
    """`make_judges` options for judges that read from `reader` (a packaged model's name, a
    GGUF path or a served model; None: the answering model): the thresholds measured for it,
    none for a model nobody measured."""
    return {judge: {"threshold": threshold}
            for judge, threshold in THRESHOLDS.get(reader or "", {}).items()}
