"""Splitting an answer into the claims the support judge checks (ragshield/claims.py), and
taking claims out of an answer (redaction)."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from ragshield.claims import MAX_CLAIMS, split_claims, states_nothing, without_spans


def spans(answer: str) -> list[str]:
    return [answer[c.start:c.end] for c in split_claims(answer)]


def texts(answer: str) -> list[str]:
    return [c.text for c in split_claims(answer)]


def test_a_short_answer_is_one_claim() -> None:
    assert texts("Guy de Lusignan") == ["Guy de Lusignan"]
    assert spans("  Paris. ") == ["Paris."]


def test_sentences_split_at_their_ends_but_not_in_abbreviations_initials_or_numbers() -> None:
    answer = ("The Normans came from Norway, e.g. Rollo. J. K. Rowling wrote it in 3.5 years! "
              "Did the U.S. Army win? Dr. Smith said yes.")
    assert texts(answer) == ["The Normans came from Norway, e.g. Rollo.",
                             "J. K. Rowling wrote it in 3.5 years!",
                             "Did the U.S. Army win?", "Dr. Smith said yes."]


def test_citation_marks_stay_in_the_span_and_leave_the_claim_text() -> None:
    answer = "Normandy is named after the Normans [1]. It is in France [2][3]. Rouen [Passage 2]."
    assert spans(answer) == ["Normandy is named after the Normans [1].",
                             "It is in France [2][3].", "Rouen [Passage 2]."]
    assert texts(answer) == ["Normandy is named after the Normans.", "It is in France.",
                             "Rouen."]


def test_list_items_are_claims_and_headings_lead_ins_and_code_are_read() -> None:
    answer = ("## Causes\nThe main causes are:\n\n- Heat [1]\n- Cold, which is **bad**.\n"
              "1. Third item. It has two sentences.\n\n```python\nprint('Not. A claim.')\n```\n"
              "Done.")
    assert texts(answer) == ["Causes: The main causes are: Heat", "Cold, which is bad.",
                             "Third item.", "It has two sentences.", "print('Not. A claim.')",
                             "Done."]
    assert spans(answer)[0] == "## Causes\nThe main causes are:\n\n- Heat [1]"
    assert spans(answer)[2] == "1. Third item."
    assert spans(answer)[4] == "```python\nprint('Not. A claim.')\n```"


def test_no_word_of_the_answer_goes_unread_but_filler_and_formatting() -> None:
    """What the judge does not read is formatting, or headings, lead-ins and refusals of
    FILLER words alone; a heading or lead-in with nothing after it is read alone."""
    assert texts("Paris is the capital of France.\n# The moon is made of cheese") == [
        "Paris is the capital of France.", "The moon is made of cheese"]
    assert texts("## Summary ##\nHere is what I found:\n\n- Paris\n---\n* * *") == ["Paris"]
    assert texts("Paris.\nThe moon is made of:") == ["Paris.", "The moon is made of:"]
    assert texts("Paris.\n```\n \n```") == ["Paris."]  # a code block without a word
    # A closing fence holds nothing else; an info string that is no language name is read.
    assert texts("```\nx = 1\n``` The moon is cheese") == ["x = 1\n``` The moon is cheese"]
    assert texts("```The moon is cheese\nx = 1\n```") == ["The moon is cheese\nx = 1"]
    assert states_nothing("I don't know.") and not states_nothing("I don't know 1 thing.")


def test_a_refusal_is_no_claim_unless_it_says_more() -> None:
    assert split_claims("I don't know.") == []
    assert split_claims("") == []
    assert texts("Paris is the capital. Sorry, I don't know.") == ["Paris is the capital."]
    assert texts("Paris is the capital. I don't know its population.") == [
        "Paris is the capital.", "I don't know its population."]  # a word beyond FILLER
    assert texts("Paris is the capital. I don't know, but the moon is made of cheese.") == [
        "Paris is the capital.", "I don't know, but the moon is made of cheese."]


def test_splitting_takes_linear_time() -> None:
    """Each "." used to search the whole answer before it for an abbreviation, and a run of
    dots or of spaces was tried from each of its characters: quadratic time."""
    for answer in ("7. " * 50_000, "A. " * 50_000, "Paris." + "." * 50_000 + " It is.",
                   "Paris" + " " * 50_000 + "[1] is big. It is."):
        started = time.thread_time()  # this thread's CPU: other load does not count
        claims = split_claims(answer)
        assert time.thread_time() - started < 2.0 and claims
    assert len(split_claims("7. " * 50_000)) == MAX_CLAIMS


def test_a_very_long_answer_is_cut_to_the_limit_with_its_tail_in_the_last_claim() -> None:
    answer = " ".join(f"Sentence number {i} is here." for i in range(MAX_CLAIMS + 5))
    claims = split_claims(answer)
    assert len(claims) == MAX_CLAIMS and claims[-1].end == len(answer)
    assert claims[-1].text.endswith(f"{MAX_CLAIMS + 4} is here.")


def test_without_spans_takes_out_sentences_and_whole_list_items() -> None:
    answer = "Paris is the capital [1]. It has 90 million people. It is in France.\n- A\n- B\n"
    claims = split_claims(answer)
    assert without_spans(answer, [(claims[1].start, claims[1].end)]) == (
        "Paris is the capital [1]. It is in France.\n- A\n- B")
    assert without_spans(answer, [(claims[3].start, claims[3].end)]) == (
        "Paris is the capital [1]. It has 90 million people. It is in France.\n- B")


WORDS = st.sampled_from(["Paris", "is", "e.g.", "3.5", "[1]", "U.S.", "J.", "-", "**x**",
                         "\n", "\n\n", "```", "1.", "Yes!", "why?", ":", "Rouen.", "it"])


@settings(max_examples=300, deadline=None)
@given(st.lists(WORDS, max_size=40).map(" ".join))
def test_claims_are_ordered_disjoint_spans_of_the_answer(answer: str) -> None:
    claims = split_claims(answer)
    for claim in claims:
        assert 0 <= claim.start < claim.end <= len(answer)
        assert answer[claim.start:claim.end] == answer[claim.start:claim.end].strip()
        assert claim.text and any(c.isalnum() for c in claim.text)
    assert all(a.end <= b.start for a, b in zip(claims, claims[1:]))
    everything = without_spans(answer, [(c.start, c.end) for c in claims])
    assert len(everything) <= len(answer)
