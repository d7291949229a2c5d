"""Decision logic of the support judge (METHODS 4.14), pinned down with scripted replies: one
yes/no read per claim after the shared prefix, a sentence scored by its P(yes) and the share of
its words the passages hold, the least supported claim decides, and the verdict lists every
claim with its span, score and closest passage."""

from __future__ import annotations

import math

import pytest

from ragshield.answerers.context import shared_messages
from ragshield.claims import MAX_CLAIMS
from ragshield.judges.builtin import JUDGES
from ragshield.judges.registry import judge_class
from ragshield.answerers.vanilla import INSTRUCTIONS as ANSWER_INSTRUCTIONS
from ragshield.judges.short_answer import LOGPROB_FLOOR, ShortReading
from ragshield.judges.support import (SupportJudge, claim_score, closest_passage,
                                      passage_words, word_coverage)
from ragshield.llm.base import CHAT, LOGPROBS
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
    first, second = verdict.details["claims"]
    assert first["p_yes"] == pytest.approx(0.9) and second["p_yes"] == pytest.approx(0.2)
    assert first["coverage"] == 1.0 and 0 < second["coverage"] < 1  # "led" is in no passage
    assert second["score"] < 0.2 < 0.9 < first["score"]
    assert verdict.score == second["score"] and verdict.keep is False
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
    assert verdict.keep is True and verdict.score == pytest.approx(claim_score(0.7, 1.0))


def test_a_sentence_scores_by_its_reading_and_the_words_the_passages_hold() -> None:
    passages = passage_words(SAMPLE.passages)
    assert word_coverage("The Normans gave their name to Normandy.", passages) == 1.0
    assert 0 < word_coverage("The Normans sailed from Norway.", passages) < 0.5  # only "Normans"
    assert word_coverage("...", passages) == 1.0  # no content word: nothing unheld
    # More of either raises the score.
    assert claim_score(0.5, 0.5) < claim_score(0.8, 0.5)
    assert claim_score(0.5, 0.5) < claim_score(0.5, 0.9)
    assert 0 < claim_score(0.0, 0.0) < claim_score(1.0, 1.0) < 1


@pytest.mark.parametrize("given", ["Guy de Lusignan", "Guy de Lusignan.",
                                   "It was Guy de Lusignan.",
                                   "Guy de Lusignan gave his name to Normandy."])
def test_a_short_answer_is_read_as_the_answer_to_its_question(given: str) -> None:
    """A period made "Guy de Lusignan." a free-standing sentence, whose words the passages
    all hold: read without its question, the wrong answer was kept."""
    llm = ScriptedLLM([yes(0.3)], scores={"Guy de Lusignan": [-4.0, -3.0]})
    verdict = SupportJudge(threshold=0.5).judge(SAMPLE, answer(given), llm)
    [claim] = verdict.details["claims"]
    asked, scored = llm.seen
    assert asked[1]["content"].startswith(PREFIX) and asked[1]["content"].endswith(given)
    assert "as the answer" in asked[1]["content"] or "the answer to the question" in \
        asked[1]["content"]
    # The answer's core is scored as the model's own reply to the question's answer prompt.
    assert scored[1]["content"] == shared_messages(SAMPLE, ANSWER_INSTRUCTIONS)[1]["content"]
    assert claim["short_answer"] == "Guy de Lusignan" and claim["coverage"] is None
    assert claim["answer_logprob"] == pytest.approx(-7.0)
    # Where the core sits in the passages was read too.
    assert 0.0 < claim["aligned"] < 1.0
    assert verdict.score == pytest.approx(
        ShortReading(0.3, -7.0, claim["aligned"], "Guy de Lusignan").score)
    assert claim["text"] == given.rstrip() and verdict.rationale.startswith("a short answer")


def test_a_short_answer_scores_by_all_three_readings() -> None:
    def score(p_yes: float, logprob: float | None, aligned: float = 0.5) -> float:
        return ShortReading(p_yes, logprob, aligned, "x").score

    assert score(0.3, -2.0) < score(0.8, -2.0) and score(0.5, -20.0) < score(0.5, -1.0)
    assert score(0.5, -2.0, 0.1) < score(0.5, -2.0, 0.9)  # where it sits pulls too
    assert score(0.5, None, 0.1) < score(0.5, None, 0.9)
    assert score(0.5, -1e9) == score(0.5, LOGPROB_FLOOR)  # a bounded pull
    assert score(0.3, None) < score(0.8, None)  # without SCORE: the yes/no reading alone
    assert ShortReading(None, None, 0.5, "x").score is None


def test_without_continuation_scores_a_short_answer_is_read_once() -> None:
    llm = ScriptedLLM([yes(0.9)], capabilities=frozenset({CHAT, LOGPROBS}))
    verdict = SupportJudge().judge(SAMPLE, answer("The Normans."), llm)
    assert len(llm.seen) == 1 and verdict.details["claims"][0]["answer_logprob"] is None
    aligned = verdict.details["claims"][0]["aligned"]
    assert verdict.score == pytest.approx(ShortReading(0.9, None, aligned, "Normans").score)


def test_a_long_single_sentence_is_a_sentence_not_a_short_answer() -> None:
    text = ("The Normans, descended from Norse raiders, gave their name to Normandy, "
            "a region in northern France.")
    llm = ScriptedLLM([yes(0.9)])
    [claim] = SupportJudge().judge(SAMPLE, answer(text), llm).details["claims"]
    assert "short_answer" not in claim and claim["coverage"] is not None and len(llm.seen) == 1


def test_a_refusal_has_no_claims_and_asks_nothing() -> None:
    llm = ScriptedLLM([])
    verdict = SupportJudge().judge(SAMPLE, answer("I don't know.", refusal=True), llm)
    assert llm.seen == [] and verdict.details["claims"] == []
    assert verdict.keep is False and verdict.score == 0.0 and "refusal" in verdict.rationale


def test_an_unreadable_claim_is_flagged_and_the_read_ones_decide() -> None:
    llm = ScriptedLLM([ScriptedReply("Maybe", top={"Maybe": -0.1}), yes(0.8)])
    verdict = SupportJudge().judge(SAMPLE, answer("Guy was French. A King of Jerusalem."), llm)
    assert verdict.score == pytest.approx(claim_score(0.8, 1.0)) and verdict.keep is True
    assert verdict.parse_error == "1 of 2 claims could not be read"
    assert verdict.details["claims"][0]["supported"] is None
    assert verdict.rationale.startswith("1 of 2 sentences supported (1 unread);")
    unread = SupportJudge().judge(SAMPLE, answer("Only claim."),
                                  ScriptedLLM([ScriptedReply("Hmm", top={"Hmm": -0.1})]))
    assert unread.score is None and unread.keep is False


def test_a_heading_is_read_not_passed_over() -> None:
    """A heading used to be no claim: the moon's went unread and the answer kept."""
    llm = ScriptedLLM(respond=lambda m: yes(0.1 if "moon" in m[-1]["content"] else 0.95))
    verdict = SupportJudge().judge(
        SAMPLE, answer("The Normans gave their name to Normandy.\n# The moon is made of cheese"),
        llm)
    assert len(llm.seen) == 2 and verdict.keep is False
    assert verdict.details["claims"][1]["text"] == "The moon is made of cheese"
    assert verdict.rationale.startswith("1 of 2 sentences supported;")


def test_the_case_study_lists_the_claims() -> None:
    verdict = SupportJudge().judge(SAMPLE, answer("The Normans gave their name. Guy rode a horse."),
                                   ScriptedLLM([yes(0.9), yes(0.1)]))
    [table] = SupportJudge.detail_view(verdict.details, [])
    first, second = (f"{claim_score(p, words):.2f}" for p, words in ((0.9, 1), (0.1, 1 / 3)))
    assert table.rows == [
        [1, "The Normans gave their name.", first, "0.90", "100%", "supported", "Passage-0"],
        [2, "Guy rode a horse.", second, "0.10", "33%", "NOT supported", "Passage-1"]]
    assert SupportJudge.detail_view({}, []) is None
    # A verdict stored before the reading and the coverage were kept shows its score alone.
    [older] = SupportJudge.detail_view({"claims": [{"text": "Old.", "score": 0.4,
                                                    "supported": False, "passage": 0}]}, [])
    assert older.rows == [[1, "Old.", "0.40", "-", "-", "NOT supported", "Passage-0"]]
    # A verdict from elsewhere shows no more claims than the judge writes.
    [many] = SupportJudge.detail_view({"threshold": 0.5, "claims": [
        {"text": "x", "score": 0.9, "supported": True, "passage": 0}] * 1000}, [])
    assert len(many.rows) == MAX_CLAIMS and f"the first {MAX_CLAIMS} of 1,000" in many.title


def test_the_closest_passage_shares_the_most_content_words() -> None:
    passages = passage_words([Passage("Rouen lies on the Seine."),
                              Passage("The Loire and the Seine.")])
    assert closest_passage("The Seine flows through Rouen", passages) == 0
    assert closest_passage("Nothing in common", passages) is None
    assert closest_passage("anything", []) is None


def test_the_judge_is_registered() -> None:
    assert JUDGES["support"] is SupportJudge and judge_class("support") is SupportJudge
