"""scripts/bench_quality.py's rules for measuring judges across datasets: groups that never
split a title or a made question from its source, and rules tuned on the other datasets'
labels only (docs/QUALITY.md, "Across datasets")."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from ragshield.types import Passage, Sample

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import bench_quality  # noqa: E402  (the scripts import their neighbours by name)


def _sample(sample_id: str, title: str) -> Sample:
    return Sample(id=sample_id, question="Who?", passages=[Passage("Text.", title=title)])


def test_few_titles_are_the_groups_and_untitled_sets_are_grouped_by_their_source():
    titled = bench_quality.sample_groups([_sample(f"s{i}", f"article {i % 3}")
                                          for i in range(30)])
    assert set(titled.values()) == {"article 0", "article 1", "article 2"}
    untitled = bench_quality.sample_groups(
        [_sample(f"q{i}", "") for i in range(200)] + [_sample("q7#negated", "")])
    assert len(set(untitled.values())) == bench_quality.HASHED_GROUPS
    assert untitled["q7#negated"] == untitled["q7"]


def _verdicts(rng: np.random.Generator, shift: float, count: int = 150) -> pd.DataFrame:
    rows = []
    for index in range(count):
        good = bool(rng.random() < 0.35)
        for judge in ("trivial", "pre_answer", "p_true"):
            score = 1.0 if judge == "trivial" else float(rng.normal(0.65 if good else 0.4, 0.15)
                                                        + shift)
            rows.append({"sample_id": f"s{index}", "judge": judge, "keep": score >= 0.5,
                         "score": score, "answer_correct": good, "passages_support": good})
    return pd.DataFrame(rows)


def test_a_dataset_is_decided_by_rules_tuned_on_the_others_alone():
    """Changing one dataset's labels changes none of the thresholds it is decided by, and
    its decisions are the tuned rules applied to its own scores; the majority counts the
    judges, not the added rules."""
    rng = np.random.default_rng(0)
    tables = {name: _verdicts(rng, shift) for name, shift in (("a", 0.0), ("b", 0.1),
                                                                ("c", -0.05))}
    flipped = tables["a"].assign(answer_correct=~tables["a"]["answer_correct"],
                                 passages_support=~tables["a"]["passages_support"])
    before = bench_quality.across_datasets(tables)
    after = bench_quality.across_datasets({**tables, "a": flipped})

    assert before["a"][1] == after["a"][1]
    assert before["b"][1] != after["b"][1]  # "a" is among the datasets "b"'s rules learn from
    verdicts, thresholds = before["a"]
    rule = f"pre_answer aimed {bench_quality.ACROSS}"
    kept = verdicts[verdicts["judge"] == rule].set_index("sample_id")["keep"]
    scores = tables["a"][tables["a"]["judge"] == "pre_answer"].set_index("sample_id")["score"]
    assert (kept == (scores.loc[kept.index] >= thresholds[rule])).all()
    view = {row["rule"]: row for row in bench_quality.decision_view(verdicts)}
    assert "majority of 2" in view and f"stacked {bench_quality.ACROSS}, aimed" in view


def test_the_bench_s_majority_and_all_of_leave_undecided_judges_out():
    """As judging.decide: an undecided judge has no vote; the bench counted it as a vote to
    withhold (keeps T, T, F, None: the majority keeps, 2 of 3 deciding)."""
    keeps = {"a": True, "b": True, "c": False, "d": None}
    verdicts = pd.DataFrame([{"sample_id": "s", "judge": judge, "keep": keep,
                              "answer_correct": True, "passages_support": True}
                             for judge, keep in keeps.items()])
    view = {row["rule"]: row for row in bench_quality.decision_view(
        verdicts, all_of=[("a", "b", "d")])}
    assert view["majority of 4"]["shown"] == 1.0
    assert view[bench_quality.all_of_name(("a", "b", "d"))]["shown"] == 1.0
