"""Unsupported sentences marked where they are: the spans the faces read from a support
verdict (services/questions/claim_marks.py, which checks them) and the HTML of the Demo, the case
study and the Annotate screen (escaped, marked by more than colour, the score beside)."""

from __future__ import annotations

from ragshield.services.questions.claim_marks import ClaimMark, claim_marks, redacted
from ragshield.store.annotation_item import AnnotationItem
from ragshield.types import Answer, Passage, Verdict
from ragshield.ui.annotate_tab import item_html
from ragshield.ui.case_study import answer_html as case_answer_html
from ragshield.ui.demo_render import AskView
from ragshield.ui.html_render import marked_answer_html

TEXT = "Rouen is on the Seine. It has <b>9 million</b> people."


def support(claims: list) -> Verdict:
    return Verdict("support", False, 0.1, details={"claims": claims})


GOOD = [{"start": 0, "end": 22, "score": 0.93, "supported": True, "passage": 0},
        {"start": 23, "end": 54, "score": 0.12, "supported": False, "passage": None}]


def test_marks_are_read_from_the_support_verdict_and_bad_spans_are_left_out() -> None:
    marks = claim_marks(TEXT, [Verdict("p_true", True, 0.9), support(GOOD)])
    assert [(m.start, m.end, m.supported) for m in marks] == [(0, 22, True), (23, 54, False)]
    hostile = [{"start": 0, "end": 999, "score": 0.5, "supported": True},  # past the end
               {"start": "0", "end": 5, "score": 0.5, "supported": True},  # not a number
               {"start": 5, "end": 3},  # empty
               GOOD[1], {"start": 30, "end": 40, "supported": True},  # overlaps the one before
               {"start": 0, "end": 4, "score": float("nan"), "supported": "yes"}]
    marks = claim_marks(TEXT, [{"judge": "support", "details": {"claims": hostile}}])
    assert [(m.start, m.end) for m in marks] == [(23, 54)]
    assert claim_marks(TEXT, [{"judge": "support", "details": {"claims": "x"}}]) == []
    assert claim_marks(TEXT, [Verdict("p_true", True, 0.9)]) == []


def test_a_redacted_answer_keeps_only_what_is_supported() -> None:
    assert redacted(TEXT, claim_marks(TEXT, [support(GOOD)])) == "Rouen is on the Seine."


def test_the_marked_answer_is_escaped_and_flags_the_unsupported_sentence_in_words() -> None:
    html = marked_answer_html(TEXT, claim_marks(TEXT, [support(GOOD)]))
    assert "<b>9 million</b>" not in html and "&lt;b&gt;9 million&lt;/b&gt;" in html
    assert 'class="rs-claim-unsupported" title="unsupported: P(supported) = 0.12"' in html
    assert "[unsupported 0.12]" in html  # beside the sentence, not by colour alone
    assert 'title="supported by the passages: P(supported) = 0.93; closest passage: ' \
           'Passage-0"' in html
    assert "1 of 2 sentences supported" in html
    unread = marked_answer_html("A.", [ClaimMark(0, 2, None, None, None)])
    assert "rs-claim-unread" in unread and "[unread]" in unread
    assert marked_answer_html("<i>x</i>", []) == "&lt;i&gt;x&lt;/i&gt;"


def test_the_demo_marks_the_answer_once_the_support_verdict_is_in() -> None:
    view = AskView(question="q", source="given", passages=[Passage("Rouen is on the Seine.")],
                   judges=["support"],
                   answer=Answer("vanilla", TEXT, TEXT, []), answer_model="m")
    assert "rs-claim-unsupported" not in view.html()
    view.verdicts.append(support(GOOD))
    assert "rs-claim-unsupported" in view.html() and "[unsupported 0.12]" in view.html()


def test_the_case_study_and_the_annotate_screen_mark_it_too() -> None:
    marks = claim_marks(TEXT, [support(GOOD)])
    assert "rs-claim-unsupported" in case_answer_html({"text": TEXT, "answerer": "v"}, marks)
    item = AnnotationItem(dataset="d", sample_id="s", question="q", passages=[], answer=TEXT,
                          verdicts=[{"judge": "support", "keep": False, "score": 0.1,
                                     "rationale": "r", "details": {"claims": GOOD}}])
    assert "[unsupported 0.12]" in item_html(item, show_answer=True)
    assert "rs-claim" not in item_html(item, show_answer=False)
