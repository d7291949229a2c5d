"""The answer as a person shows it on a screen (services/runs/answer_panel.py): the one reason
in plain words for each outcome, the supporting sentence found in the passage the support
judge matched (or the answer cited), and dataset text escaped in the rendered panel."""

from __future__ import annotations

from ragshield.services.questions.claim_marks import ClaimMark
from ragshield.services.runs.answer_panel import answer_panel, plain_reason, supporting_sentence
from ragshield.types import RuleDecision
from ragshield.ui.case_study import panel_html

PASSAGES = [{"title": "Normans", "text": "The Normans lived in France. They gave their name to "
                                         "Normandy, a region of France. Rollo led them."},
            {"title": "Guy", "text": "Guy de Lusignan was a king of Jerusalem."}]
ANSWER = "The Normans gave their name to Normandy. Guy led them."
FIRST, SECOND = (0, 40), (41, len(ANSWER))
KEPT = RuleDecision(keep=True, rule="grounded", reason="grounded 0.81 >= 0.62")
WITHHELD = RuleDecision(keep=False, rule="grounded", reason="grounded 0.12 < 0.62")


def mark(span: tuple[int, int], supported: bool | None, passage: int | None = 0) -> ClaimMark:
    return ClaimMark(span[0], span[1], None if supported is None else 0.9 * supported,
                     supported, passage)


def test_the_supporting_sentence_shares_the_most_words_with_the_claim():
    text = PASSAGES[0]["text"]
    start, end = supporting_sentence(text, "The Normans gave their name to Normandy.")
    assert text[start:end] == "They gave their name to Normandy, a region of France."
    assert supporting_sentence(text, "Paris is big.") is None  # nothing shared
    start, end = supporting_sentence(text, "Rollo")  # a one-word answer: that word will do
    assert text[start:end] == "Rollo led them."
    assert supporting_sentence(text, "The.") is None  # no word worth sharing


def test_the_reason_says_what_the_passages_do_not_say_or_that_they_say_it_all():
    both = [mark(FIRST, True), mark(SECOND, False)]
    assert plain_reason(ANSWER, both, WITHHELD, False) == (
        "Withheld: the passages do not say “Guy led them.”.")
    assert plain_reason(ANSWER, both, KEPT, False) == (
        "Shown, though the passages do not say “Guy led them.”.")
    unread = [mark(FIRST, None), mark(SECOND, False)]
    assert plain_reason(ANSWER, unread, WITHHELD, False).endswith(
        "“The Normans gave their name to Normandy.” (and 1 more sentences).")
    supported = [mark(FIRST, True), mark(SECOND, True)]
    assert plain_reason(ANSWER, supported, KEPT, False) == (
        "Shown: the passages say every sentence of the answer.")
    # No marks, or every sentence supported but withheld: the rule's own reason.
    assert plain_reason(ANSWER, supported, WITHHELD, False) == "Withheld: grounded 0.12 < 0.62."
    assert plain_reason(ANSWER, [], None, False) == "Not decided: no rule ran."
    deferred = RuleDecision(keep=None, rule="policy:p@1", reason="in the band", deferred=True)
    assert plain_reason(ANSWER, [], deferred, False) == "Asked a person: in the band."
    assert plain_reason("I don't know.", [], WITHHELD, True) == (
        "Withheld: the model said it does not know.")


def test_highlights_come_from_the_judges_passage_or_the_cited_one():
    marked = answer_panel("Who?", ANSWER, PASSAGES, [mark(FIRST, True, 0), mark(SECOND, False, 1)],
                          WITHHELD)
    normans, guy = marked.passages
    assert [normans.text[s:e] for s, e in normans.highlights] == [
        "They gave their name to Normandy, a region of France."]
    assert guy.highlights == ()  # an unsupported claim points at nothing
    assert marked.outcome == "withheld"
    cited = answer_panel("Who?", "Guy de Lusignan was king.", PASSAGES, [], KEPT, cited=[1, 7])
    assert [cited.passages[1].text[s:e] for s, e in cited.passages[1].highlights] == [
        PASSAGES[1]["text"]]
    assert cited.passages[0].highlights == ()  # 7: no such passage, left out


def test_the_panel_escapes_dataset_text():
    hostile = [{"title": "<b>t</b>", "text": "<img src=x onerror=alert(1)> The sky is blue."}]
    panel = answer_panel("<script>alert(2)</script>?", "The sky is blue <i>x</i>.", hostile,
                         [mark((0, 26), True, 0)], KEPT)
    page = panel_html(panel)
    assert "<script" not in page and "<img" not in page and "<b>t" not in page
    assert "&lt;script&gt;" in page and "<mark>" in page
    assert 'data-outcome="shown"' in page


def test_the_demo_links_a_kept_question_to_its_case_study_for_a_screen():
    """Issue 59: from the Demo, a question kept in the live run opens in Browse, whose case
    study starts with this panel (the page's ?run=R&sample=ID link selects the tab)."""
    from ragshield.services.questions.live_runs import LiveRecord
    from ragshield.ui.demo_render import record_html

    page = record_html(LiveRecord(run_id=7, dataset="live", sample_id="q&<1>", stored=True))
    assert 'href="?run=7&amp;sample=q%26%3C1%3E"' in page and 'target="_top"' in page
    assert "Show it on a screen (Browse)" in page and "<1>" not in page
