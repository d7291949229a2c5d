"""scripts/bench_default_rule.py's bound on what each set allows (every combination fitted and
thresholded on the set itself): it tells a set no weighting can bring to the target from one
the held-out rule merely misses."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import bench_default_rule  # noqa: E402  (the scripts import their neighbours by name)


def _set(name: str, rng: np.random.Generator, separating: str, size: int = 80,
         without: str | None = None) -> pd.DataFrame:
    """Half right; `separating` tells right from wrong outright, the other judges are noise."""
    good = np.arange(size) % 2 == 0
    frame = pd.DataFrame({judge: rng.random(size) for judge in bench_default_rule.JUDGES})
    frame[separating] = np.where(good, 0.8, 0.2) + rng.normal(0, 0.05, size)
    if without:
        frame[without] = np.nan
    return frame.assign(good=good, set=name)


def test_ceilings_find_the_judge_that_separates_a_set_and_skip_a_judge_without_scores():
    rng = np.random.default_rng(0)
    frame = pd.concat([_set("clear", rng, "support"),
                       _set("no question", rng, "support", without="pre_answer")],
                      ignore_index=True)
    rows = {(r["set"], r["judges"]): r for r in bench_default_rule.ceilings(frame)}
    # support alone and any combination holding it show no wrong answer at 70% of the right
    assert rows["clear", "support"]["times"] == 0.0
    assert rows["clear", "pre_answer+support"]["times"] == 0.0
    assert rows["clear", "support"]["right_shown"] >= 0.7
    # a noise judge shows about as many wrong answers as showing everything
    assert rows["clear", "pre_answer"]["times"] > 0.6
    # no pre_answer on that set: nothing that needs it is bounded there
    assert ("no question", "pre_answer") not in rows
    assert ("no question", "pre_answer+support") not in rows
    assert rows["no question", "support"]["times"] == 0.0
    table = bench_default_rule.ceiling_table(list(rows.values()))
    assert table[2].startswith("| clear | ") and "| - |" in table[3]
