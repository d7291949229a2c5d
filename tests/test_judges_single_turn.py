"""Decision logic of the single-turn and probability judges (METHODS 4.3-4.6, 4.9, 4.10,
4.12 token probability and P(True)), pinned down with scripted model replies."""

from __future__ import annotations

import math

import pytest

from ragshield.answerers.context import PromptOptions, shared_messages
from ragshield.judges.calibration import QUESTION as CALIBRATION_QUESTION
from ragshield.judges.calibration import CalibrationJudge
from ragshield.judges.cot_hybrid import CoTHybridJudge, Example
from ragshield.judges.intrinsic import IntrinsicJudge
from ragshield.judges.nli import LLMNLIJudge, hypothesis, word_windows
from ragshield.judges.p_true import PTrueJudge
from ragshield.judges.pre_answer import PreAnswerJudge
from ragshield.judges.priori import PrioriJudge
from ragshield.judges.token_prob import TokenProbJudge
from ragshield.judges.readers import first_word_token
from ragshield.judges.yes_no import TOP_LOGPROBS, YES_NO_MAX_TOKENS, ask_yes_no
from ragshield.llm.base import CHAT, LOGPROBS, SCORE
from ragshield.llm.traced import TracedLLM
from ragshield.refusal import REFUSAL_TOKEN
from ragshield.types import Answer, LLMCall, Passage, Sample, TokenLogprob
from tests.fakes import ScriptedLLM, ScriptedReply

SAMPLE = Sample(
    id="q1",
    question="What is the capital of France?",
    passages=[Passage("Paris is the capital of France."), Passage("Lyon is a city in France.")],
    reference_answers=["Paris"],
)
PREFIX = shared_messages(SAMPLE, "")[1]["content"]  # passages + question
CHAT_ONLY = frozenset({CHAT})


def make_answer(text: str = "Paris", raw: str | None = None,
                calls: list[LLMCall] | None = None) -> Answer:
    return Answer(answerer="vanilla", text=text, raw=raw if raw is not None else text,
                  messages=shared_messages(SAMPLE, "Answer in a few words."), calls=calls or [])


def shares_prefix(messages: list[dict]) -> bool:
    system, user = messages[:2]
    return system == shared_messages(SAMPLE, "")[0] and user["content"].startswith(PREFIX)


# -- the shared yes/no reader --------------------------------------------------------------

TOP = {"Yes": math.log(0.5), " yes": math.log(0.1), "No": math.log(0.25), "no": math.log(0.05)}


def test_ask_yes_no_reads_the_first_token_distribution_and_records_it() -> None:
    llm = ScriptedLLM([ScriptedReply("No", top=TOP)])
    traced = TracedLLM(llm)
    reading = ask_yes_no(traced, [{"role": "user", "content": "?"}], purpose="q")
    assert reading.p_yes == pytest.approx(0.6 / 0.9) and reading.parse_error is None
    assert llm.params[0]["logprobs"] is True and llm.params[0]["top_logprobs"] == TOP_LOGPROBS
    assert llm.params[0]["max_tokens"] == YES_NO_MAX_TOKENS
    assert traced.calls[0].parsed == pytest.approx(0.6 / 0.9) and traced.calls[0].purpose == "q"


def test_ask_yes_no_falls_back_to_the_text_and_flags_it() -> None:
    traced = TracedLLM(ScriptedLLM([ScriptedReply("Yes, it does.", top={"Sure": -0.1}),
                                    ScriptedReply("Maybe", top={"Maybe": -0.1})]))
    read = ask_yes_no(traced, [{"role": "user", "content": "?"}], purpose="q")
    assert read.p_yes == 1.0 and "read the reply's text" in read.parse_error
    unread = ask_yes_no(traced, [{"role": "user", "content": "?"}], purpose="q")
    assert unread.p_yes is None and unread.parse_error and unread.reply == "Maybe"
    assert traced.calls[1].parse_error == unread.parse_error


def test_the_yes_no_distribution_is_read_at_the_first_word() -> None:
    tokens = [TokenLogprob(" ", -0.1, {"**": -1.0}), TokenLogprob("**", -0.2, {}),
              TokenLogprob("Yes", -0.3, {"Yes": -0.3, "No": -1.5})]
    assert first_word_token(tokens) is tokens[2]
    assert first_word_token([TokenLogprob("**", -0.1, {})]) is None


# -- pre-answering prediction (4.5) and P(True) (4.12) -------------------------------------

def test_pre_answer_scores_p_yes_on_question_and_passages_only() -> None:
    llm = ScriptedLLM([ScriptedReply("Yes", top=TOP)])
    verdict = PreAnswerJudge().judge(SAMPLE, make_answer("Marseille"), llm)
    assert verdict.keep is True and verdict.score == pytest.approx(0.6 / 0.9)
    assert verdict.parse_error is None and verdict.details["p_yes"] == verdict.score
    (messages,) = llm.seen
    assert shares_prefix(messages) and "Marseille" not in messages[1]["content"]
    assert "contain the answer" in messages[1]["content"]
    assert [c.purpose for c in verdict.trace] == ["pre_answer: yes/no"]


def test_pre_answer_threshold_is_a_constructor_option() -> None:
    top = {"Yes": math.log(0.3), "No": math.log(0.7)}
    low = PreAnswerJudge().judge(SAMPLE, make_answer(), ScriptedLLM([ScriptedReply("No", top=top)]))
    assert low.keep is False and low.score == pytest.approx(0.3)
    assert "< threshold 0.5" in low.rationale
    loose = PreAnswerJudge(threshold=0.25).judge(
        SAMPLE, make_answer(), ScriptedLLM([ScriptedReply("No", top=top)]))
    assert loose.keep is True


def test_yes_no_judges_discard_unreadable_replies_with_a_parse_error() -> None:
    for judge in (PreAnswerJudge(), PTrueJudge()):
        llm = ScriptedLLM([ScriptedReply("@@##", top={"@@": -0.1})])
        verdict = judge.judge(SAMPLE, make_answer(), llm)
        assert verdict.keep is False and verdict.score is None and verdict.parse_error
        assert verdict.trace[0].output == "@@##" and verdict.available


def test_yes_no_judges_are_unavailable_without_logprobs() -> None:
    for judge in (PreAnswerJudge(), PTrueJudge(), LLMNLIJudge()):
        verdict = judge.judge(SAMPLE, make_answer(), ScriptedLLM(capabilities=CHAT_ONLY))
        assert verdict.available is False and verdict.keep is None
        assert "logprobs" in verdict.rationale and not verdict.trace


def test_p_true_shows_the_proposed_answer_after_the_shared_prefix() -> None:
    top = {"Yes": math.log(0.2), "No": math.log(0.8)}
    llm = ScriptedLLM([ScriptedReply("No", top=top)])
    verdict = PTrueJudge().judge(SAMPLE, make_answer("Lyon"), llm)
    assert verdict.keep is False and verdict.score == pytest.approx(0.2)
    (messages,) = llm.seen
    assert shares_prefix(messages)
    assert "Proposed answer: Lyon" in messages[1]["content"]
    assert messages[1]["content"].rstrip().endswith("yes or no.")


# -- own-answer judges: intrinsic (4.3), CoT hybrid (4.4), priori (4.10) -------------------

@pytest.mark.parametrize(("reply", "keep"), [
    ("Paris", True), (REFUSAL_TOKEN, False), ("DONT_KNOW.", False), ("__NOT_KNOW__", False),
    ("The passages do not contain the answer. __DONT_KNOW__", False),
])
def test_intrinsic_keeps_unless_its_own_answer_is_a_refusal(reply: str, keep: bool) -> None:
    llm = ScriptedLLM([reply])
    verdict = IntrinsicJudge().judge(SAMPLE, make_answer(), llm)
    assert verdict.keep is keep and verdict.score is None
    assert verdict.details["refusal"] is (not keep) and verdict.details["raw"] == reply
    (messages,) = llm.seen
    assert shares_prefix(messages) and REFUSAL_TOKEN in messages[1]["content"]
    assert verdict.trace[0].purpose == "intrinsic: own answer"


def test_intrinsic_reports_its_answer_and_whether_it_agrees_with_the_base_answer() -> None:
    verdict = IntrinsicJudge().judge(SAMPLE, make_answer("Lyon"), ScriptedLLM(["Answer: Paris."]))
    assert verdict.keep is True and verdict.details["answer"] == "Paris."
    assert verdict.details["same_as_base"] is False and "Paris" in verdict.rationale


def test_an_empty_own_answer_is_a_flagged_refusal() -> None:
    verdict = IntrinsicJudge().judge(SAMPLE, make_answer(), ScriptedLLM(["  "]))
    assert verdict.keep is False and verdict.parse_error == "empty answer"
    assert verdict.trace[0].parse_error == "empty answer"


@pytest.mark.parametrize(("reply", "keep", "answer"), [
    ("Rationale: Passage-0 names Paris as the capital.\nResponse: Paris", True, "Paris"),
    ("Passage-1 is about Lyon only; none answers.\nResponse: __DONT_KNOW__", False, REFUSAL_TOKEN),
    ("Question: What is the capital of France?\nRationale: Passage-0 says so.\n"
     "Response: **Paris**", True, "Paris"),
])
def test_cot_hybrid_reads_the_response_line(reply: str, keep: bool, answer: str) -> None:
    llm = ScriptedLLM([reply])
    verdict = CoTHybridJudge().judge(SAMPLE, make_answer(), llm)
    assert verdict.keep is keep and verdict.details["answer"] == answer
    assert verdict.parse_error is None and verdict.score is None
    (messages,) = llm.seen
    instructions = messages[1]["content"][len(PREFIX):]
    assert shares_prefix(messages) and f"Response: {REFUSAL_TOKEN}" in instructions


def test_cot_hybrid_without_a_response_line_takes_the_last_line_and_flags_it() -> None:
    verdict = CoTHybridJudge().judge(
        SAMPLE, make_answer(), ScriptedLLM(["Passage-0 says the capital is Paris.\nParis"]))
    assert verdict.keep is True and verdict.details["answer"] == "Paris"
    assert "no 'Response:' line" in verdict.parse_error


def test_cot_hybrid_examples_are_configurable() -> None:
    example = Example("Who wrote Hamlet?", "Passage-1 names Shakespeare.", "Shakespeare")
    llm = ScriptedLLM(["Response: Paris"])
    CoTHybridJudge(examples=[example]).judge(SAMPLE, make_answer(), llm)
    content = llm.seen[0][1]["content"]
    assert "Who wrote Hamlet?" in content and "Mona Lisa" not in content


@pytest.mark.parametrize(("reply", "keep"), [("Paris", True), ("unknown", False),
                                             ("Unknown.", False)])
def test_priori_discards_unknown(reply: str, keep: bool) -> None:
    llm = ScriptedLLM([reply])
    verdict = PrioriJudge().judge(SAMPLE, make_answer(), llm)
    assert verdict.keep is keep and verdict.score is None
    (messages,) = llm.seen
    content = messages[1]["content"]
    assert shares_prefix(messages) and "what you already know" in content and "unknown" in content


# -- verbalized calibration (4.9) ----------------------------------------------------------

def test_calibration_reads_the_expected_digit_from_the_distribution() -> None:
    answer = make_answer("Paris", raw="Paris.")
    # The model writes 8, yet gives 3 as much weight: the reading is their mean, 5.5 of 9.
    llm = ScriptedLLM([ScriptedReply("8", top={"8": math.log(0.4), " 3": math.log(0.4),
                                               "I": math.log(0.2)})])
    verdict = CalibrationJudge().judge(SAMPLE, answer, llm)
    assert verdict.score == pytest.approx(5.5 / 9) and verdict.keep is True
    assert verdict.parse_error is None
    assert verdict.details["read_from"] == "the digits' distribution"
    (messages,) = llm.seen
    assert messages[:-1] == answer.conversation
    assert messages[-1] == {"role": "user", "content": CALIBRATION_QUESTION}
    assert llm.params[0]["logprobs"] and llm.params[0]["top_logprobs"] >= 10
    assert llm.params[0]["max_tokens"] <= 4


@pytest.mark.parametrize(("reply", "p", "keep"), [
    ("7", 7 / 9, True), ("**5**", 5 / 9, False), ("0.8", 0.8, True),
    ("Probability: 0.55", 0.55, False), ("80%", 0.8, True), ("10", 1.0, True),
])
def test_calibration_reads_the_text_without_log_probs(reply: str, p: float, keep: bool) -> None:
    llm = ScriptedLLM([reply], capabilities=frozenset({CHAT}))
    verdict = CalibrationJudge().judge(SAMPLE, make_answer(), llm)
    assert verdict.score == pytest.approx(p) and verdict.keep is keep
    assert verdict.details["read_from"] == "the reply's text" and verdict.parse_error is None
    assert llm.params[0]["logprobs"] is False


def test_calibration_reads_the_text_when_no_digit_is_among_the_alternatives() -> None:
    verdict = CalibrationJudge().judge(SAMPLE, make_answer(), ScriptedLLM(["Probability: 0.3"]))
    assert verdict.score == pytest.approx(0.3) and verdict.keep is False
    assert verdict.details["read_from"] == "the reply's text"


def test_calibration_discards_an_unreadable_reply() -> None:
    verdict = CalibrationJudge().judge(SAMPLE, make_answer(), ScriptedLLM(["very sure!"]))
    assert verdict.keep is False and verdict.score is None
    assert verdict.parse_error == "no digit or probability in the reply"
    assert verdict.trace[0].output == "very sure!" and verdict.trace[0].parse_error


def test_calibration_threshold_is_a_constructor_option() -> None:
    verdict = CalibrationJudge(threshold=0.9).judge(SAMPLE, make_answer(), ScriptedLLM(["8"]))
    assert verdict.score == pytest.approx(8 / 9) and verdict.keep is False


# -- answer token probability (4.12) -------------------------------------------------------

def test_token_prob_uses_the_generation_logprobs_when_the_answer_has_them() -> None:
    lps = [math.log(0.9), math.log(0.5), math.log(0.8)]
    call = LLMCall(purpose="base answer", messages=[], output="Paris.",
                   logprobs=[TokenLogprob(t, lp) for t, lp in zip(["Par", "is", "."], lps)])
    llm = ScriptedLLM()
    verdict = TokenProbJudge().judge(SAMPLE, make_answer("Paris", "Paris.", [call]), llm)
    mean = sum(lps) / 3
    assert verdict.score == pytest.approx(math.exp(mean)) and verdict.keep is True
    assert verdict.details["source"] == "generation" and verdict.details["tokens"] == 3
    assert verdict.details["min_logprob"] == pytest.approx(math.log(0.5))
    assert verdict.details["min_token"] == "is"
    assert not llm.seen and not verdict.trace


def test_token_prob_re_scores_an_answer_without_logprobs() -> None:
    answer = make_answer("Paris", "Paris.")
    llm = ScriptedLLM(scores={"Paris.": [math.log(0.4), math.log(0.2)]})
    verdict = TokenProbJudge().judge(SAMPLE, answer, llm)
    assert verdict.score == pytest.approx(math.sqrt(0.08)) and verdict.keep is False
    assert verdict.details["source"] == "re-scored"
    assert llm.seen == [answer.messages]
    assert verdict.trace[0].kind == "score" and verdict.trace[0].output == "Paris."
    assert TokenProbJudge(threshold=0.2).judge(SAMPLE, answer, llm).keep is True


def test_token_prob_ignores_calls_of_other_replies() -> None:
    other = LLMCall(purpose="draft", messages=[], output="Lyon",
                    logprobs=[TokenLogprob("Lyon", -3.0)])
    llm = ScriptedLLM(scores={"Paris": [-0.1]})
    verdict = TokenProbJudge().judge(SAMPLE, make_answer("Paris", calls=[other]), llm)
    assert verdict.details["source"] == "re-scored"
    assert verdict.score == pytest.approx(math.exp(-0.1))


def test_token_prob_needs_scoring_and_a_reply() -> None:
    unavailable = TokenProbJudge().judge(SAMPLE, make_answer(),
                                         ScriptedLLM(capabilities=frozenset({CHAT, LOGPROBS})))
    assert unavailable.available is False and SCORE in unavailable.rationale
    # A server without scoring that returned the answer's log-probs: nothing to re-score.
    call = LLMCall(purpose="base answer", messages=[], output="Paris",
                   logprobs=[TokenLogprob("Paris", math.log(0.6))])
    served = TokenProbJudge().judge(SAMPLE, make_answer("Paris", calls=[call]),
                                    ScriptedLLM(capabilities=frozenset({CHAT, LOGPROBS})))
    assert served.available and served.score == pytest.approx(0.6)
    assert served.details["source"] == "generation"
    empty = TokenProbJudge().judge(SAMPLE, make_answer("", raw=""), ScriptedLLM())
    assert empty.keep is False and empty.score is None and empty.parse_error == "empty answer"


# -- NLI windows and the llm engine (4.6) ---------------------------------------------------

def test_word_windows_keep_a_fitting_passage_whole() -> None:
    text = "Paris  is\nthe capital."
    (window,) = word_windows(3, text, lambda t: True)
    assert window.text == text and window.split is False
    assert (window.passage, window.start, window.end) == (3, 0, 4)


def test_word_windows_overlap_by_twenty_words_and_fit() -> None:
    words = [f"w{i}" for i in range(130)]

    def fits(text: str) -> bool:
        return len(text.split()) <= 50

    windows = word_windows(0, " ".join(words), fits)
    assert [(w.start, w.end) for w in windows] == [(0, 50), (30, 80), (60, 110), (90, 130)]
    assert all(w.split and fits(w.text) and w.text == " ".join(words[w.start:w.end])
               for w in windows)
    for before, after in zip(windows, windows[1:]):
        assert before.end - after.start == 20


def test_word_windows_smaller_than_the_overlap_still_advance() -> None:
    windows = word_windows(0, " ".join(f"w{i}" for i in range(30)),
                           lambda t: len(t.split()) <= 5)
    starts = [w.start for w in windows]
    assert starts == sorted(set(starts)) and windows[-1].end == 30
    assert all(w.end - w.start <= 5 for w in windows)


def test_nli_llm_asks_about_each_passage_after_the_shared_prefix() -> None:
    tops = [{"Yes": math.log(0.7), "No": math.log(0.3)},
            {"Yes": math.log(0.1), "No": math.log(0.9)}]
    llm = ScriptedLLM([ScriptedReply("Yes", top=tops[0]), ScriptedReply("No", top=tops[1])])
    verdict = LLMNLIJudge().judge(SAMPLE, make_answer("Paris"), llm)
    assert verdict.keep is True and verdict.score == pytest.approx(0.7)
    claim = hypothesis(SAMPLE.question, "Paris")
    assert claim == 'The answer to the question "What is the capital of France?" is: Paris'
    for i, messages in enumerate(llm.seen):
        assert shares_prefix(messages)
        assert claim in messages[1]["content"] and f"Passage-{i} alone" in messages[1]["content"]
    assert [w["entailment"] for w in verdict.details["windows"]] == pytest.approx([0.7, 0.1])
    assert verdict.details["best"]["passage"] == 0 and "Passage-0" in verdict.rationale


def test_nli_llm_skips_unreadable_windows_and_discards_when_none_is_read() -> None:
    llm = ScriptedLLM([ScriptedReply("??", top={"?": -0.1}),
                       ScriptedReply("No", top={"Yes": math.log(0.4), "No": math.log(0.6)})])
    partly = LLMNLIJudge().judge(SAMPLE, make_answer(), llm)
    assert partly.score == pytest.approx(0.4) and partly.keep is False
    assert partly.parse_error == "1 of 2 windows could not be read"
    none = LLMNLIJudge().judge(SAMPLE, make_answer(), ScriptedLLM(["??", "!!"]))
    assert none.keep is False and none.score is None and none.parse_error


def test_nli_without_passages_scores_zero() -> None:
    empty = Sample(id="q2", question="Who?", passages=[Passage("   ")])
    verdict = LLMNLIJudge().judge(empty, make_answer(), ScriptedLLM())
    assert verdict.keep is False and verdict.score == 0.0 and not verdict.trace


def test_nli_llm_splits_a_passage_the_shared_prefix_had_to_cut() -> None:
    options = PromptOptions(n_ctx=1100)  # room for about 200 estimated tokens of passages
    long_text = " ".join(f"word{i}" for i in range(200))
    sample = Sample(id="q3", question="What comes last?",
                    passages=[Passage("Short passage."), Passage(long_text)])
    llm = ScriptedLLM(respond=lambda messages: ScriptedReply("No", top={"No": -0.1}))
    verdict = LLMNLIJudge(options=options).judge(sample, make_answer("word199"), llm)
    windows = verdict.details["windows"]
    assert windows[0] == {"passage": 0, "words": [0, 2], "split": False, "entailment": 0.0}
    split = windows[1:]
    assert len(split) > 1 and all(w["split"] for w in split)
    assert split[0]["words"][0] == 0 and split[-1]["words"][1] == 200
    for before, after in zip(split, split[1:]):
        assert before["words"][1] - after["words"][0] == 20
    prefix = shared_messages(sample, "", options)[1]["content"]
    assert llm.seen[0][1]["content"].startswith(prefix)
    for messages in llm.seen[1:]:  # standalone prompts: the window, then the statement
        content = messages[1]["content"]
        assert content.startswith("Passage: word") and "word199" in content
