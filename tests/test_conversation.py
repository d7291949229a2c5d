"""Conversations (services/questions/conversation.py): a follow-up is judged with the earlier turns
it leans on, bounded; a question that stands alone is judged alone. Through /v1/judge's `history`
and the proxy's earlier messages."""

from __future__ import annotations

from ragshield.config import Settings
from ragshield.services.questions.settlement import MAX_QUESTION_CHARS
from ragshield.conversation import (MAX_CONTEXT_CHARS, MAX_TURN_CHARS, Turn,
                                                       is_follow_up, judged_question)
from ragshield.services.questions.live_runs import LIVE_DATASET
from ragshield.store.database import Store
from ragshield.store.samples import load_sample
from tests.fakes import ScriptedLLM
from tests.reliability.fake_openai import FakeOpenAIServer
from tests.api_support import chat_body, client_for, judge_body, p_true_reply, proxy_settings

EARLIER = [Turn("system", "You are a helpful assistant."),
           Turn("user", "Which two rivers meet at Paris?"),
           Turn("assistant", "The Seine and the Marne.")]


def test_follow_ups_lean_on_earlier_turns_and_whole_questions_stand_alone() -> None:
    assert is_follow_up("and the second one?") and is_follow_up("What about its length?")
    assert is_follow_up("Why?") and not is_follow_up("Which river flows through Rouen?")
    asked = judged_question("And the second one, how long is it?", EARLIER, MAX_QUESTION_CHARS)
    assert asked == ("Earlier in the conversation:\nUser: Which two rivers meet at Paris?\n"
                     "Assistant: The Seine and the Marne.\n"
                     "Question now: And the second one, how long is it?")
    assert "helpful assistant" not in asked  # system messages are instructions, not content
    alone = "Which river flows through the city of Rouen?"
    assert judged_question(alone, EARLIER, MAX_QUESTION_CHARS) == alone
    assert judged_question("and then?", [], MAX_QUESTION_CHARS) == "and then?"


def test_the_context_is_bounded_newest_first_and_the_question_never_cut() -> None:
    long = [Turn("user", "word " * 200 + f"turn {i}") for i in range(10)]
    asked = judged_question("and that?", long, MAX_QUESTION_CHARS)
    context = asked.split("\nQuestion now: ")[0]
    assert len(context) <= MAX_CONTEXT_CHARS + len("Earlier in the conversation:\n")
    assert "turn 9" in context and "turn 8" in context and "turn 7" not in context
    assert all(len(line) <= MAX_TURN_CHARS + len("User: ") for line in context.splitlines())
    assert asked.endswith("Question now: and that?")
    tight = judged_question("x " * 990 + "it?", EARLIER, MAX_QUESTION_CHARS)
    assert len(tight) <= MAX_QUESTION_CHARS and tight.endswith("it?")


def test_judge_reads_the_history_a_follow_up_needs(settings: Settings,
                                                   sqlite_store: Store) -> None:
    llm = ScriptedLLM(respond=p_true_reply)
    client = client_for(settings, sqlite_store, llm)
    history = [{"role": "user", "content": "Which two rivers meet at Paris?"},
               {"role": "assistant", "content": "The Seine and the Marne."}]
    result = client.post("/v1/judge", json=judge_body(
        "and the second one?", history=history, judges=["p_true"], rule="p_true")).json()
    assert "The Seine and the Marne." in llm.seen[-1][1]["content"]
    sample = load_sample(sqlite_store, LIVE_DATASET, result["record"]["sample_id"])
    assert sample.question.endswith("Question now: and the second one?")
    bad = client.post("/v1/judge", json=judge_body(history=[{"role": "tool", "content": "x"}]))
    assert bad.status_code == 422 and "history" in bad.text


def test_the_proxy_judges_a_follow_up_with_the_earlier_messages(settings: Settings,
                                                                sqlite_store: Store) -> None:
    with FakeOpenAIServer() as upstream:
        client = client_for(proxy_settings(settings, upstream), sqlite_store)
        body = chat_body()
        body["messages"] = [{"role": "user", "content": "Which city is the capital of France?"},
                            {"role": "assistant", "content": "Paris."},
                            {"role": "user", "content": "And its river?"}]
        result = client.post("/v1/chat/completions", json=body).json()
    sample = load_sample(sqlite_store, LIVE_DATASET, result["ragshield"]["record"]["sample_id"])
    assert "User: Which city is the capital of France?\nAssistant: Paris." in sample.question
    assert sample.question.endswith("Question now: And its river?")
    sent = upstream.chat_requests()[0].body["messages"]
    assert len(sent) == 3 and sent[-1]["content"] == "And its river?"  # passed on as it came
