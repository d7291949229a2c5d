"""A run's tables as what a decision rule reads to decide all its answers at once
(decision_rule.RunScores): the judges' keep codes, their scores, the answers' shapes."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from ragshield.errors import OptionError
from ragshield.evaluation import RunTables
from ragshield.judges.short_answer import answer_is_short
from ragshield.decision_rule import ABSTAINED, KEPT, NOT_RUN, UNDECIDED, Rule
from ragshield.policies.policy import config_rule
from ragshield.policies.stacked_score import STACKED, run_features


def run_judges(tables: RunTables) -> tuple[str, ...]:
    """The run's judges: those of its config first, then any other with a verdict."""
    configured = [str(j) for j in tables.config.get("judges", [])]
    seen = list(dict.fromkeys(configured + list(tables.verdicts["judge"].unique())))
    return tuple(seen)


def keep_codes(verdicts: pd.DataFrame, sample_ids: pd.Series,
               judges: tuple[str, ...]) -> np.ndarray:
    """Sample x judge matrix of KEPT / ABSTAINED / UNDECIDED / NOT_RUN, in sample order."""
    keep = verdicts["keep"]
    codes = np.where(keep.isna(), UNDECIDED, np.where(keep.eq(True), KEPT, ABSTAINED))
    long = pd.Series(codes, index=pd.MultiIndex.from_arrays(
        [verdicts["sample_id"], verdicts["judge"]]))
    wide = long.unstack(fill_value=NOT_RUN) if len(long) else pd.DataFrame(index=[])
    return wide.reindex(index=sample_ids, columns=list(judges),
                        fill_value=NOT_RUN).to_numpy(dtype=int)


def judge_scores(tables: RunTables, judge: str) -> np.ndarray:
    """`judge`'s score on each sample of the run (NaN where it gave none); OptionError when
    it gave none at all."""
    verdicts = tables.verdicts[tables.verdicts["judge"] == judge]
    if verdicts["score"].notna().sum() == 0:
        scored = sorted(set(tables.verdicts.loc[tables.verdicts["score"].notna(), "judge"]))
        raise OptionError(f"judge {judge!r} gave no score in run {tables.run_id}; judges "
                          f"with scores: {', '.join(scored) or 'none'}, or {STACKED}")
    scores = tables.samples["sample_id"].map(verdicts.set_index("sample_id")["score"])
    return scores.to_numpy(dtype=float)


@dataclass(frozen=True)
class RunView:
    """One row per sample of the run, in its order; what is read is worked out once."""

    tables: RunTables

    @cached_property
    def rule(self) -> Rule:
        """The rule the run decides by (its config's)."""
        return config_rule(self.tables.config)

    @cached_property
    def judges(self) -> tuple[str, ...]:
        return run_judges(self.tables)

    @cached_property
    def codes(self) -> np.ndarray:
        return keep_codes(self.tables.verdicts, self.tables.samples["sample_id"], self.judges)

    def scores(self, judge: str) -> np.ndarray:
        return judge_scores(self.tables, judge)

    def features(self) -> pd.DataFrame:
        return run_features(self.tables.verdicts, self.tables.samples["sample_id"])

    @cached_property
    def short(self) -> np.ndarray:
        return self.tables.samples["answer"].fillna("").map(answer_is_short).to_numpy(bool)

    @cached_property
    def refusal(self) -> np.ndarray:
        return self.tables.samples["refusal"].to_numpy(dtype=bool)
