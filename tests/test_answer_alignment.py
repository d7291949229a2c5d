"""Where a short answer sits in the passages (judges/answer_alignment.py): the right span
stands among the question's words, a wrong span of the same passage does not."""

from __future__ import annotations

from ragshield.judges.answer_alignment import FEATURES, alignment
from ragshield.types import Passage

NORMANS = Passage(title="Normans", text=(
    "The Normans were the people who in the 10th and 11th centuries gave their name to "
    "Normandy, a region in France. They were descended from Norse raiders and pirates who, "
    "under their leader Rollo, agreed to swear fealty to King Charles III of West Francia."))
LUSIGNAN = Passage(title="Normans", text=(
    "The Norman dynasty had a major political impact on medieval Europe. In 1185 Guy de "
    "Lusignan, King of Jerusalem, married into the dynasty."))
QUESTION = "Who gave their name to Normandy?"
PASSAGES = [NORMANS, LUSIGNAN]


def test_the_right_span_scores_above_every_wrong_span_of_the_passages() -> None:
    right = alignment(QUESTION, "The Normans", PASSAGES)
    assert right.found == 1.0 and right.behind_best == 0.0 and right.sentence_overlap > 0.5
    for wrong in ("Rollo", "King Charles III", "Guy de Lusignan", "Norse raiders"):
        reading = alignment(QUESTION, wrong, PASSAGES)
        assert reading.found == 1.0 and reading.behind_best < 0, wrong
        assert reading.score < right.score, wrong


def test_an_answer_near_the_questions_words_reads_them() -> None:
    text = "Rollo was a Viking. The people who gave their name to Normandy were the Normans."
    reading = alignment(QUESTION, "the Normans", [Passage(text=text)])
    assert reading.near_overlap > 0.5 and reading.sentence_overlap > 0.5
    assert alignment(QUESTION, "Rollo", [Passage(text=text)]).near_overlap == 0.0


def test_an_answer_the_passages_do_not_hold_or_that_echoes_the_question_scores_low() -> None:
    absent = alignment(QUESTION, "Charlemagne", PASSAGES)
    assert absent.found == 0.0 and absent.score < alignment(QUESTION, "Rollo", PASSAGES).score
    echo = alignment(QUESTION, "Normandy", PASSAGES)
    assert echo.echo == 1.0
    assert echo.score < alignment(QUESTION, "The Normans", PASSAGES).score


def test_every_feature_is_bounded_and_nothing_to_read_gives_a_score() -> None:
    reading = alignment("", "", [])
    assert len(reading.values()) == len(FEATURES)
    assert 0.0 < reading.score < 1.0
    for answer in ("The Normans", "Rollo", "1185", "a region in France"):
        values = alignment(QUESTION, answer, PASSAGES).values()
        assert all(-1.0 <= value <= 1.0 for value in values)
