"""Decision logic of the support judge (METHODS 4.14), pinned down with scripted replies: one
yes/no read per claim after the shared prefix, the least supported claim decides, and the
verdict lists every claim with its span, score and closest passage."""

from __future__ import annotations

import math

import pytest

from ragshield.answerers.context import shared_messages
from ragshield.judges.builtin import JUDGES
from ragshield.judges.registry import judge_class
from ragshield.judges.support import SupportJudge, closest_passage, passage_words
from ragshield.types import Answer, Passage, Sample
from tests.fakes import ScriptedLLM, ScriptedReply

SAMPLE = Sample(
    id="normandy", question="Who gave their name to Normandy?",
    passages=[Passage("The Normans gave their name to Normandy, a region in France."),
              Passage("Guy de Lusignan was a French knight who became King of Jerusalem.")],
)
PREFIX = shared_messages(SAMPLE, "")[1]["content"]


def yes(p: float) -> ScriptedReply:
    return ScriptedReply("Yes" if p >= 0.5 else "No",
                         top={"Yes": math.log(p), "No": math.log(1 - p)})


def answer(text: str, refusal: bool = False) -> Answer:
    return Answer(answerer="vanilla", text=text, raw=text, messages=[], refusal=refusal)


def test_each_claim_is_asked_after_the_shared_prefix_and_the_weakest_decides() -> None:
    text = "The Normans gave their name to Normandy [1]. They were led by Guy de Lusignan."
    llm = ScriptedLLM([yes(0.9), yes(0.2)])
    verdict = SupportJudge(threshold=0.5).judge(SAMPLE, answer(text), llm)
    assert len(llm.seen) == 2
    assert all(m[1]["content"].startswith(PREFIX) for m in llm.seen)
    assert "The Normans gave their name to Normandy." in llm.seen[0][1]["content"]
    assert "[1]" not in llm.seen[0][1]["content"]
    assert verdict.score == pytest.approx(0.2) and verdict.keep is False
    first, second = verdict.details["claims"]
    assert text[first["start"]:first["end"]] == "The Normans gave their name to Normandy [1]."
    assert text[second["start"]:second["end"]] == "They were led by Guy de Lusignan."
    assert first["supported"] is True and second["supported"] is False
    assert first["passage"] == 0 and second["passage"] == 1
    assert "1 of 2 sentences supported" in verdict.rationale and "sentence 2" in verdict.rationale
    assert "Lusignan" not in verdict.rationale  # the reason never quotes the answer
    assert [c.purpose for c in verdict.trace] == ["support: claim 1 of 2", "support: claim 2 of 2"]


def test_every_claim_supported_keeps_the_answer() -> None:
    verdict = SupportJudge(threshold=0.6).judge(
        SAMPLE, answer("The Normans. In France."), ScriptedLLM([yes(0.7), yes(0.95)]))
    assert verdict.keep is True and verdict.score == pytest.approx(0.7)


def test_a_refusal_has_no_claims_and_asks_nothing() -> None:
    llm = ScriptedLLM([])
    verdict = SupportJudge().judge(SAMPLE, answer("I don't know.", refusal=True), llm)
    assert llm.seen == [] and verdict.details["claims"] == []
    assert verdict.keep is False and verdict.score == 0.0 and "refusal" in verdict.rationale


def test_an_unreadable_claim_is_flagged_and_the_read_ones_decide() -> None:
    llm = ScriptedLLM([ScriptedReply("Maybe", top={"Maybe": -0.1}), yes(0.8)])
    verdict = SupportJudge().judge(SAMPLE, answer("First claim. Second claim."), llm)
    assert verdict.score == pytest.approx(0.8) and verdict.keep is True
    assert verdict.parse_error == "1 of 2 claims could not be read"
    assert verdict.details["claims"][0]["supported"] is None
    unread = SupportJudge().judge(SAMPLE, answer("Only claim."),
                                  ScriptedLLM([ScriptedReply("Hmm", top={"Hmm": -0.1})]))
    assert unread.score is None and unread.keep is False


def test_the_case_study_lists_the_claims() -> None:
    verdict = SupportJudge().judge(SAMPLE, answer("The Normans did. Guy did."),
                                   ScriptedLLM([yes(0.9), yes(0.1)]))
    [table] = SupportJudge.detail_view(verdict.details, [])
    assert table.rows == [[1, "The Normans did.", "0.90", "supported", "Passage-0"],
                          [2, "Guy did.", "0.10", "NOT supported", "Passage-1"]]
    assert SupportJudge.detail_view({}, []) is None


def test_the_closest_passage_shares_the_most_content_words() -> None:
    passages = passage_words([Passage("Rouen lies on the Seine."),
                              Passage("The Loire and the Seine.")])
    assert closest_passage("The Seine flows through Rouen", passages) == 0
    assert closest_passage("Nothing in common", passages) is None
    assert closest_passage("anything", []) is None


def test_the_judge_is_registered() -> None:
    assert JUDGES["support"] is SupportJudge and judge_class("support") is SupportJudge
