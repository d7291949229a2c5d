"""The grounded rule: chosen where its judges are, refused with the missing judges named, read
from the shipped numbers, and, as the default, in the default judge set, the Dashboard's start
form and the Demo's choices."""

from __future__ import annotations

import pytest

from ragshield.config import DEFAULT_DECISION_RULE, GROUNDED_JUDGES, GROUNDED_RULE, Settings
from ragshield.errors import OptionError
from ragshield.judges.registry import quick_judges
from ragshield.decision_rule import rule_judges
from ragshield.judging import choose_rule, decide, deciding_first, rule_of
from ragshield.judges.registry import make_judges
from ragshield.policies.answer_rule import shipped_rule
from ragshield.services.questions.ask_choices import rule_choices
from ragshield.services.questions.settlement import default_judges, default_rule
from ragshield.services.runs.runs import RULES, form_defaults
from ragshield.types import Verdict


def _verdicts(pre_answer: float, support: float) -> list[Verdict]:
    return [Verdict("pre_answer", pre_answer >= 0.76, pre_answer),
            Verdict("support", support >= 0.60, support), Verdict("trivial", True, 1.0)]


def test_a_server_set_up_with_it_asks_both_of_its_judges_and_decides_by_it():
    settings = Settings(decision_rule=GROUNDED_RULE)
    assert default_rule(settings).rule == GROUNDED_RULE
    for judge in GROUNDED_JUDGES:
        assert judge in default_judges(settings)
        assert judge in quick_judges(GROUNDED_JUDGES, settings)
    form = form_defaults(settings)
    assert set(GROUNDED_JUDGES) <= set(form.judges) and form.rule == GROUNDED_RULE
    assert GROUNDED_RULE in RULES
    # the default where the 1.5B reads both judges (docs/QUALITY.md); pre_answer alone where
    # the judges read from the 0.5B, which grounded was not fitted on
    assert default_rule(Settings()).rule == DEFAULT_DECISION_RULE == GROUNDED_RULE
    assert default_rule(Settings(model="qwen-0.5b", judge_model="self")).rule == "pre_answer"


def test_chosen_only_where_both_judges_run_and_refused_naming_the_missing_one():
    assert choose_rule(None, ["trivial", *GROUNDED_JUDGES], GROUNDED_RULE).rule == GROUNDED_RULE
    fallback = choose_rule(None, ["trivial", "pre_answer"], GROUNDED_RULE)
    assert fallback.rule == "majority" and "grounded" in fallback.note
    with pytest.raises(OptionError, match="add support to the judges"):
        choose_rule(GROUNDED_RULE, ["trivial", "pre_answer"])
    choices, chosen = rule_choices(["pre_answer", "support"], GROUNDED_RULE)
    assert GROUNDED_RULE in choices and chosen == GROUNDED_RULE
    assert GROUNDED_RULE not in rule_choices(["pre_answer"], None)[0]
    assert rule_judges(rule_of(GROUNDED_RULE), ["trivial"]) == set(GROUNDED_JUDGES)


def test_decides_from_both_scores_by_the_shipped_numbers():
    rule = shipped_rule()
    high = decide(_verdicts(0.97, 0.97), rule_of(GROUNDED_RULE))
    low = decide(_verdicts(0.97, 0.02), rule_of(GROUNDED_RULE))
    assert high.keep is True and low.keep is False and high.rule == GROUNDED_RULE
    assert f"{rule.threshold:.2f}" in low.reason
    refusal = decide(_verdicts(0.97, 0.97), rule_of(GROUNDED_RULE), refusal=True)
    assert refusal.keep is False and "refusal" in refusal.reason


def test_its_judges_are_asked_before_the_others_under_a_budget():
    judges = make_judges("trivial,p_true,support,pre_answer", Settings())
    order = [judge.name for judge in deciding_first(judges, rule_of(GROUNDED_RULE))]
    assert order.index("p_true") > max(order.index(j) for j in GROUNDED_JUDGES)


def test_browse_decides_a_grounded_run_as_decide_does_one_by_one():
    import pandas as pd

    from ragshield.evaluation import RunTables
    from ragshield.decision_rule import ABSTAINED, KEPT, UNDECIDED
    from ragshield.services.runs.browse import run_decisions
    from ragshield.services.runs.run_scores import RunView

    from ragshield.judges.short_answer import SHORT_SUPPORT_FLOOR

    long = "The Normans, a people of Norse origin, gave their name to it. They settled there."
    under = SHORT_SUPPORT_FLOOR - 0.03  # kept by the combination, not by the short floor
    scores = {"a": (0.97, 0.97, long), "b": (0.97, 0.02, long), "c": (0.02, 0.97, long),
              "d": (0.9, 0.9, long), "e": (None, None, long), "f": (0.97, under, "Rollo."),
              "g": (0.97, under, long), "h": (0.97, 0.97, "The Normans.")}
    rows = [{"sample_id": sid, "judge": judge, "keep": None if s is None else s >= 0.5,
             "score": s} for sid, (*pair, _) in scores.items()
            for judge, s in zip(GROUNDED_JUDGES, pair)]
    samples = pd.DataFrame({"sample_id": list(scores),
                            "answer": [answer for *_, answer in scores.values()],
                            "refusal": [sid == "d" for sid in scores]})
    tables = RunTables(run_id=1, truth="auto", config={"rule": GROUNDED_RULE},
                       samples=samples, verdicts=pd.DataFrame(rows))
    codes = run_decisions(RunView(tables))
    for sid, code in zip(scores, codes):
        *pair, answer = scores[sid]
        short = {"claims": [{"short_answer": answer.rstrip(".")}]} if len(answer) < 20 else {}
        verdicts = [Verdict(j, None, s, details=short if j == "support" else {})
                    for j, s in zip(GROUNDED_JUDGES, pair)]
        one = decide(verdicts, rule_of(GROUNDED_RULE), refusal=sid == "d")
        assert code == {True: KEPT, False: ABSTAINED, None: UNDECIDED}[one.keep], sid
    assert codes[0] == KEPT and codes[1] == codes[3] == ABSTAINED and codes[4] == UNDECIDED
    # the same scores: a long answer kept, a short one withheld by the floor
    assert codes[5] == ABSTAINED and codes[6] == codes[7] == KEPT
