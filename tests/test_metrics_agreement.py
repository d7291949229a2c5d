"""Annotation agreement (METHODS 5.5) against published examples and hand-computed cases,
plus properties checked against brute-force definitions."""

from __future__ import annotations

import itertools
import json
import math
import warnings
from collections import Counter

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragshield.metrics.agreement import (
    agreement_summary,
    agreement_with_majority,
    cohen_kappa_pairs,
    fleiss_kappa,
    gwet_ac1,
    krippendorff_alpha_nominal,
    majority_by_item,
    percent_agreement,
)

SUMMARY_KEYS = {"percent", "cohen", "fleiss", "krippendorff_alpha", "gwet_ac1", "n_items"}
MAJORITY_KEYS = {"n", "percent", "kappa", "ac1", "false_keeps", "false_withholds"}


def is_nan(value) -> bool:
    return isinstance(value, float) and math.isnan(value)


def from_counts(rows: list[list[int]], categories: list[str]) -> list[tuple]:
    """Subjects x categories count table (Fleiss' layout) -> long triples; the raters of a
    subject are numbered 0, 1, ... (Fleiss' kappa ignores who they are)."""
    triples = []
    for item, row in enumerate(rows):
        rater = 0
        for category, count in zip(categories, row):
            for _ in range(count):
                triples.append((item, rater, category))
                rater += 1
    return triples


def from_matrix(coders: dict[str, str], missing: str) -> list[tuple]:
    """Krippendorff's layout: one string of space-separated values per coder, one per unit."""
    return [(unit, coder, value) for coder, row in coders.items()
            for unit, value in enumerate(row.split()) if value != missing]


# ------------------------------------------------------------------ published examples

def test_fleiss_wikipedia_example():
    # Wikipedia, "Fleiss' kappa", worked example: 10 subjects, 14 raters, 5 categories.
    #   P_i per row: 1.000 .253 .308 .440 .330 .462 .242 .176 .286 .286 -> P_bar = 0.378
    #   column totals 20 28 39 21 32 (of 140): p_j = .143 .200 .279 .150 .229
    #   P_e = sum p_j^2 = 0.213; kappa = (0.378 - 0.213) / (1 - 0.213) = 0.210
    rows = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0],
            [2, 2, 8, 1, 1], [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2],
            [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    triples = from_counts(rows, ["c1", "c2", "c3", "c4", "c5"])
    assert fleiss_kappa(triples) == pytest.approx(0.210, abs=5e-4)
    # Percent agreement is the mean of the P_i, i.e. Fleiss' P_bar.
    assert percent_agreement(triples) == pytest.approx(0.378, abs=5e-4)
    assert agreement_summary(triples)["n_items"] == 10


# Krippendorff, K. (2011). "Computing Krippendorff's Alpha-Reliability", Annenberg School
# for Communication, University of Pennsylvania (repository.upenn.edu/asc_papers/43),
# example C "Nominal data, any number of observers, missing data": published alpha = 0.743.
KRIPPENDORFF_2011 = {
    "A": "1 2 3 3 2 1 4 1 2 . . .",
    "B": "1 2 3 3 2 2 4 1 2 5 . 3",
    "C": ". 3 3 3 2 3 4 2 2 5 1 .",
    "D": "1 2 3 3 2 4 4 1 2 5 1 .",
}


def test_krippendorff_2011_nominal_example():
    # Unit 12 has a single value (unpairable) and is dropped: n = 40 pairable values,
    # n_c = (9, 13, 10, 5, 3) for values 1..5, sum n_c^2 = 384, sum_{c!=k} n_c n_k = 1216.
    # Disagreement per unit, (m_u^2 - sum_c n_uc^2) / (m_u - 1): unit 2 (2,2,3,2): 6/3 = 2;
    # unit 6 (1,2,3,4): 12/3 = 4; unit 8 (1,1,2,1): 6/3 = 2; all others 0; total 8.
    # alpha = 1 - (n - 1) * 8 / 1216 = 1 - 312/1216 = 113/152 = 0.7434
    triples = from_matrix(KRIPPENDORFF_2011, ".")
    alpha = krippendorff_alpha_nominal(triples)
    assert alpha == pytest.approx(113 / 152)
    assert round(alpha, 3) == 0.743
    assert agreement_summary(triples)["n_items"] == 11


def test_krippendorff_wikipedia_computational_example():
    # Wikipedia, "Krippendorff's alpha", section "A computational example" (3 coders,
    # 15 units, published nominal alpha = 0.691). Pairable values: n = 26 with
    # n_c = (7, 4, 10, 5) for values 1..4: sum_{c!=k} n_c n_k = 676 - 190 = 486.
    # Disagreeing units: 6 (3,3,4): (9-5)/2 = 2; 8 (1,3): 2/1 = 2; 15 (3,4): 2; total 6.
    # alpha = 1 - 25 * 6 / 486 = 56/81 = 0.691
    coders = {
        "A": "* * * * * 3 4 1 2 1 1 3 3 * 3",
        "B": "1 * 2 1 3 3 4 3 * * * * * * *",
        "C": "* * 2 1 3 4 4 * 2 1 1 3 3 * 4",
    }
    alpha = krippendorff_alpha_nominal(from_matrix(coders, "*"))
    assert alpha == pytest.approx(56 / 81)
    assert round(alpha, 3) == 0.691


def test_cohen_on_krippendorff_example_pair_by_hand():
    # Observers A and B share units 1-9: A = 1 2 3 3 2 1 4 1 2, B = 1 2 3 3 2 2 4 1 2.
    # Agree on 8 of 9. Marginals A (1:3, 2:3, 3:2, 4:1), B (1:2, 2:4, 3:2, 4:1):
    # p_e = (6 + 12 + 4 + 1) / 81 = 23/81; kappa = (8/9 - 23/81) / (1 - 23/81) = 49/58.
    kappas = cohen_kappa_pairs(from_matrix(KRIPPENDORFF_2011, "."))
    assert set(kappas) == {"A|B", "A|C", "A|D", "B|C", "B|D", "C|D"}
    assert kappas["A|B"] == pytest.approx(49 / 58)


# ------------------------------------------------------------------ hand-computed cases

def two_by_two(yes_yes: int, yes_no: int, no_yes: int, no_no: int) -> list[tuple]:
    cells = ([("yes", "yes")] * yes_yes + [("yes", "no")] * yes_no
             + [("no", "yes")] * no_yes + [("no", "no")] * no_no)
    return [t for item, (a, b) in enumerate(cells) for t in ((item, "A", a), (item, "B", b))]


def test_cohen_two_by_two_by_hand():
    # 50 items: A yes / B yes 20, yes/no 5, no/yes 10, no/no 15.
    # p_o = 35/50 = 0.7; A says yes 25/50, B 30/50: p_e = .5*.6 + .5*.4 = 0.5
    # kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4
    triples = two_by_two(20, 5, 10, 15)
    assert cohen_kappa_pairs(triples) == {"A|B": pytest.approx(0.4)}
    assert percent_agreement(triples) == pytest.approx(0.7)
    # Fleiss with two raters is Scott's pi: pooled p_yes = 55/100, P_e = .55^2 + .45^2
    # = 0.505; pi = (0.7 - 0.505) / 0.495 = 13/33.
    assert fleiss_kappa(triples) == pytest.approx(13 / 33)
    # Krippendorff: 15 disagreeing units, each (4 - 2)/1 = 2 -> 30; n = 100, n_c = 55, 45:
    # sum_{c!=k} n_c n_k = 2 * 55 * 45 = 4950; alpha = 1 - 99 * 30 / 4950 = 0.4.
    assert krippendorff_alpha_nominal(triples) == pytest.approx(0.4)


def test_perfect_agreement_is_one():
    labels = ["answerable", "unanswerable", "unsure", "answerable"]
    triples = [(item, rater, label) for item, label in enumerate(labels)
               for rater in ("ann", "bob", "cy")]
    summary = agreement_summary(triples)
    assert summary == {"percent": 1.0, "fleiss": 1.0, "krippendorff_alpha": 1.0,
                       "gwet_ac1": 1.0,
                       "cohen": {"ann|bob": 1.0, "ann|cy": 1.0, "bob|cy": 1.0}, "n_items": 4}


def test_systematic_disagreement_is_negative():
    # A: a b a b, B: b a b a. p_o = 0, p_e = .5*.5 + .5*.5 = 0.5 -> kappa = -1.
    # Fleiss: every P_i = 0, P_e = 0.5 -> -1. Krippendorff: 4 units x 2 = 8 observed,
    # n = 8, n_c = 4, 4: sum_{c!=k} = 32; alpha = 1 - 7 * 8 / 32 = -0.75.
    triples = [(i, "A", "a" if i % 2 == 0 else "b") for i in range(4)]
    triples += [(i, "B", "b" if i % 2 == 0 else "a") for i in range(4)]
    assert percent_agreement(triples) == 0.0
    assert cohen_kappa_pairs(triples)["A|B"] == pytest.approx(-1.0)
    assert fleiss_kappa(triples) == pytest.approx(-1.0)
    assert krippendorff_alpha_nominal(triples) == pytest.approx(-0.75)


def test_single_rater_gives_nothing():
    triples = [(i, "solo", lab) for i, lab in enumerate(["answerable", "unanswerable"])]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert is_nan(percent_agreement(triples))
        assert is_nan(fleiss_kappa(triples))
        assert is_nan(krippendorff_alpha_nominal(triples))
        assert is_nan(gwet_ac1(triples))
        assert cohen_kappa_pairs(triples) == {}
        assert agreement_summary(triples) == {"percent": None, "cohen": {}, "fleiss": None,
                                              "krippendorff_alpha": None, "gwet_ac1": None,
                                              "n_items": 0}


@pytest.mark.parametrize("empty", [[], pd.DataFrame(columns=["item", "rater", "label"])])
def test_no_ratings(empty):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert is_nan(gwet_ac1(empty))
        assert agreement_summary(empty) == {"percent": None, "cohen": {}, "fleiss": None,
                                            "krippendorff_alpha": None, "gwet_ac1": None,
                                            "n_items": 0}


def test_both_raters_constant_and_equal_is_nan():
    # p_o = 1 and p_e = 1: kappa = 0/0. Same for Fleiss (P_e = 1) and alpha (D_e = 0),
    # while the raw percent agreement is a perfectly defined 1. AC1 with one category (q = 1)
    # takes p_e = 0, so it is p_a = 1.
    triples = [(i, r, "answerable") for i in range(3) for r in ("A", "B")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert is_nan(cohen_kappa_pairs(triples)["A|B"])
        assert is_nan(fleiss_kappa(triples))
        assert is_nan(krippendorff_alpha_nominal(triples))
        assert gwet_ac1(triples) == 1.0
        summary = agreement_summary(triples)
    assert summary == {"percent": 1.0, "cohen": {"A|B": None}, "fleiss": None,
                       "krippendorff_alpha": None, "gwet_ac1": 1.0, "n_items": 3}
    json.dumps(summary, allow_nan=False)


def test_varying_rater_counts_by_hand():
    # i1: r1 a, r2 a, r3 b | i2: r1 a, r4 a (r2's None is no rating) |
    # i3: r1 a, r2 b, r3 b, r4 b | i4: r2 a alone (not pairable).
    triples = [("i1", "r1", "a"), ("i1", "r2", "a"), ("i1", "r3", "b"),
               ("i2", "r1", "a"), ("i2", "r4", "a"), ("i2", "r2", None),
               ("i3", "r1", "a"), ("i3", "r2", "b"), ("i3", "r3", "b"), ("i3", "r4", "b"),
               ("i4", "r2", "a")]
    # P_i: i1 (4 + 1 - 3) / 6 = 1/3; i2 1; i3 (1 + 9 - 4) / 12 = 1/2 -> mean 11/18.
    assert percent_agreement(triples) == pytest.approx(11 / 18)
    # Totals over i1-i3: a 5, b 4 of 9: P_e = 41/81;
    # kappa = (11/18 - 41/81) / (40/81) = (17/162) / (40/81) = 17/80.
    assert fleiss_kappa(triples) == pytest.approx(17 / 80)
    # Observed: i1 (9 - 5) / 2 = 2, i2 0, i3 (16 - 10) / 3 = 2 -> 4; n = 9,
    # sum_{c!=k} n_c n_k = 81 - 41 = 40; alpha = 1 - 8 * 4 / 40 = 0.2.
    assert krippendorff_alpha_nominal(triples) == pytest.approx(0.2)
    # Pairs: r1|r2 on i1 (a,a), i3 (a,b): p_o 1/2, p_e (2*1)/4 = 1/2 -> 0.
    #        r1|r3 on i1 (a,b), i3 (a,b): p_o 0, p_e 0 -> 0.
    #        r1|r4 on i2 (a,a), i3 (a,b): p_o 1/2, p_e 1/2 -> 0.
    #        r2|r3 on i1 (a,b), i3 (b,b): p_o 1/2, p_e (1*2)/4 -> 0.
    #        r2|r4 on i3 (b,b) only, r3|r4 on i3 (b,b) only: p_e = 1 -> NaN.
    kappas = cohen_kappa_pairs(triples)
    assert set(kappas) == {"r1|r2", "r1|r3", "r1|r4", "r2|r3", "r2|r4", "r3|r4"}
    for pair in ("r1|r2", "r1|r3", "r1|r4", "r2|r3"):
        assert kappas[pair] == pytest.approx(0.0, abs=1e-12)
    assert is_nan(kappas["r2|r4"]) and is_nan(kappas["r3|r4"])
    assert agreement_summary(triples)["n_items"] == 3


def test_pair_without_common_item_is_left_out():
    triples = [(1, "A", "x"), (1, "B", "y"), (2, "C", "x"), (2, "B", "x")]
    assert set(cohen_kappa_pairs(triples)) == {"A|B", "B|C"}


def test_pair_keys_sorted_naturally_for_integer_ids():
    triples = [(i, rater, "x" if (i + rater) % 3 else "y") for i in range(6) for rater in (10, 9)]
    assert set(cohen_kappa_pairs(triples)) == {"9|10"}


def test_dataframe_and_triples_agree_and_last_label_wins():
    triples = [("s1", "A", "answerable"), ("s1", "B", "unanswerable"),
               ("s2", "A", "unsure"), ("s2", "B", "unsure"),
               ("s1", "B", "answerable")]  # B changed their mind on s1: current label
    frame = pd.DataFrame(triples, columns=["item", "rater", "label"]).assign(extra=1)
    assert agreement_summary(frame) == agreement_summary(triples)
    assert percent_agreement(triples) == 1.0


def test_dataframe_missing_column_raises():
    with pytest.raises(ValueError, match="label"):
        percent_agreement(pd.DataFrame({"item": [1], "rater": ["A"]}))


def test_summary_is_json_with_exact_keys():
    summary = agreement_summary(from_matrix(KRIPPENDORFF_2011, "."))
    assert set(summary) == SUMMARY_KEYS
    json.dumps(summary, allow_nan=False)


def test_majority_by_item_follows_methods_3():
    triples = [(1, "A", "answerable"), (1, "B", "answerable"), (1, "C", "unanswerable"),
               (2, "A", "answerable"), (2, "B", "unanswerable"),  # tie
               (3, "A", "unsure"), (3, "B", "unanswerable"),  # unsure ignored
               (4, "A", "unsure")]
    assert majority_by_item(triples) == {1: "answerable", 2: None, 3: "unanswerable", 4: None}


# ------------------------------------------------------------------ Gwet's AC1

def test_gwet_ac1_three_raters_by_hand():
    # 5 items x 3 raters, categories a / b; counts (a, b) per item:
    #   i1 (3, 0), i2 (2, 1), i3 (1, 2), i4 (0, 3), i5 (3, 0)
    # P_i = sum_k n_ik (n_ik - 1) / (3 * 2): 1, 1/3, 1/3, 1, 1 -> p_a = (11/3) / 5 = 11/15
    # pi_a = mean(3/3, 2/3, 1/3, 0, 3/3) = 3/5, pi_b = 2/5; q = 2:
    # p_e = (3/5 * 2/5 + 2/5 * 3/5) / (2 - 1) = 12/25
    # AC1 = (11/15 - 12/25) / (1 - 12/25) = (19/75) / (13/25) = 19/39 = 0.487
    # (Fleiss for comparison: P_e = 0.6^2 + 0.4^2 = 13/25 -> (16/75) / (12/25) = 4/9.)
    rows = [[3, 0], [2, 1], [1, 2], [0, 3], [3, 0]]
    triples = from_counts(rows, ["a", "b"])
    assert gwet_ac1(triples) == pytest.approx(19 / 39)
    assert fleiss_kappa(triples) == pytest.approx(4 / 9)
    assert agreement_summary(triples)["gwet_ac1"] == pytest.approx(19 / 39)


def test_gwet_ac1_uses_only_pairable_items_and_their_categories():
    # i3's lone "c" is no pairable rating: q = 2 (a, b), pi over i1, i2 only.
    # i1 (a, a), i2 (a, b): p_a = (1 + 0) / 2 = 1/2; pi_a = (1 + 1/2) / 2 = 3/4, pi_b = 1/4;
    # p_e = 2 * 3/16 = 3/8; AC1 = (1/2 - 3/8) / (5/8) = 1/5.
    triples = [(1, "A", "a"), (1, "B", "a"), (2, "A", "a"), (2, "B", "b"), (3, "A", "c")]
    assert gwet_ac1(triples) == pytest.approx(0.2)


def test_gwet_ac1_stays_high_where_kappa_collapses_on_skewed_labels():
    # 20 items, 2 raters: both say answerable on 19, B says unanswerable on the last one.
    # p_o = 19/20. Cohen: A (20, 0), B (19, 1): S = 380 = n * agree -> kappa = 0.
    # Fleiss (Scott's pi): pooled 39/40, 1/40: P_e = 1522/1600 -> (1520 - 1522) / 78 = -1/39.
    # AC1: pi = 39/40, 1/40, p_e = 2 * 39/1600 = 39/800;
    #      AC1 = (760/800 - 39/800) / (761/800) = 721/761 = 0.947.
    triples = [(i, "A", "answerable") for i in range(20)]
    triples += [(i, "B", "answerable" if i < 19 else "unanswerable") for i in range(20)]
    assert percent_agreement(triples) == pytest.approx(0.95)
    assert cohen_kappa_pairs(triples)["A|B"] == pytest.approx(0.0, abs=1e-12)
    assert fleiss_kappa(triples) == pytest.approx(-1 / 39)
    assert gwet_ac1(triples) == pytest.approx(721 / 761)
    assert gwet_ac1(triples) > 0.9
    # The same skew for a judge that keeps everything against the majority label.
    majority = {i: "answerable" if i < 19 else "unanswerable" for i in range(20)}
    result = agreement_with_majority({i: True for i in range(20)}, majority)
    assert result["kappa"] == pytest.approx(0.0, abs=1e-12)
    assert result["ac1"] == pytest.approx(721 / 761)
    assert result["false_keeps"] == [19] and result["false_withholds"] == []


def test_gwet_ac1_degenerate_inputs_are_nan_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert is_nan(gwet_ac1([]))
        assert is_nan(gwet_ac1([(i, f"r{i}", "a") for i in range(4)]))  # single ratings
        assert gwet_ac1([(1, "A", "a"), (1, "B", "a")]) == 1.0  # one category: AC1 = p_a
        assert agreement_summary([(1, "A", "a"), (2, "B", "b")])["gwet_ac1"] is None
        assert agreement_with_majority({}, {})["ac1"] is None


# ------------------------------------------------------------------ judge vs majority

def test_agreement_with_majority_by_hand():
    predictions = {1: True, 2: True, 3: False, 4: False, 5: True, 6: True, 7: False}
    majority = {1: "answerable", 2: "unanswerable", 3: "unanswerable", 4: "answerable",
                5: "answerable", 6: None, 7: "unsure", 8: "answerable"}
    # Used: items 1-5 (6 no majority, 7 unsure, 8 no prediction).
    # judge T T F F T vs human T F F T T: agree on 1, 3, 5 -> 3/5.
    # judge 3 T / 2 F, human 3 T / 2 F: p_e = (9 + 4) / 25 = 13/25, p_o = 15/25,
    # kappa = (15/25 - 13/25) / (12/25) = 1/6.
    # AC1: pi_T = (3 + 3) / 10 = 0.6, p_e = 2 * 0.6 * 0.4 = 0.48 -> (0.6 - 0.48) / 0.52 = 3/13.
    # Differ on 2 (judge keeps, human no: false keep) and 4 (judge withholds: false withhold).
    result = agreement_with_majority(predictions, majority)
    assert result == {"n": 5, "percent": pytest.approx(0.6), "kappa": pytest.approx(1 / 6),
                      "ac1": pytest.approx(3 / 13), "false_keeps": [2], "false_withholds": [4]}
    # With "unanswerable" as the positive label the human side flips: F T T F F,
    # agree on 2 and 4 -> 2/5; human 2 T / 3 F: p_e = (3*2 + 2*3) / 25 = 12/25,
    # kappa = (10/25 - 12/25) / (13/25) = -2/13. AC1: pi_T = (3 + 2) / 10 = 1/2, p_e = 1/2
    # -> (0.4 - 0.5) / 0.5 = -0.2. Judge T / human F on 1 and 5, judge F / human T on 3.
    flipped = agreement_with_majority(predictions, majority, positive="unanswerable")
    assert flipped == {"n": 5, "percent": pytest.approx(0.4), "kappa": pytest.approx(-2 / 13),
                       "ac1": pytest.approx(-0.2), "false_keeps": [1, 5],
                       "false_withholds": [3]}


def test_false_keeps_and_withholds_ids_sorted():
    predictions = {"s10": True, "s2": True, "s3": False, "s1": False, "s4": True, "s5": None}
    majority = {"s10": "unanswerable", "s2": "unanswerable", "s3": "answerable",
                "s1": "answerable", "s4": "answerable", "s5": "unanswerable", "s6": "answerable"}
    result = agreement_with_majority(predictions, majority)
    assert result["n"] == 5  # s5 has no prediction, s6 none at all
    assert result["false_keeps"] == ["s10", "s2"] and result["false_withholds"] == ["s1", "s3"]
    # Ids that do not compare are sorted by their text.
    mixed = agreement_with_majority({"a": True, 2: True}, {"a": "unanswerable", 2: "unanswerable"})
    assert mixed["false_keeps"] == [2, "a"]
    json.dumps(result, allow_nan=False)


def test_agreement_with_majority_degenerate():
    nothing = {"n": 0, "percent": None, "kappa": None, "ac1": None, "false_keeps": [],
               "false_withholds": []}
    assert agreement_with_majority({}, {}) == nothing
    assert agreement_with_majority({1: True}, {1: None, 2: "answerable"}) == nothing
    # Both always positive: p_e = 1 -> kappa undefined, percent 1; AC1 with one category = 1.
    assert agreement_with_majority({1: True, 2: True}, {1: "answerable", 2: "answerable"}) \
        == {"n": 2, "percent": 1.0, "kappa": None, "ac1": 1.0, "false_keeps": [],
            "false_withholds": []}


# ------------------------------------------------------------------ properties

ITEMS = st.integers(0, 6)
RATERS = st.sampled_from(["ann", "bob", "cy", "dee"])
LABELS = st.sampled_from(["answerable", "unanswerable", "unsure", "other"])


@st.composite
def ratings(draw) -> list[tuple]:
    cells = draw(st.dictionaries(st.tuples(ITEMS, RATERS), LABELS, max_size=28))
    return [(item, rater, label) for (item, rater), label in cells.items()]


def brute_percent(triples: list[tuple]) -> float:
    by_item: dict = {}
    for item, _, label in triples:
        by_item.setdefault(item, []).append(label)
    shares = []
    for labels in by_item.values():
        pairs = list(itertools.combinations(labels, 2))
        if pairs:
            shares.append(sum(a == b for a, b in pairs) / len(pairs))
    return sum(shares) / len(shares) if shares else math.nan


def brute_cohen(triples: list[tuple]) -> dict[str, float]:
    table = {(item, rater): label for item, rater, label in triples}
    raters = sorted({rater for _, rater, _ in triples})
    result = {}
    for a, b in itertools.combinations(raters, 2):
        common = [(table[i, a], table[i, b]) for i, r in table if r == a and (i, b) in table]
        if not common:
            continue
        n = len(common)
        p_o = sum(x == y for x, y in common) / n
        ca, cb = Counter(x for x, _ in common), Counter(y for _, y in common)
        p_e = sum(ca[k] / n * cb[k] / n for k in ca)
        result[f"{a}|{b}"] = math.nan if math.isclose(p_e, 1.0) else (p_o - p_e) / (1 - p_e)
    return result


def brute_ac1(triples: list[tuple]) -> float:
    by_item: dict = {}
    for item, _, label in triples:
        by_item.setdefault(item, []).append(label)
    pairable = [labels for labels in by_item.values() if len(labels) >= 2]
    if not pairable:
        return math.nan
    categories = {label for labels in pairable for label in labels}
    pi = {k: sum(labels.count(k) / len(labels) for labels in pairable) / len(pairable)
          for k in categories}
    p_e = 0.0 if len(pi) == 1 else sum(p * (1 - p) for p in pi.values()) / (len(pi) - 1)
    return (brute_percent(triples) - p_e) / (1 - p_e)


def same(x, y) -> bool:
    return (is_nan(x) and is_nan(y)) or (not is_nan(x) and not is_nan(y)
                                         and math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12))


@settings(max_examples=200, deadline=None)
@given(ratings())
def test_bounds_and_brute_force(triples):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        percent = percent_agreement(triples)
        kappas = cohen_kappa_pairs(triples)
        fleiss = fleiss_kappa(triples)
        alpha = krippendorff_alpha_nominal(triples)
        ac1 = gwet_ac1(triples)
        summary = agreement_summary(triples)
    assert same(percent, brute_percent(triples))
    assert same(ac1, brute_ac1(triples))
    assert is_nan(ac1) == is_nan(percent)
    assert is_nan(ac1) or -1.0 - 1e-12 <= ac1 <= 1.0 + 1e-12
    assert is_nan(percent) == (summary["n_items"] == 0)
    assert is_nan(percent) or 0.0 <= percent <= 1.0
    expected = brute_cohen(triples)
    assert set(kappas) == set(expected)
    for pair, kappa in kappas.items():
        assert same(kappa, expected[pair]), pair
        assert is_nan(kappa) or -1.0 - 1e-12 <= kappa <= 1.0 + 1e-12
    assert is_nan(fleiss) or fleiss <= 1.0 + 1e-12
    assert is_nan(alpha) or alpha <= 1.0 + 1e-12
    # One category among the pairable ratings <=> both chance-corrected measures undefined.
    assert is_nan(fleiss) == is_nan(alpha)
    assert set(summary) == SUMMARY_KEYS
    json.dumps(summary, allow_nan=False)


@settings(max_examples=150, deadline=None)
@given(ratings(), st.data())
def test_invariant_to_renaming_categories_and_shuffling_rows(triples, data):
    categories = sorted({label for _, _, label in triples})
    renamed_to = data.draw(st.permutations([f"cat{i}" for i in range(len(categories))]))
    rename = dict(zip(categories, renamed_to))
    shuffled = data.draw(st.permutations(triples))
    changed = [(item, rater, rename[label]) for item, rater, label in shuffled]
    before, after = agreement_summary(triples), agreement_summary(changed)
    assert before["n_items"] == after["n_items"]
    assert set(before["cohen"]) == set(after["cohen"])
    for key in ("percent", "fleiss", "krippendorff_alpha", "gwet_ac1"):
        assert (before[key] is None) == (after[key] is None)
        if before[key] is not None:
            assert before[key] == pytest.approx(after[key], rel=1e-9, abs=1e-12)
    for pair, kappa in before["cohen"].items():
        assert (kappa is None) == (after["cohen"][pair] is None)
        if kappa is not None:
            assert kappa == pytest.approx(after["cohen"][pair], rel=1e-9, abs=1e-12)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(ITEMS, st.tuples(LABELS, st.sets(RATERS, min_size=1)), max_size=7))
def test_unanimous_items_give_one(units):
    # Every item's raters agree: percent 1, and Fleiss and Krippendorff are both 1 when
    # the pairable items use >= 2 categories (NaN with a single one: nothing to correct).
    triples = [(item, rater, label) for item, (label, raters) in units.items()
               for rater in raters]
    pairable = {label for label, raters in units.values() if len(raters) >= 2}
    summary = agreement_summary(triples)
    if not pairable:
        assert summary["n_items"] == 0 and summary["percent"] is None
        return
    assert summary["percent"] == 1.0
    assert summary["gwet_ac1"] == pytest.approx(1.0)
    if len(pairable) >= 2:
        assert summary["fleiss"] == pytest.approx(1.0)
        assert summary["krippendorff_alpha"] == pytest.approx(1.0)
    else:
        assert summary["fleiss"] is None and summary["krippendorff_alpha"] is None
    for kappa in summary["cohen"].values():
        assert kappa is None or kappa == pytest.approx(1.0)


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 4), st.data())
def test_krippendorff_is_small_sample_corrected_fleiss_on_complete_data(m, data):
    # With m ratings on every item (n = N m values), D_o = 1 - P_bar and
    # D_e = n (1 - P_e) / (n - 1), hence alpha = 1 - (n - 1) / n * (1 - kappa_Fleiss).
    n_items = data.draw(st.integers(1, 6))
    grid = data.draw(st.lists(st.lists(LABELS, min_size=m, max_size=m),
                              min_size=n_items, max_size=n_items))
    triples = [(i, f"r{j}", label) for i, row in enumerate(grid) for j, label in enumerate(row)]
    fleiss, alpha = fleiss_kappa(triples), krippendorff_alpha_nominal(triples)
    n = n_items * m
    assert is_nan(fleiss) == is_nan(alpha)
    if not is_nan(fleiss):
        assert alpha == pytest.approx(1 - (n - 1) / n * (1 - fleiss), rel=1e-9, abs=1e-12)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(ITEMS, st.tuples(st.booleans(),
                                        st.sampled_from(["answerable", "unanswerable",
                                                         "unsure", None]))))
def test_agreement_with_majority_matches_cohen_of_two_raters(pairs):
    predictions = {item: pred for item, (pred, _) in pairs.items()}
    majority = {item: label for item, (_, label) in pairs.items()}
    result = agreement_with_majority(predictions, majority)
    used = {item: (pred, label == "answerable") for item, (pred, label) in pairs.items()
            if label not in (None, "unsure")}
    assert result["n"] == len(used)
    as_raters = [t for item, (p, h) in used.items()
                 for t in ((item, "judge", p), (item, "human", h))]
    expected = cohen_kappa_pairs(as_raters).get("human|judge", math.nan)
    assert set(result) == MAJORITY_KEYS
    assert same(math.nan if result["ac1"] is None else result["ac1"], gwet_ac1(as_raters))
    assert result["false_keeps"] == sorted(i for i, (p, h) in used.items() if p and not h)
    assert result["false_withholds"] == sorted(i for i, (p, h) in used.items() if h and not p)
    assert (result["kappa"] is None) == is_nan(expected)
    if result["kappa"] is not None:
        assert result["kappa"] == pytest.approx(expected)
        assert -1.0 <= result["kappa"] <= 1.0
    if used:
        assert result["percent"] == pytest.approx(
            sum(p == h for p, h in used.values()) / len(used))
        assert 0.0 <= result["percent"] <= 1.0
    else:
        assert result["percent"] is None
