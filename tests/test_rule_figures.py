"""The default rule's reason comes from the file the rule is read from (policies/rule_figures.py):
its figures are those the fit wrote, a bad file is refused naming the field, and the script
that fits the rule writes them again from its own held-out summary."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ragshield.judges.short_answer import SHORT_SUPPORT_FLOOR
from ragshield.policies.answer_rule import shipped_rule
from ragshield.policies.rule_figures import (RULE_FILE, HeldOut, Spread, default_rule_reason,
                                             read_held_out, reason_words)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from bench_default_rule import held_out_figures  # noqa: E402


def test_the_reason_quotes_the_figures_written_beside_the_shipped_rule() -> None:
    held = read_held_out()
    body = json.loads(RULE_FILE.read_text(encoding="utf-8"))
    assert held.sets == len(body["fitted_on"]) == len(shipped_rule().fitted_on)
    assert held.short_floor == SHORT_SUPPORT_FLOOR == shipped_rule().short_floor
    reason = default_rule_reason()
    assert f"fitted on {held.sets} public labelled sets" in reason
    assert f"the other {held.sets - 1}, it showed {held.times.median:.2f} times" in reason
    assert f"({held.times.lowest:.2f} to {held.times.highest:.2f})" in reason
    assert f"{held.right_shown.median:.0%} of the right answers" in reason
    assert f"{held.baseline} alone showed {held.baseline_right_shown:.0%}" in reason
    assert f"support reaches {SHORT_SUPPORT_FLOOR:.2f}" in reason


@pytest.mark.parametrize("change, field", [
    (lambda body: body.pop("held_out"), "held_out"),
    (lambda body: body["held_out"]["times"].update(median="low"), "held_out.times.median"),
    (lambda body: body["held_out"].update(baseline=""), "held_out.baseline"),
    (lambda body: body["held_out"]["short_floor"].pop("right_kept"),
     "held_out.short_floor.right_kept"),
])
def test_a_rule_file_without_its_figures_is_refused_naming_the_field(tmp_path, change,
                                                                     field) -> None:
    body = json.loads(RULE_FILE.read_text(encoding="utf-8"))
    change(body)
    path = tmp_path / "rule.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    with pytest.raises(ValueError) as refused:
        read_held_out(path)
    assert str(path) in str(refused.value) and field in str(refused.value)


def test_the_fitting_script_writes_the_figures_of_the_rule_it_writes() -> None:
    before = read_held_out()
    data = {"fitted: pre_answer + support": {"times": [0.2, 0.5, 0.4],
                                             "right_shown": [0.9, 0.7, 0.8]},
            "pre_answer >= 0.76 (the default before grounded)": {
                "times": [0.9, 0.8, 1.0], "right_shown": [0.3, 0.5, 0.4]}}
    held = held_out_figures(data, "fitted: pre_answer + support",
                            "pre_answer >= 0.76 (the default before grounded)", before)
    assert held == HeldOut(3, Spread(0.4, 0.2, 0.5), Spread(0.8, 0.7, 0.9), "pre_answer", 0.4,
                           before.short_floor, before.short_articles,
                           before.short_right_kept, before.short_wrong_kept)
    assert "it showed 0.40 times" in reason_words(held) and "the other 2," in reason_words(held)
