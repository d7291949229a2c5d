"""Fit where-a-short-answer-sits (judges/answer_alignment.py, ALIGNMENT_FIT) and measure it on
what it never read. Appends to docs/QUALITY.md.

    python scripts/fit_answer_alignment.py --data-dir DIR [--no-append]

Fitted (a logistic regression over FEATURES) on NQ-open's questions of the titles
scripts/train_verifier.py trains on (each gold answer found in its passage as written,
against up to two spans of its kind from that passage, judges/answer_distractors.py) and the
first half of HaluEval (right against hallucinated). Measured, never fitted on: every SQuAD
2.0 article (each answerable question's gold answer against the gold answer of another
question of its passage), NQ's held-out titles and HaluEval's second half: AUROC with 95%
bootstrap intervals, by group, and the spread over the SQuAD articles. Seconds on 2 cores;
no model is read.
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable

import numpy as np
from sklearn.linear_model import LogisticRegression

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_report import QUALITY_MD, bench_parser, publish  # noqa: E402
from bench_support import auroc_interval  # noqa: E402
from train_verifier import (halueval_pairs, nq_pairs, passages_of,  # noqa: E402
                            squad_pairs)
from ragshield.judges.answer_alignment import FEATURES, alignment  # noqa: E402

Pair = tuple[str, dict[str, Any], str, bool]  # group, row, answer, right


def verbatim(row: dict[str, Any]) -> bool:
    """Whether the gold answer is in the passage as written: NQ's distractors always are, so
    a gold answer that is not would teach that being in the passages is a bad sign."""
    gold = row["reference_answers"][0].strip().rstrip(".").lower()
    return any(gold in p["text"].lower() for p in row["passages"])


def features(pairs: Iterable[Pair]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    rows, labels, groups = [], [], []
    for group, row, answer, right in pairs:
        rows.append(alignment(row["question"], answer.strip().rstrip("."),
                              passages_of(row)).values())
        labels.append(right)
        groups.append(group)
    return np.asarray(rows), np.asarray(labels, dtype=bool), groups


def main() -> None:
    parser = bench_parser(__doc__, "answer_alignment.json", runs=1)
    parser.add_argument("--data-dir", type=Path, required=True)
    args = parser.parse_args()
    folder = args.data_dir
    train = features([("nq", row, answer, right)
                      for row, answer, right in nq_pairs(folder, held_out=False, seed=0)
                      if verbatim(row)]
                     + [("halueval", row, answer, right)
                        for row, answer, right in halueval_pairs(folder, second_half=False)])
    model = LogisticRegression(C=1.0, max_iter=1000).fit(train[0], train[1])
    weights = tuple(round(float(w), 3) for w in model.coef_[0])
    fitted = f"ALIGNMENT_FIT = ({model.intercept_[0]:.3f}, {weights})"
    held = features([(f"SQuAD {row['passages'][0]['title']}", row, answer, right)
                     for row, answer, right in squad_pairs(folder) if row["answerable"]]
                    + [("NQ held-out titles", row, answer, right)
                       for row, answer, right in nq_pairs(folder, held_out=True, seed=0)]
                    + [("HaluEval (second half)", row, answer, right)
                       for row, answer, right in halueval_pairs(folder, second_half=True)])
    scores = model.predict_proba(held[0])[:, 1]
    by_group: dict[str, list[int]] = defaultdict(list)
    for index, group in enumerate(held[2]):
        by_group[group].append(index)
    lines = ["| held out | answers (right) | AUROC [95%] |", "|---|---|---|"]
    figures: dict[str, Any] = {}
    for group, members in sorted(by_group.items()):
        area, low, high = auroc_interval(held[1][members], scores[members])
        figures[group] = {"auroc": area, "low": low, "high": high, "answers": len(members)}
        lines.append(f"| {group} | {len(members)} ({int(held[1][members].sum())}) | "
                     f"{area:.3f} [{low:.3f}, {high:.3f}] |")
    squad = [f["auroc"] for g, f in figures.items() if g.startswith("SQuAD")]
    spread = (f"SQuAD articles: median AUROC {statistics.median(squad):.3f}, from "
              f"{min(squad):.3f} to {max(squad):.3f}.")
    notes = (f"Fitted on {len(train[1]):,} answers ({int(train[1].sum()):,} right) of NQ-open "
             f"and HaluEval's first half; every row below is of a group it never read. "
             f"Features: {', '.join(FEATURES)}. {fitted}")
    print(fitted)
    publish("Answer alignment, held out", "python scripts/fit_answer_alignment.py --data-dir "
            "DIR", notes, "\n".join(lines) + "\n\n" + spread,
            {"fit": [float(model.intercept_[0]), list(weights)], "groups": figures},
            args.json_out, append=not args.no_append, show=True, markdown=QUALITY_MD)


if __name__ == "__main__":
    main()
