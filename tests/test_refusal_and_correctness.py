"""Hand-computed cases for the refusal detector and the correctness matcher (METHODS 1, 2)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragshield.metrics.correctness import (
    TAU,
    answer_agreement,
    contains_reference,
    exact_match,
    is_correct,
    normalize_answer,
    rouge_l,
    same_answer,
    token_f1,
)
from ragshield.refusal import REFUSAL_TOKEN, is_invalid_question, is_refusal

# -- is_refusal --------------------------------------------------------------------------

REFUSALS = [
    "I don't know",
    "I don't know.",
    "I do not know",
    "I dont know",
    "Dont know.",
    "don't know",
    "DONT_KNOW",
    "NOT_KNOW",
    "__DONT_KNOW__",
    REFUSAL_TOKEN,
    "__ DONT_KNOW __",
    "dont_know",
    "I don\u2019t know.",  # typographic apostrophe
    "Unknown.",
    "unknown",
    "\"Unknown\"",
    "The context does not mention it",
    "The passages do not contain the answer.",
    "The provided passages don't mention who won.",
    "There is not enough information to answer.",
    "Not enough information.",
    "Insufficient context.",
    "I cannot answer this question.",
    "I can\u2019t determine that from the passages.",
    "I'm not sure.",
    "I am not sure",
    "No answer",
    "invalid question",
    "N/A",
    "",
    "   ",
    "...",  # no letter or digit: nothing was answered
    "-",
    "Sorry, I don't know.",
    "I'm sorry, but the passages do not mention it.",
    "Unfortunately, the context does not provide this information.",
    "None of the passages mentions the author.",
    "It is not possible to determine the answer from the passages.",
]

ANSWERS = [
    "Unknown Pleasures is an album by Joy Division",
    "Unknown Pleasures",
    "Paris",
    "Na",  # the chemical symbol of sodium
    "NA",
    "Nancy",
    "No",
    "No, it was built in 1889.",
    "Notre-Dame de Paris",
    "Knowledge is power",
    "Sorry Seems to Be the Hardest Word",
    "Unfortunately, the ship sank in 1912.",
    "The Unknown Soldier",
    "Dr. No",
    "It is not possible to travel faster than light",
    "Herman Melville",
    "-5 degrees",
]


@pytest.mark.parametrize("text", REFUSALS)
def test_refusals_are_detected(text: str) -> None:
    assert is_refusal(text)


@pytest.mark.parametrize("text", ANSWERS)
def test_answers_are_not_refusals(text: str) -> None:
    assert not is_refusal(text)


def test_none_is_a_refusal() -> None:
    assert is_refusal(None)


def test_invalid_question() -> None:
    assert is_invalid_question("Invalid question.")
    assert not is_invalid_question("Paris")
    assert not is_invalid_question(None)


# -- normalisation and the single measures ------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("The Eiffel Tower!", "eiffel tower"),
    ("  A   cat,  an owl ", "cat owl"),
    ("Theodore", "theodore"),  # "the" only as a word
    ("“Paris”", "paris"),
    ("\u201eBerlin\u201c", "berlin"),  # German quotes
    ("«Lyon»", "lyon"),
    ("1914\u20131918", "19141918"),  # en dash, like a hyphen
    ("1914-1918", "19141918"),
    ("O'Neill", "oneill"),
    ("Die Hauptstadt ist Berlin.", "die hauptstadt ist berlin"),
    ("", ""),
    ("...", ""),
])
def test_normalize_answer(text: str, expected: str) -> None:
    assert normalize_answer(text) == expected


def test_exact_match() -> None:
    assert exact_match("the Eiffel Tower.", ["Eiffel tower"])
    assert exact_match("Paris", ["Lyon", "paris"])
    assert not exact_match("Paris France", ["Paris"])
    assert not exact_match("Paris", [])


def test_token_f1_hand_computed() -> None:
    # pred {barack, obama}, gold {obama}: P = 1/2, R = 1 -> F1 = 2/3
    assert token_f1("Barack Obama", ["Obama"]) == pytest.approx(2 / 3)
    # 3 of 4 tokens shared both ways: P = R = 3/4 -> F1 = 3/4
    assert token_f1("w x y z", ["w x y q"]) == pytest.approx(0.75)
    # the best reference counts
    assert token_f1("Barack Obama", ["Bush", "Barack Obama"]) == 1.0
    # repeated tokens are counted with multiplicity: common = 1, P = 1/2, R = 1
    assert token_f1("paris paris", ["paris"]) == pytest.approx(2 / 3)
    assert token_f1("Paris", []) == 0.0
    assert token_f1("!!!", ["Paris"]) == 0.0


def test_rouge_l_hand_computed() -> None:
    # LCS("a b c d", "a c b d") = 3 (a b d or a c d): P = R = 3/4
    assert rouge_l("w x y z", ["w y x z"]) == pytest.approx(0.75)
    # reversed order: LCS = 1, P = R = 1/3 (token F1 would be 1)
    assert rouge_l("x y z", ["z y x"]) == pytest.approx(1 / 3)
    assert token_f1("x y z", ["z y x"]) == 1.0
    assert rouge_l("Paris", ["Lyon"]) == 0.0
    assert rouge_l("Paris", []) == 0.0


def test_contains_reference() -> None:
    assert contains_reference("It is Paris, France.", ["paris"])
    assert not contains_reference("Parisian food", ["Paris"])  # word boundaries
    assert not contains_reference("Paris", ["Paris, France"])  # the reference must be inside
    assert not contains_reference("anything", ["the"])  # a reference that normalises to ""


# -- is_correct ---------------------------------------------------------------------------

TEN = "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10"


def test_is_correct_rules() -> None:
    assert is_correct("the Eiffel Tower", ["Eiffel Tower"])  # EM
    assert is_correct("It was written by Herman Melville in 1851.", ["Herman Melville"])  # contains
    assert not is_correct("Melville", ["Herman Melville"])  # F1 = 2/3, ROUGE-L = 2/3
    assert is_correct("Herman Melville", ["Melville", "Herman Melville"])


def test_is_correct_tau_boundaries() -> None:
    seven = "w1 w2 w3 w4 w5 w6 w7 z8 z9 z10"  # 7 of 10 shared, same order
    eight = "w1 w2 w3 w4 w5 w6 w7 w8 z9 z10"
    assert token_f1(seven, [TEN]) == pytest.approx(0.7)
    assert rouge_l(seven, [TEN]) == pytest.approx(0.7)
    assert not is_correct(seven, [TEN])  # F1 = ROUGE-L = tau: not above it
    assert is_correct(eight, [TEN])  # 0.8 > 0.7
    assert is_correct("w x y z", ["w x y q"], tau=0.74)  # F1 = 0.75
    assert not is_correct("w x y z", ["w x y q"], tau=0.75)


def test_refusals_and_empty_answers_are_never_correct() -> None:
    assert not is_correct("I don't know", ["I don't know"])
    assert not is_correct("__DONT_KNOW__", ["dont know"])
    assert not is_correct("Unknown.", ["unknown"])
    assert not is_correct("", ["Paris"])
    assert not is_correct("...", ["..."])
    assert is_correct("Unknown Pleasures", ["Unknown Pleasures"])  # a title, not a refusal


def test_no_references_means_not_correct() -> None:
    assert not is_correct("Paris", [])
    assert not is_correct("Paris", ["", "  "])


# -- same_answer --------------------------------------------------------------------------

def test_same_answer() -> None:
    assert same_answer("I don't know", "__DONT_KNOW__")  # two refusals agree
    assert same_answer("Unknown.", "Not enough information.")
    assert not same_answer("I don't know", "Paris")
    assert not same_answer("Paris", "DONT_KNOW")
    assert same_answer("Paris", "Paris, France")  # containment one way is enough
    assert same_answer("Paris, France", "Paris")
    assert same_answer("The Eiffel Tower", "eiffel tower.")
    assert not same_answer("Paris", "Lyon")
    assert not same_answer("Barack Obama", "Michelle Obama")  # F1 1/2 both ways
    assert same_answer(TEN, "w1 w2 w3 w4 w5 w6 w7 w8 z9 z10")
    assert not same_answer(TEN, "w1 w2 w3 w4 w5 w6 w7 z8 z9 z10")
    assert same_answer("", "  ")  # empty replies read as refusals
    assert same_answer("...", "-")
    assert same_answer("The", "the")  # normalises to nothing, still equal to itself
    assert not same_answer("The", "A")


def test_answer_agreement_is_one_for_the_same_answer_else_the_word_overlap() -> None:
    assert answer_agreement("Paris, France", "Paris") == 1.0  # same_answer
    assert answer_agreement("Unknown.", "I don't know") == 1.0  # two refusals
    assert answer_agreement("I don't know", "Paris") == 0.0  # one refusal
    assert answer_agreement("Paris", "Lyon") == 0.0
    assert answer_agreement("Barack Obama", "Michelle Obama") == 0.5  # F1 1/2
    assert answer_agreement(TEN, "w1 w2 w3 w4 w5 w6 w7 z8 z9 z10") == pytest.approx(0.7)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30), st.text(max_size=30))
def test_answer_agreement_is_symmetric_in_range_and_one_only_for_a_match(a: str, b: str) -> None:
    agreement = answer_agreement(a, b)
    assert agreement == answer_agreement(b, a)
    assert (agreement == 1.0) == same_answer(a, b)
    assert 0.0 <= agreement <= (1.0 if same_answer(a, b) else TAU)


# -- properties ---------------------------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(st.text(), st.text(), st.lists(st.text(), max_size=3))
def test_matcher_properties(first: str, second: str, references: list[str]) -> None:
    assert isinstance(is_refusal(first), bool)
    assert normalize_answer(normalize_answer(first)) == normalize_answer(first)
    assert 0.0 <= token_f1(first, references) <= 1.0
    assert 0.0 <= rouge_l(first, references) <= token_f1(first, references) + 1e-9
    assert same_answer(first, second) == same_answer(second, first)
    assert same_answer(first, first)
    if is_correct(first, references):
        assert not is_refusal(first) and references
