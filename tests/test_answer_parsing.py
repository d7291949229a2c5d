"""Reading answerers' replies (METHODS 4.1): malformed model outputs of every kind."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragshield.answerers.parsing import cited_passages, final_answer, parse_answer

CoT = {"expected_prefix": "Final Answer"}
INSTRUCT = {"expected_prefix": "Response"}
EVIDENCE = {"wants_evidence": True}

# raw reply, parse options, expected answer text, expected evidence, expected
# internal-knowledge flag, a fragment of the expected parse error (None: no error).
# Three passages (ids 0..2) unless a case says otherwise.
CASES = [
    # plain answers, with decoration
    ("Paris", {}, "Paris", [], False, None),
    ("  Paris  \n", {}, "Paris", [], False, None),
    ('"Paris"', {}, "Paris", [], False, None),
    ('"Paris".', {}, "Paris.", [], False, None),
    ("\u201cParis\u201d", {}, "Paris", [], False, None),
    ("\u201eBerlin\u201c", {}, "Berlin", [], False, None),
    ("\u00abLyon\u00bb", {}, "Lyon", [], False, None),
    ("'Tis the season", {}, "'Tis the season", [], False, None),  # an apostrophe, not a quote
    ('"Paris" and "Lyon"', {}, '"Paris" and "Lyon"', [], False, None),
    ("**Paris**", {}, "Paris", [], False, None),
    ("*Paris*", {}, "Paris", [], False, None),
    ("`Paris`", {}, "Paris", [], False, None),
    ("- Paris", {}, "Paris", [], False, None),
    ("## Paris", {}, "Paris", [], False, None),
    ("> Paris", {}, "Paris", [], False, None),
    ("-5 degrees", {}, "-5 degrees", [], False, None),  # a minus sign, not a bullet
    ("Paris\n\nThe passages say that Paris is the capital.", {}, "Paris", [], False, None),
    ("The capital of France is Paris.", {}, "The capital of France is Paris.", [], False, None),
    # prefixes, any case, any markdown, the last one wins
    ("Answer: Paris", {}, "Paris", [], False, None),
    ("answer:Paris", {}, "Paris", [], False, None),
    ("ANSWER: Paris", {}, "Paris", [], False, None),
    ("**Answer:** Paris", {}, "Paris", [], False, None),
    ("**Answer**: Paris", {}, "Paris", [], False, None),
    ("Short answer: Paris", {}, "Paris", [], False, None),
    ("Answer:\nParis", {}, "Paris", [], False, None),
    ("Response: Paris", INSTRUCT, "Paris", [], False, None),
    ("RESPONSE:   'Paris'", INSTRUCT, "Paris", [], False, None),
    ("Final Answer: Paris", CoT, "Paris", [], False, None),
    ("final answer : Paris", CoT, "Paris", [], False, None),
    ("**Final Answer:** \"Paris\".", CoT, "Paris.", [], False, None),
    ("Final_Answer: Paris", CoT, "Paris", [], False, None),
    ("Answer: Lyon\nAnswer: Paris", {}, "Paris", [], False, None),
    ("Thought: the answer: Lyon? No. Final Answer: Paris", CoT, "Paris", [], False, None),
    ("Response: Lyon\nWait.\nResponse: Paris", INSTRUCT, "Paris", [], False, None),
    # reasoning before the prefix
    ("Thought: Passage-1 names the capital.\nFinal Answer: Paris", CoT, "Paris", [1], False, None),
    ("Passage-0 says that Paris is the capital of France.\nResponse: Paris",
     INSTRUCT, "Paris", [0], False, None),
    ("<think>Maybe Lyon. Answer: Lyon</think>\nAnswer: Paris", {}, "Paris", [], False, None),
    ("The passages do not help. From my own knowledge, it is Rome.\nResponse: Rome",
     INSTRUCT, "Rome", [], True, None),
    # the expected prefix is missing: the last sentence stands in, flagged
    ("Thought: Passage-2 says it is Paris. So the answer is Paris.", CoT,
     "So the answer is Paris.", [2], False, "no 'Final Answer:' line"),
    ("Paris", INSTRUCT, "Paris", [], False, "no 'Response:' line"),
    ("Passage-0 mentions Vienna.\nThe answer is the Danube", INSTRUCT,
     "The answer is the Danube", [0], False, "no 'Response:' line"),
    # a plain "answer:" inside a sentence is not a label
    ("Answer: Paris\nList the passages that contain the answer: Passage-0", {}, "Paris", [0],
     False, None),
    # evidence lines and inline citations
    ("Answer: Paris\nEvidence: ## Passage-0, Passage-2 ##", EVIDENCE, "Paris", [0, 2], False, None),
    ("Paris\nEvidence: ## Passage-0, Passage-2 ##", EVIDENCE, "Paris", [0, 2], False, None),
    ("Paris Evidence: ## Passage-1 ##", EVIDENCE, "Paris", [1], False, None),
    ("Paris. Evidence: passages 0 and 2", EVIDENCE, "Paris.", [0, 2], False, None),
    ("Paris [Passage 1]", EVIDENCE, "Paris", [1], False, None),
    ("Paris (Passage-0, Passage-1)", EVIDENCE, "Paris", [0, 1], False, None),
    ("Paris (Evidence: Passage-2)", EVIDENCE, "Paris", [2], False, None),
    ("Paris ## Passage-2 ##", EVIDENCE, "Paris", [2], False, None),
    ("Answer: Paris\nEvidence: Passage-0\nEvidence: Passage-2", EVIDENCE, "Paris", [0, 2],
     False, None),
    ("Answer: Paris\nEVIDENCE: passage 1, 2, and 0", EVIDENCE, "Paris", [1, 2, 0], False, None),
    ("Answer: Paris\nSources: Passage #1 & Passage #1", EVIDENCE, "Paris", [1], False, None),
    ("Answer: Paris\nEvidence: Document 2", EVIDENCE, "Paris", [2], False, None),
    ("Evidence: ## Passage-1 ##\nAnswer: Paris", EVIDENCE, "Paris", [1], False, None),
    ("Answer: Paris\n**Evidence:** ## Passage-01 ##", EVIDENCE, "Paris", [1], False, None),
    ("Answer: Rome\nEvidence: ## internal knowledge ##", EVIDENCE, "Rome", [], True, None),
    ("Answer: Rome\nEvidence: ## Internal Knowledge ##", EVIDENCE, "Rome", [], True, None),
    ("Answer: Rome\nEvidence: my own knowledge", EVIDENCE, "Rome", [], True, None),
    ("Answer: Rome\nEvidence: ## Passage-1, internal knowledge ##", EVIDENCE, "Rome", [1], True,
     None),
    # out-of-range ids are dropped and noted
    ("Answer: Paris\nEvidence: ## Passage-7 ##", EVIDENCE, "Paris", [], False,
     "out of range: 7"),
    ("Answer: Paris\nEvidence: ## Passage-2, Passage-3, Passage-12 ##", EVIDENCE, "Paris", [2],
     False, "out of range: 3, 12"),
    ("Answer: Paris\nEvidence: ## Passage-123456789012 ##", EVIDENCE, "Paris", [], False,
     "no passage ids"),
    # evidence asked for but missing
    ("Answer: Paris", EVIDENCE, "Paris", [], False, "no passage ids or 'internal knowledge'"),
    ("Answer: Paris\nEvidence: Paris is the capital of France.", EVIDENCE, "Paris", [], False,
     "no passage ids"),
    ("Answer: Paris\nEvidence: ## none ##", EVIDENCE, "Paris", [], False, "no passage ids"),
    # refusals stay as written (is_refusal reads them)
    ("__DONT_KNOW__", {}, "__DONT_KNOW__", [], False, None),
    ("Answer: DONT_KNOW", {}, "DONT_KNOW", [], False, None),
    ("Final Answer: I don't know", CoT, "I don't know", [], False, None),
    ("Final Answer: invalid question", CoT, "invalid question", [], False, None),
    # nothing to read
    ("", {}, "", [], False, "empty answer"),
    ("   \n\n  ", {}, "", [], False, "empty answer"),
    ("Answer:", {}, "", [], False, "empty answer"),
    ("Answer: **  **", {}, "", [], False, "empty answer"),
    ("<think>I should consider Lyon and", {}, "", [], False, "empty answer"),
    ("Evidence: ## Passage-0 ##", EVIDENCE, "", [0], False, "empty answer"),
    ("", CoT, "", [], False, "no 'Final Answer:' line; took the last sentence; empty answer"),
]


@pytest.mark.parametrize(
    "raw, options, text, evidence, internal, error", CASES,
    ids=[f"{i}:{c[0][:30]!r}" for i, c in enumerate(CASES)],
)
def test_parse_answer(raw: str, options: dict, text: str, evidence: list[int], internal: bool,
                      error: str | None) -> None:
    parsed = parse_answer(raw, 3, **options)
    assert parsed.text == text
    assert parsed.evidence == evidence
    assert parsed.cites_internal_knowledge is internal
    if error is None:
        assert parsed.parse_error is None
    else:
        assert parsed.parse_error is not None and error in parsed.parse_error


def test_parsed_answer_unpacks_as_a_tuple() -> None:
    text, evidence, internal, error = parse_answer("Answer: Paris\nEvidence: Passage-1", 2)
    assert (text, evidence, internal, error) == ("Paris", [1], False, None)


def test_no_passages_makes_every_cited_id_out_of_range() -> None:
    parsed = parse_answer("Answer: Paris\nEvidence: ## Passage-0 ##", 0, wants_evidence=True)
    assert parsed.evidence == []
    assert "out of range: 0 (there are 0 passages)" in parsed.parse_error


def test_final_answer_and_cited_passages_alone() -> None:
    assert final_answer("Response: Paris", "Response") == ("Paris", None)
    assert cited_passages("see Passage-1 and Passage-1", 2) == ([1], False, None)


@settings(max_examples=300, deadline=None)
@given(
    st.text(),
    st.integers(min_value=0, max_value=20),
    st.sampled_from([None, "Response", "Final Answer"]),
    st.booleans(),
)
def test_parsing_never_raises(raw: str, n_passages: int, prefix: str | None,
                              wants_evidence: bool) -> None:
    parsed = parse_answer(raw, n_passages, expected_prefix=prefix, wants_evidence=wants_evidence)
    assert isinstance(parsed.text, str)
    assert parsed.text == parsed.text.strip()
    assert all(0 <= i < n_passages for i in parsed.evidence)
    assert len(set(parsed.evidence)) == len(parsed.evidence)
    assert parsed.parse_error is None or isinstance(parsed.parse_error, str)


# Text built from the pieces replies are made of, to reach the parser's branches more often
# than uniformly random text does.
_PIECES = st.sampled_from([
    "Answer:", "Final Answer:", "Response:", "Evidence:", "Thought:", "##", "**", "\"", "'",
    "\u201c", "\u201d", "\n", " ", "Passage-", "passages ", " and ", ", ", "0", "7", "12",
    "internal knowledge", "Paris", "I don't know", "<think>", "</think>", "[", "(", ")", "]",
    ".", "-", "#", ">",
])


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=25).map("".join), st.integers(min_value=0, max_value=5))
def test_parsing_never_raises_on_reply_like_text(raw: str, n_passages: int) -> None:
    parsed = parse_answer(raw, n_passages, expected_prefix="Response", wants_evidence=True)
    assert all(0 <= i < n_passages for i in parsed.evidence)
    assert parsed.text == parsed.text.strip()
    if not parsed.text:
        assert "empty answer" in (parsed.parse_error or "")


@pytest.mark.parametrize("raw", [
    "Answer" + " " * 20000 + "x",  # a label's spaces with no colon after them
    "Evidence" + " \t" * 10000,
    "Paris" + " " * 20000 + "x",  # spaces before no citation
    "Passage 1" + " " * 20000 + "and",
    "Passage-1" + ", passage " * 5000,
    "## " * 10000,
    ". " * 20000,
], ids=lambda raw: repr(raw[:12]))
def test_long_degenerate_replies_parse_in_linear_time(raw: str) -> None:
    """A backtracking regex would take seconds here (it did: 15 s before the fix)."""
    started = time.perf_counter()
    parse_answer(raw, 3, expected_prefix="Response", wants_evidence=True)
    assert time.perf_counter() - started < 1.0
