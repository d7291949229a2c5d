"""The Dashboard's first table: what a person using the shield sees on a run. Under the
run's decision rule, each judge alone, and with every answer shown: the share of answers
shown, the share of those that are wrong, and the share of the right answers that got
through, with the headline in plain words."""

from __future__ import annotations

import numpy as np

from ragshield.evaluation import RunTables
from ragshield.judging import KEPT
from ragshield.metrics.decision_view import ShownAnswers, in_plain_words, shown_answers
from ragshield.metrics.labels import awf_truth
from ragshield.services.runs.browse import keep_codes, run_decisions, run_judges
from ragshield.types import Table

KEEP_ALL_ROW = "every answer shown"


def _row(name: str, shown: ShownAnswers) -> list[str]:
    def share(value: float) -> str:
        return "n/a" if np.isnan(value) else f"{value:.0%}"

    return [name, share(shown.shown), share(shown.wrong_shown), share(shown.right_shown)]


def decision_table(tables: RunTables) -> Table:
    """The decision view of the run's samples under the tables' truth (a good answer is
    right and supported)."""
    samples = tables.samples
    good = awf_truth(samples["answer_correct"].to_numpy(dtype=bool),
                     samples["passages_support"].to_numpy(dtype=bool))
    judges = run_judges(tables)
    codes = keep_codes(tables.verdicts, samples["sample_id"], judges)
    rule = str(tables.config.get("rule") or "")
    answers = ~samples["refusal"].to_numpy(dtype=bool)  # a refusal shows no answer
    shield = shown_answers((run_decisions(tables, codes, judges) == KEPT) & answers, good)
    keep_all = shown_answers(answers, good)
    rows = [_row(f"the run's rule: {rule}", shield), _row(KEEP_ALL_ROW, keep_all)]
    rows += [_row(judge, shown_answers((codes[:, index] == KEPT) & answers, good))
             for index, judge in enumerate(judges)]
    headline = in_plain_words(shield, keep_all)
    note = (f"{headline[0].upper()}{headline[1:]} (the run's rule, {rule}). A wrong answer is "
            "one that is not right or not supported by its passages; a withheld, undecided or "
            "deferred answer is not shown, nor is a refusal (\"I don't know\" is no answer).")
    return Table("What people see", ["decided by", "answers shown", "wrong among shown",
                                     "right answers shown"], rows, note)
