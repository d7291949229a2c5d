"""The stacked judge of a run (docs/METHODS.md 4.12) as one more judge in the verdict table: its
score is the out-of-fold probability from a logistic regression over the other judges'
scores and keep bits, so no sample is scored by a model that saw its label."""

from __future__ import annotations

from typing import Mapping

import pandas as pd

from ragshield.metrics.stacked import NotEnoughLabels, stacked_oof_probabilities
from ragshield.policies.stacked_score import STACKED, run_features


def stack_inputs(verdicts: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The stacked judge's features of a verdict table's decided samples, one row each in
    the order of their ids, and their truth (answer_correct, passages_support) indexed by
    sample_id in the same order."""
    decided = verdicts[verdicts["keep"].notna()]
    samples = pd.Index(sorted(decided["sample_id"].unique()), name="sample_id")
    truth = (decided.drop_duplicates("sample_id").set_index("sample_id")
             .loc[samples, ["answer_correct", "passages_support"]])
    return run_features(decided, samples), truth


def with_stacked_judge(verdicts: pd.DataFrame, seed: int = 0,
                       groups: Mapping[str, str] | None = None) -> tuple[pd.DataFrame, str]:
    """The table plus a "stacked" judge fitted to the answer-correct label, and a sentence
    saying how it was fitted or why it was not (fewer than 20 labels per class). With
    `groups` (sample id -> its group, e.g. the article), scored one group out at a time."""
    features, labels = stack_inputs(verdicts)
    if labels.empty:
        return verdicts, "Stacked judge: no verdicts to stack."
    samples = labels.index
    try:
        probability = stacked_oof_probabilities(
            features, labels["answer_correct"].to_numpy(bool), seed=seed,
            groups=None if groups is None else [groups[str(s)] for s in samples])
    except NotEnoughLabels as exc:
        return verdicts, f"Stacked judge: not fitted, {exc}."
    stacked = pd.DataFrame({
        "sample_id": samples, "judge": STACKED, "keep": probability >= 0.5,
        "score": probability, "answer_correct": labels["answer_correct"].to_numpy(bool),
        "passages_support": labels["passages_support"].to_numpy(bool)})
    folds = ("5 folds" if groups is None
             else f"one group left out at a time, {len(set(groups.values()))} groups")
    note = (f"Stacked judge: logistic regression over {features.shape[1]} judge features, "
            f"scored out of fold ({folds}) on {len(stacked)} samples; keep = P >= 0.5.")
    return pd.concat([verdicts, stacked.astype({"keep": "boolean"})], ignore_index=True), note


