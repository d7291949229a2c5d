"""Wrong spans of a passage for training the answer verifier (judges/answer_distractors.py):
of the gold answer's kind, never the gold answer or a part of it."""

from __future__ import annotations

import random

from ragshield.judges.answer_distractors import kind_of, wrong_spans

NORMANS = ("The Normans (Norman: Nourmands; French: Normands) were the people who in the 10th "
           "and 11th centuries gave their name to Normandy, a region in France. Under their "
           "leader Rollo, they agreed to swear fealty to King Charles III of West Francia in "
           "911. Because of this, Normandy grew.")


def test_an_answer_kind_is_read_from_its_text() -> None:
    assert kind_of("911") == "number" and kind_of("May 18, 2018") == "number"
    assert kind_of("Guy de Lusignan") == "name"
    assert kind_of("beneath the liver") == "words"


def test_a_name_gets_other_names_of_its_passage_and_never_itself() -> None:
    spans = wrong_spans(NORMANS, ["The Normans", "Normans"], 10, random.Random(0))
    assert spans and "Rollo" in spans and "King Charles III of West Francia" in spans
    assert not any("normans" in span.lower() for span in spans)
    assert "Because" not in spans  # a sentence's first word is no name
    assert len(spans) == len(set(spans))


def test_a_number_gets_numbers_and_words_get_words_of_its_length() -> None:
    numbers = wrong_spans(NORMANS, ["10th"], 10, random.Random(0))
    assert set(numbers) == {"11th", "911"}
    words = wrong_spans(NORMANS, ["a region in France"], 3, random.Random(1))
    assert len(words) == 3 and all(len(span.split()) == 4 for span in words)
    assert all(span in NORMANS for span in words)


def test_no_gold_or_no_candidate_gives_nothing() -> None:
    assert wrong_spans(NORMANS, [], 2, random.Random(0)) == []
    assert wrong_spans("Only words here.", ["1066"], 2, random.Random(0)) == []
