"""The guard API in process (FastAPI's test client), with a scripted judge model and, for the
proxy, a real HTTP upstream on 127.0.0.1 (tests/reliability/fake_openai.py): the shapes of
answers and errors, keys, size limits, deadlines, a busy queue, and that every answered call
is kept exactly once and a failed one never. tests/test_api_server.py runs the same API for
real: `python app.py` in front of a llama.cpp server, called with the stock openai client."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from starlette.testclient import TestClient

from ragshield.api.app import build_api
from ragshield.api.keys import ApiKeyError, KeyCheck, check_exposure, read_keys
from ragshield.config import GROUNDED_JUDGES, Settings
from ragshield.llm.base import LLM
from ragshield.policies.policy import Policy
from ragshield.services.guarding.guard import Guard, ModelGate
from ragshield.services.learning.policies import save_policy
from ragshield.services.questions.asking import ABSTAIN_MESSAGE
from ragshield.services.questions.live_runs import LIVE_DATASET
from ragshield.store.database import Store
from ragshield.store.runs import list_runs
from ragshield.store.samples import load_sample
from tests.fakes import FakeModels, ScriptedLLM, ScriptedReply
from tests.reliability.fake_openai import ANSWER, Fault, FakeOpenAIServer
from tests.api_support import (API_GUARD_POLICY, KEY, SURE, SlowLLM, UNSURE, UNSURE_UPSTREAM,
                               chat_body, client_for, error_of, judge_body, live_answers,
                               p_true_reply, proxy_settings)


def post_json(client: TestClient, path: str, body: Any, **headers: str) -> Any:
    """POST `body` as Python's json writes it: NaN, Infinity and lone surrogates (as \\ud800
    escapes) go out as they are, as a hostile client would send them."""
    return client.post(path, content=json.dumps(body).encode(),
                       headers={"content-type": "application/json", **headers})


def test_judge_returns_decision_verdicts_cost_and_keeps_the_call_once(
        settings: Settings, sqlite_store: Store) -> None:
    client = client_for(settings, sqlite_store)
    body = judge_body(answer_logprobs=[{"token": "The", "logprob": SURE},
                                       {"token": " Normans", "logprob": SURE}],
                      answer_model="their-model", rule="token_prob")
    first = client.post("/v1/judge", json=body)
    assert first.status_code == 200, first.text
    result = first.json()
    assert result["decision"] == "keep" and result["kept"] and result["shown"] == "The Normans"
    assert [v["judge"] for v in result["verdicts"]] == ["trivial", "token_prob", "p_true"]
    token_prob = result["verdicts"][1]
    assert token_prob["score"] == pytest.approx(0.99, abs=0.01) and token_prob["reason"]
    assert token_prob["cost"]["calls"] == 0  # the given log-probs are read, no model call
    assert result["verdicts"][2]["cost"]["calls"] == 1 and result["cost"]["calls"] == 1
    timings = result["timings_ms"]
    assert set(timings) == {"queued", "judging", "storing", "total"}
    assert timings["total"] >= timings["judging"] + timings["storing"]
    record = result["record"]
    assert record["stored"] and record["dataset"] == LIVE_DATASET
    sample = load_sample(sqlite_store, LIVE_DATASET, record["sample_id"])
    assert sample.given_answer is not None and sample.given_answer.text == "The Normans"
    assert sample.given_answer.model == "their-model" and sample.passages[0].doc_id == "d1"
    again = client.post("/v1/judge", json=body).json()
    assert again["record"] == {**record, "stored": False} and live_answers(sqlite_store) == 1
    other = client.post("/v1/judge", json={**body, "answer": "The Vikings"}).json()
    assert other["record"]["stored"] and other["record"]["sample_id"] != record["sample_id"]
    assert live_answers(sqlite_store) == 2


def test_judge_withholds_an_unsure_answer_and_can_skip_storing(
        settings: Settings, sqlite_store: Store) -> None:
    client = client_for(settings, sqlite_store)
    body = judge_body(answer_logprobs=[{"token": "The", "logprob": UNSURE}],
                      rule="token_prob", store=False, trace=True)
    result = client.post("/v1/judge", json=body).json()
    assert result["decision"] == "abstain" and not result["kept"]
    assert result["shown"] == ABSTAIN_MESSAGE and result["fallback"]["strategy"]
    assert result["record"] is None and live_answers(sqlite_store) == 0
    assert result["verdicts"][2]["trace"][0]["messages"]  # the p_true prompt, with trace on


def test_a_stored_policy_decides_in_the_api(settings: Settings, sqlite_store: Store) -> None:
    save_policy(sqlite_store, Policy.from_dict(API_GUARD_POLICY))
    client = client_for(settings, sqlite_store)

    def ask(logprob: float) -> dict:
        return client.post("/v1/judge", json=judge_body(
            answer_logprobs=[{"token": "The", "logprob": logprob}], rule="policy:api-guard",
            store=False)).json()

    sure, middle, unsure = ask(SURE), ask(-0.7), ask(UNSURE)
    assert sure["decision"] == "keep" and sure["rule"] == "policy:api-guard@1"
    assert "answer" in sure["reason"] and sure["shown"] == "The Normans"
    assert middle["decision"] == "defer" and "ask a person" in middle["reason"]
    assert middle["shown"] == ABSTAIN_MESSAGE and not middle["kept"]
    assert unsure["decision"] == "abstain" and "withhold" in unsure["reason"]
    missing = client.post("/v1/judge", json=judge_body(rule="policy:nope"))
    assert missing.status_code in (400, 404) and "no policy 'nope'" in error_of(missing)["message"]
    wrong_judge = client.post("/v1/judge", json=judge_body(rule="policy:api-guard",
                                                           judges=["trivial"]))
    assert wrong_judge.status_code == 400 and "add token_prob" in error_of(wrong_judge)["message"]


def test_default_judges_are_the_fast_set(settings: Settings, sqlite_store: Store) -> None:
    client = client_for(settings, sqlite_store)
    catalogue = client.get("/v1/judges").json()
    defaults = [j["name"] for j in catalogue if j["default"]]
    assert "trivial" in defaults and "counterfactual" not in defaults
    # the free and cheap judges, and the judges of the default rule (grounded reads support)
    assert all(j["cost"] in ("free", "cheap") or j["name"] in GROUNDED_JUDGES
               for j in catalogue if j["default"])
    assert set(GROUNDED_JUDGES) <= set(defaults)
    assert all(j["about"] for j in catalogue)
    # The packaged defaults have no NLI classifier: said, and left out of the defaults.
    nli = next(j for j in catalogue if j["name"] == "nli")
    assert not nli["default"] and "RAGSHIELD_NLI_MODEL" in nli["unavailable"]
    assert all(j["unavailable"] is None for j in catalogue if j["name"] != "nli")


@pytest.mark.parametrize("body, status, param", [
    ({"answer": "a"}, 422, "question"),
    ({"question": "q"}, 422, "answer"),
    ({"question": "q", "answer": "a", "pasages": []}, 422, "pasages"),
    ({"question": "q", "answer": "a", "passages": [{"text": "x" * 20_001}]}, 422,
     "passages[0].text"),
    ({"question": "q", "answer": "a", "answer_logprobs": [{"token": "a", "logprob": 2}]},
     422, "answer_logprobs[0].logprob"),
    ({"question": "q", "answer": "a", "cited_passages": [-1]}, 422, "cited_passages[0]"),
    ({"question": "", "answer": "a"}, 422, "question"),
    ({"question": "q", "answer": "a", "judges": []}, 422, "judges"),  # omit it for the defaults
    ({"question": "q", "answer": "a", "store": "yes"}, 422, "store"),  # booleans are strict
    ({"question": "q", "answer": "a", "trace": 1}, 422, "trace"),
    ({"question": "q", "answer": "a", "passages": [{"text": "p"}], "cited_passages": [7, 49]},
     422, "cited_passages"),
    ({"question": "q", "answer": "a", "passages": [{"text": "p", "score": float("nan")}]}, 422,
     "passages[0].score"),
    ({"question": "q", "answer": "a", "passages": [{"text": "p", "score": float("inf")}]}, 422,
     "passages[0].score"),
    ({"question": "q", "answer": "a",
      "answer_logprobs": [{"token": "a", "logprob": float("-inf")}]}, 422,
     "answer_logprobs[0].logprob"),
    ({"question": "q", "answer": "a", "judge_model": "\ud800"}, 422, "judge_model"),
    # Issue 45, item 11: pydantic's lax mode read true as 1 and "500" as 500.
    ({"question": "q", "answer": "a", "passages": [{"text": "p"}], "cited_passages": [True]},
     422, "cited_passages[0]"),
    ({"question": "q", "answer": "a", "budget_ms": "500"}, 422, "budget_ms"),
    ({"question": "q", "answer": "a", "budget_ms": True}, 422, "budget_ms"),
    ({"question": "q", "answer": "a", "budget_ms": 500.0}, 422, "budget_ms"),
    ({"question": "q", "answer": "a", "passages": [{"text": "p", "score": True}]}, 422,
     "passages[0].score"),
    ({"question": "q", "answer": "a", "answer_logprobs": [{"token": "a", "logprob": "-1"}]},
     422, "answer_logprobs[0].logprob"),
])
def test_bad_fields_are_named(settings: Settings, sqlite_store: Store, body: dict,
                              status: int, param: str | None) -> None:
    response = post_json(client_for(settings, sqlite_store), "/v1/judge", body)
    assert response.status_code == status, response.text
    assert error_of(response)["param"] == param and param in error_of(response)["message"]
    assert live_answers(sqlite_store) == 0


def test_unknown_judge_rule_and_malformed_json(settings: Settings, sqlite_store: Store) -> None:
    client = client_for(settings, sqlite_store)
    unknown = client.post("/v1/judge", json=judge_body(judges=["nosuch"]))
    assert unknown.status_code == 400 and "nosuch" in error_of(unknown)["message"]
    bad_rule = client.post("/v1/judge", json=judge_body(rule="nosuch"))
    assert bad_rule.status_code == 400 and "nosuch" in error_of(bad_rule)["message"]
    reader = client.post("/v1/judge", json=judge_body(judge_model="/etc/passwd"))
    assert reader.status_code == 400
    assert "unknown judge model '/etc/passwd'; one of qwen-0.5b" in error_of(reader)["message"]
    broken = client.post("/v1/judge", content=b'{"question": ', headers={
        "content-type": "application/json"})
    assert broken.status_code == 400 and error_of(broken)["type"] == "invalid_json"
    array = client.post("/v1/judge", json=[judge_body()])
    assert array.status_code == 422
    assert live_answers(sqlite_store) == 0


def test_huge_bodies_are_refused_before_parsing(settings: Settings, sqlite_store: Store) -> None:
    settings.api_max_body_bytes = 10_000
    client = client_for(settings, sqlite_store)
    huge = json.dumps(judge_body(answer="x" * 20_000)).encode()
    declared = client.post("/v1/judge", content=huge, headers={"content-type": "application/json"})
    assert declared.status_code == 413 and error_of(declared)["param"] == "body"

    def chunks():  # no Content-Length: the limit counts what streams in
        for start in range(0, len(huge), 1000):
            yield huge[start:start + 1000]

    streamed = client.post("/v1/judge", content=chunks(),
                           headers={"content-type": "application/json"})
    assert streamed.status_code == 413
    assert client.get("/v1/health").status_code == 200  # other paths are not held up
    assert live_answers(sqlite_store) == 0


def test_keys(settings: Settings, sqlite_store: Store, tmp_path: Path) -> None:
    client = client_for(settings, sqlite_store, keys=[KEY])
    assert client.post("/v1/judge", json=judge_body()).status_code == 401
    wrong = client.post("/v1/judge", json=judge_body(), headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer"
    right = client.post("/v1/judge", json=judge_body(), headers={"Authorization": f"Bearer {KEY}"})
    assert right.status_code == 200
    assert client.get("/v1/health").json()["keys_required"] is True

    keys_file = tmp_path / "keys.txt"
    keys_file.write_text(f"# team keys\n{KEY}\n\nshort\n")
    settings.api_keys_file = keys_file
    with pytest.raises(ApiKeyError, match=f"^{keys_file}:4: an API key must have"):
        read_keys(settings)
    keys_file.write_text(f"\ufeff{KEY}\n{'m' * 20}\n")
    settings.api_keys = None
    assert [entry.secret for entry in read_keys(settings)] == [KEY, "m" * 20]
    with pytest.raises(ApiKeyError, match="0.0.0.0 would be open"):
        check_exposure("0.0.0.0", [])
    check_exposure("127.0.0.1", [])
    check_exposure("::1", [])
    check_exposure("0.0.0.0", [KEY])


def test_a_call_past_its_deadline_is_504_and_never_stored(
        settings: Settings, sqlite_store: Store) -> None:
    settings.api_timeout_s = 0.5
    client = client_for(settings, sqlite_store, llm=SlowLLM(seconds=1.2))
    response = client.post("/v1/judge", json=judge_body(judges=["p_true"]))
    assert response.status_code == 504 and "nothing of this call was stored" in response.text
    time.sleep(1.5)  # the worker finishes its model call after the caller gave up
    assert live_answers(sqlite_store) == 0


def test_a_full_queue_is_503_with_retry_after(settings: Settings, sqlite_store: Store) -> None:
    settings.api_max_waiting = 1
    client = client_for(settings, sqlite_store, llm=SlowLLM(seconds=0.6))
    with ThreadPoolExecutor(2) as pool:
        responses = list(pool.map(lambda q: client.post("/v1/judge", json=judge_body(
            question=q, judges=["p_true"])), ["first?", "second?"]))
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200, 503]
    busy = next(r for r in responses if r.status_code == 503)
    assert busy.headers["retry-after"] and error_of(busy)["type"] == "busy"
    assert live_answers(sqlite_store) == 1


def test_concurrent_clients_each_stored_once(settings: Settings, sqlite_store: Store) -> None:
    client = client_for(settings, sqlite_store)
    questions = [f"Question number {i}?" for i in range(8)] * 2  # each asked twice at once
    with ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(lambda q: client.post("/v1/judge", json=judge_body(
            question=q)), questions))
    assert all(r.status_code == 200 for r in responses)
    stored = [r.json()["record"]["stored"] for r in responses]
    assert sum(stored) == 8 and live_answers(sqlite_store) == 8
    assert len([run for run in list_runs(sqlite_store) if run.status == "live"]) == 1


def test_ask_with_given_passages(settings: Settings, sqlite_store: Store) -> None:
    llm = ScriptedLLM(respond=lambda messages: p_true_reply(messages)
                      if "yes or no" in messages[-1]["content"].lower()
                      else ScriptedReply("Answer: The Normans\nEvidence: ## Passage-0 ##"))
    client = client_for(settings, sqlite_store, llm=llm)
    response = client.post("/v1/ask", json={
        "question": "Who gave their name to Normandy?", "answerer": "evidence",
        "passages": [{"text": "The Normans gave their name to Normandy."}],
        "judges": ["trivial"]})
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["answer"]["text"] == "The Normans" and result["kept"]
    assert result["passages"][0]["text"].startswith("The Normans")
    assert "given with the question" in result["passages_from"]
    bad = client.post("/v1/ask", json={"question": "q", "mode": "telepathy"})
    assert bad.status_code == 400 and "telepathy" in error_of(bad)["message"]


# The proxy, against a real HTTP upstream.


def test_proxy_keeps_a_sure_answer_and_forwards_the_request_as_it_came(
        settings: Settings, sqlite_store: Store) -> None:
    with FakeOpenAIServer() as upstream:
        client = client_for(proxy_settings(settings, upstream), sqlite_store)
        response = client.post("/v1/chat/completions",
                               json=chat_body(logprobs=True, temperature=0.3))
        assert response.status_code == 200, response.text
        completion = response.json()
        assert completion["choices"][0]["message"]["content"] == ANSWER
        assert completion["choices"][0]["logprobs"]  # kept answers keep their log-probs
        verdicts = completion["ragshield"]
        assert verdicts["kept"] and verdicts["answer"]["model"] == "fake-model"
        assert "upstream" in verdicts["timings_ms"]
        sent = upstream.chat_requests()[0]
        assert "ragshield" not in sent.body and sent.body["temperature"] == 0.3
        assert sent.authorization == "Bearer upstream-secret-key-123"
    sample = load_sample(sqlite_store, LIVE_DATASET, verdicts["record"]["sample_id"])
    assert sample.question == "Capital?" and sample.given_answer.tokens  # type: ignore[union-attr]


def test_proxy_withholds_an_unsure_answer_without_leaking_it(
        settings: Settings, sqlite_store: Store) -> None:
    with FakeOpenAIServer(lambda request: UNSURE_UPSTREAM) as upstream:
        client = client_for(proxy_settings(settings, upstream), sqlite_store)
        completion = client.post("/v1/chat/completions", json=chat_body()).json()
    choice = completion["choices"][0]
    assert choice["message"]["content"] == ABSTAIN_MESSAGE and "logprobs" not in choice
    assert not completion["ragshield"]["kept"]
    assert completion["ragshield"]["record"]["stored"]


@pytest.mark.parametrize("stream", [False, True])
def test_the_upstream_gives_the_log_probs_token_prob_reads(
        settings: Settings, sqlite_store: Store, stream: bool) -> None:
    """Asked for them, the upstream's log-probs spare the local re-score (a prompt read);
    a caller that did not ask for them does not get them."""
    llm = ScriptedLLM(respond=p_true_reply, scores={ANSWER: [UNSURE] * 3})  # never asked
    with FakeOpenAIServer() as upstream:
        client = client_for(proxy_settings(settings, upstream), sqlite_store, llm=llm)
        response = client.post("/v1/chat/completions", json=chat_body(stream=stream))
        assert upstream.chat_requests()[0].body["logprobs"] is True
    assert response.status_code == 200, response.text
    if stream:
        chunks = [json.loads(line[len("data: "):]) for line in response.text.splitlines()
                  if line.startswith("data: {")]
        assert all(choice.get("logprobs") is None for chunk in chunks
                   for choice in chunk.get("choices") or [])
        verdicts = next(c["ragshield"] for c in reversed(chunks) if "ragshield" in c)
    else:
        assert response.json()["choices"][0]["logprobs"] is None
        verdicts = response.json()["ragshield"]
    assert verdicts["kept"] and llm.seen == []
    token_prob = next(v for v in verdicts["verdicts"] if v["judge"] == "token_prob")
    assert "given log-probs" in token_prob["reason"]


def test_an_upstream_that_refuses_log_probs_is_asked_again_without_them(
        settings: Settings, sqlite_store: Store) -> None:
    """Reasoning models answer 400 to logprobs: the answer is then re-scored locally, and
    the upstream is not asked for them again."""
    refusal = Fault(status=400, body=b'{"error": {"message": "logprobs is not supported with '
                                     b'this model"}}')
    llm = ScriptedLLM(respond=p_true_reply, scores={ANSWER: [UNSURE] * 3})
    with FakeOpenAIServer(lambda r: refusal if r.body.get("logprobs") else None) as upstream:
        client = client_for(proxy_settings(settings, upstream), sqlite_store, llm=llm)
        first = client.post("/v1/chat/completions", json=chat_body())
        second = client.post("/v1/chat/completions", json=chat_body())
        sent = [request.body.get("logprobs") for request in upstream.chat_requests()]
    assert first.status_code == second.status_code == 200, first.text
    assert sent == [True, None, None]
    assert not first.json()["ragshield"]["kept"]  # re-scored by the local model: unsure


def test_a_withheld_answer_keeps_nothing_that_spells_it_out(
        settings: Settings, sqlite_store: Store) -> None:
    """A reasoning text, a refusal field or a vendor's extra beside the answer would show
    what was withheld: the withheld choice keeps only its index and finish reason."""
    llm = ScriptedLLM(respond=p_true_reply, scores={ANSWER: [UNSURE] * 3})
    reply = json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                        "choices": [{"index": 0, "finish_reason": "stop", "stop_reason": ANSWER,
                                     "message": {"role": "assistant", "content": ANSWER,
                                                 "reasoning_content": f"so: {ANSWER}",
                                                 "refusal": None}}]}).encode()
    with FakeOpenAIServer(lambda request: Fault(body=reply)) as upstream:
        client = client_for(proxy_settings(settings, upstream), sqlite_store, llm=llm)
        completion = client.post("/v1/chat/completions", json=chat_body()).json()
    assert not completion["ragshield"]["kept"]
    assert completion["choices"] == [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": ABSTAIN_MESSAGE}}]


def test_a_withheld_answer_is_nowhere_but_in_ragshield_answer(
        settings: Settings, sqlite_store: Store) -> None:
    """Issue 45, item 8: token_prob's reason quoted the least sure token, and the upstream's
    top-level extras (an `output_text`) came back beside the abstain message."""
    tokens = [("The", SURE), (" SECRET", UNSURE), (" word", SURE)]
    body = completion_with("The SECRET word")
    body["output_text"] = "The SECRET word"
    body["choices"][0]["logprobs"] = {"content": [{"token": token, "logprob": value}
                                                  for token, value in tokens]}
    with FakeOpenAIServer(lambda request: Fault(body=json.dumps(body).encode())) as upstream:
        client = client_for(proxy_settings(settings, upstream), sqlite_store)
        response = client.post("/v1/chat/completions", json=chat_body())
    completion = response.json()
    assert response.status_code == 200 and not completion["ragshield"]["kept"], response.text
    assert completion["ragshield"]["answer"]["text"] == "The SECRET word"
    assert response.text.count("SECRET") == 1, response.text
    assert completion["id"] == "c" and completion["created"] == 1


@pytest.mark.parametrize("ragshield, messages, field", [
    ({"judges": ["no_such_judge"]}, None, "judge"),
    ({"judges": ["trivial"], "rule": "policy:missing"}, None, "policy"),
    # RAG applications often send the passages inside the user message: the question must
    # then be given on its own.
    ({"judges": ["trivial"]}, [{"role": "user", "content": "Passage: " + "text " * 600}],
     "ragshield.question"),
])
def test_proxy_refuses_what_it_could_not_judge_before_asking_the_upstream(
        settings: Settings, sqlite_store: Store, ragshield: dict, messages: list | None,
        field: str) -> None:
    body = chat_body()
    body["ragshield"] = {"passages": body["ragshield"]["passages"], **ragshield}
    body["messages"] = messages or body["messages"]
    with FakeOpenAIServer() as upstream:
        client = client_for(proxy_settings(settings, upstream), sqlite_store)
        response = client.post("/v1/chat/completions", json=body)
        assert upstream.chat_requests() == []  # nothing paid for
    assert response.status_code in (400, 422), response.text
    assert field in error_of(response)["message"]


@pytest.mark.parametrize("fault, status, kind", [
    (Fault(status=500, body=b'{"error": {"message": "boom upstream-secret-key-123"}}'), 502,
     "upstream_error"),
    (Fault(status=400, body=b'{"error": {"message": "model not found"}}'), 400,
     "upstream_error"),
    (Fault(body=b"not json"), 502, "upstream_error"),
    (Fault(body=b'{"choices": []}'), 502, "upstream_error"),
    # No text is the upstream's failure, not the caller's: a bad gateway, not a 400.
    (Fault(body=json.dumps({"choices": [{"index": 0, "finish_reason": "length", "message": {
        "role": "assistant", "content": ""}}]}).encode()), 502, "upstream_error"),
    (Fault(drop=True), 502, "upstream_error"),
    (Fault(delay_s=3.0), 504, None),
])
def test_proxy_upstream_failures_are_clear_and_store_nothing(
        settings: Settings, sqlite_store: Store, fault: Fault, status: int,
        kind: str | None) -> None:
    settings.api_timeout_s = 1.0
    with FakeOpenAIServer(lambda request: fault) as upstream:
        client = client_for(proxy_settings(settings, upstream), sqlite_store)
        response = client.post("/v1/chat/completions", json=chat_body())
    assert response.status_code == status, response.text
    error = error_of(response)
    assert kind is None or error["type"] == kind
    assert "upstream-secret-key-123" not in response.text
    assert "127.0.0.1" in error["message"] or status == 504
    assert live_answers(sqlite_store) == 0


def test_proxy_upstream_down_and_not_configured(settings: Settings, sqlite_store: Store) -> None:
    from tests.conftest import free_port

    settings.upstream_base_url = f"http://user:pw-secret@127.0.0.1:{free_port()}/v1"
    down = client_for(settings, sqlite_store).post("/v1/chat/completions", json=chat_body())
    assert down.status_code == 502 and "cannot reach" in error_of(down)["message"]
    assert "pw-secret" not in down.text
    settings.upstream_base_url = None
    none = client_for(settings, sqlite_store).post("/v1/chat/completions", json=chat_body())
    assert none.status_code == 503 and "--upstream" in error_of(none)["message"]
    assert live_answers(sqlite_store) == 0


def test_proxy_refuses_several_choices_and_unknown_stream_modes(settings: Settings,
                                                                sqlite_store: Store) -> None:
    with FakeOpenAIServer() as upstream:
        client = client_for(proxy_settings(settings, upstream), sqlite_store)
        body = chat_body(stream=True)
        body["ragshield"]["stream_mode"] = "eventually"
        mode = client.post("/v1/chat/completions", json=body)
        several = client.post("/v1/chat/completions", json=chat_body(n=2, stream=True))
        no_user = client.post("/v1/chat/completions", json={
            "messages": [{"role": "system", "content": "hi"}]})
        assert not upstream.chat_requests()
    assert mode.status_code == 422 and error_of(mode)["param"] == "ragshield.stream_mode"
    assert several.status_code == 422 and error_of(several)["param"] == "n"
    assert no_user.status_code == 422 and "ragshield.question" in error_of(no_user)["message"]


def test_web_app_and_api_share_one_lock(settings: Settings) -> None:
    """The larger-model fallback runs the packaged model in process even with a server
    backend, so it takes the in-process lock; other calls then run in parallel."""
    from ragshield.services.questions.ask_types import LARGER_FALLBACK, AskRequest

    lock = threading.Lock()
    settings.backend = "openai"
    gate = ModelGate(settings, lock)
    assert gate.for_request(AskRequest(question="q", fallback=LARGER_FALLBACK)) is lock
    assert gate.for_request(AskRequest(question="q", model="qwen-1.5b")) is lock
    assert gate.for_request(AskRequest(question="q", judge_model="qwen-1.5b")) is lock
    assert gate.for_request(AskRequest(question="q", judge_model="self")) is gate.remote
    assert gate.for_request(AskRequest(question="q")) is gate.remote
    # A packaged judge model in the settings reads in process too; a served one does not.
    assert ModelGate(settings.model_copy(update={"judge_model": "qwen-1.5b"}), lock).for_request(
        AskRequest(question="q")) is lock
    served = ModelGate(settings.model_copy(update={"judge_model": "big-served"}), lock)
    assert served.for_request(AskRequest(question="q")) is served.remote
    settings.backend = "embedded"
    assert ModelGate(settings, lock).for_request(AskRequest(question="q")) is lock


# Hostile requests (issue 31): every bad body is a 422 naming its field; what is stored is
# told apart by everything that can change a verdict; the model is opened only when needed.

@pytest.mark.parametrize("change, param", [
    ({"messages": [{"role": "user", "content": "Capital \ud800?"}]}, "messages[0].content"),
    ({"user": "\ud800"}, "user"),
    ({"metadata": {"note": ["ok", "\udfff"]}}, "metadata.note[1]"),
    ({"temperature": float("nan")}, "temperature"),
    ({"logit_bias": {"50256": float("-inf")}}, "logit_bias.50256"),
    ({"messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]},
     "messages[0].content"),
    ({"messages": [{"content": "Capital?"}]}, "messages[0].role"),
    ({"ragshield": {"judges": []}}, "ragshield.judges"),
    ({"ragshield": {"store": "yes"}}, "ragshield.store"),
    ({"ragshield": {"passages": [{"text": "p", "score": float("nan")}]}},
     "ragshield.passages[0].score"),
])
def test_proxy_bodies_are_checked_as_strictly_as_judge_bodies(
        settings: Settings, sqlite_store: Store, change: dict, param: str) -> None:
    with FakeOpenAIServer() as upstream:
        client = client_for(proxy_settings(settings, upstream), sqlite_store)
        response = post_json(client, "/v1/chat/completions", {**chat_body(), **change})
        assert not upstream.chat_requests()
    assert response.status_code == 422, response.text
    assert error_of(response)["param"].startswith(param), error_of(response)
    assert live_answers(sqlite_store) == 0


def test_a_422_names_a_path_that_is_in_the_body(settings: Settings,
                                                sqlite_store: Store) -> None:
    """Issue 45, item 14: the union's tag went into the path (messages[0].content.parts[0]
    .text), which is no field of the body."""
    body = chat_body(messages=[{"role": "user", "content": [{"type": "text", "text": 5}]}])
    response = client_for(settings, sqlite_store).post("/v1/chat/completions", json=body)
    assert response.status_code == 422
    assert error_of(response)["param"] == "messages[0].content[0].text", response.text
    missing = client_for(settings, sqlite_store).post("/v1/judge", json={"answer": "a"})
    assert error_of(missing)["param"] == "question"


def test_proxy_forwards_text_parts_and_tool_messages_as_they_came(
        settings: Settings, sqlite_store: Store) -> None:
    messages = [{"role": "assistant", "content": None,
                 "tool_calls": [{"id": "c1", "type": "function",
                                 "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "42"},
                {"role": "user", "content": [{"type": "text", "text": "Capital"},
                                             {"type": "image_url",
                                              "image_url": {"url": "data:,x"}},
                                             {"type": "text", "text": "of France?"}]}]
    with FakeOpenAIServer() as upstream:
        client = client_for(proxy_settings(settings, upstream), sqlite_store)
        response = client.post("/v1/chat/completions",
                               json=chat_body(messages=messages, stop=None, seed=7))
        sent = upstream.chat_requests()[0].body
    assert response.status_code == 200, response.text
    assert sent["messages"] == messages and sent["stop"] is None and sent["seed"] == 7
    assert response.json()["ragshield"]["question"] == "Capital of France?"


def test_bodies_nested_too_deep_are_refused(settings: Settings, sqlite_store: Store) -> None:
    deep = "[" * 5000 + "]" * 5000
    response = client_for(settings, sqlite_store).post(
        "/v1/judge", content=f'{{"question": "q", "answer": "a", "x": {deep}}}'.encode(),
        headers={"content-type": "application/json"})
    assert response.status_code == 422 and error_of(response)["param"] == "body"
    assert "nested deeper than 100 levels" in error_of(response)["message"]
    shallow = post_json(client_for(settings, sqlite_store), "/v1/judge",
                        {"question": "q", "answer": "a", "x": json.loads("[" * 150 + "]" * 150)})
    assert shallow.status_code == 422 and error_of(shallow)["param"] == "x"


NUL_FIELDS = [({"question": "q\x00"}, "question"), ({"answer": "a\x00"}, "answer"),
              ({"answer_model": "m\x00"}, "answer_model"),
              ({"passages": [{"text": "p\x00"}]}, "passages[0].text"),
              ({"passages": [{"text": "p", "title": "\x00"}]}, "passages[0].title")]


def test_a_nul_anywhere_is_a_422_naming_the_field_on_every_store(settings: Settings,
                                                                store: Store) -> None:
    """Issue 45, item 3: PostgreSQL's text cannot hold a NUL: a 500 DataError, and on the
    proxy after the upstream was paid."""
    client = client_for(settings, store)
    for change, param in NUL_FIELDS:
        response = client.post("/v1/judge", json={**judge_body(judges=["trivial"]), **change})
        assert response.status_code == 422, (param, response.text)
        assert error_of(response)["param"] == param and "NUL" in error_of(response)["message"]
    with FakeOpenAIServer() as upstream:
        client = client_for(proxy_settings(settings, upstream), store)
        body = chat_body(messages=[{"role": "user", "content": "Capital\x00?"}])
        proxied = client.post("/v1/chat/completions", json=body)
        paid = len(upstream.chat_requests())
        nul_answer = completion_with("Par\x00is")
        upstream.behaviour = lambda request: Fault(body=json.dumps(nul_answer).encode())
        answered = client.post("/v1/chat/completions", json=chat_body())
    assert proxied.status_code == 422 and error_of(proxied)["param"] == "messages[0].content"
    assert paid == 0  # refused before the upstream was asked
    assert answered.status_code == 502 and "NUL" in error_of(answered)["message"]
    assert live_answers(store) == 0


@pytest.mark.parametrize("version", ["2147483648", "9223372036854775808", "0"])
def test_a_policy_version_out_of_range_is_a_400(settings: Settings, store: Store,
                                                version: str) -> None:
    """Issue 45, item 4: a version past SQL's integers reached the query (500)."""
    response = client_for(settings, store).post("/v1/judge", json=judge_body(
        judges=["token_prob"], rule=f"policy:api-guard@{version}"))
    assert response.status_code == 400, response.text
    assert "from 1 to 2,147,483,647" in error_of(response)["message"]


def completion_with(text: str) -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion", "created": 1, "model": "fake-model",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}]}


def test_the_schemas_refuse_non_finite_numbers() -> None:
    from pydantic import ValidationError

    from ragshield.api.schemas import JudgeBody

    for bad in (float("nan"), float("inf"), float("-inf")):
        with pytest.raises(ValidationError, match="finite number"):
            JudgeBody.model_validate({"question": "q", "answer": "a",
                                      "passages": [{"text": "p", "score": bad}]})


def test_a_key_is_checked_before_the_body_is_read(settings: Settings,
                                                  sqlite_store: Store) -> None:
    client = client_for(settings, sqlite_store, keys=[KEY])
    for body in (b'{"question": ', b'{"nonsense": NaN}', json.dumps(judge_body()).encode()):
        keyless = client.post("/v1/judge", content=body,
                              headers={"content-type": "application/json"})
        assert keyless.status_code == 401, keyless.text
        assert keyless.headers["www-authenticate"] == "Bearer"
    keyed = client.post("/v1/judge", content=b'{"question": ', headers={
        "content-type": "application/json", "Authorization": f"Bearer {KEY}"})
    assert keyed.status_code == 400 and error_of(keyed)["type"] == "invalid_json"
    assert client.get("/v1/judges").status_code == 401
    assert client.get("/v1/health").status_code == 200
    assert client.get("/v1/openapi.json").status_code == 200


def test_a_call_without_a_key_is_refused_before_its_body_is_read(
        settings: Settings, sqlite_store: Store) -> None:
    """Issue 45, item 9: a 2 MB body without a key got 413, and a 900 KB one was read whole
    before its 401."""
    guard = Guard(settings, sqlite_store, FakeModels(ScriptedLLM(respond=p_true_reply)),
                  ModelGate(settings))
    app = build_api(settings, guard, KeyCheck([KEY]))

    def call(size: int) -> tuple[int, int]:
        """(status, body bytes the server took) of a keyless POST of `size` bytes."""
        taken, sent = 0, []

        async def receive() -> dict[str, Any]:
            nonlocal taken
            taken += 65_536
            return {"type": "http.request", "body": b"x" * 65_536, "more_body": taken < size}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        scope = {"type": "http", "method": "POST", "path": "/v1/judge", "raw_path": b"/v1/judge",
                 "query_string": b"", "root_path": "", "scheme": "http", "http_version": "1.1",
                 "server": ("127.0.0.1", 80), "client": ("127.0.0.1", 5000),
                 "headers": [(b"content-type", b"application/json"),
                             (b"content-length", str(size).encode())]}
        asyncio.run(app(scope, receive, send))
        return sent[0]["status"], taken

    assert call(2_000_000) == (401, 0)
    assert call(900_000) == (401, 0)


def test_keys_that_no_header_can_carry_are_refused(settings: Settings, tmp_path: Path) -> None:
    keys_file = tmp_path / "keys.txt"
    keys_file.write_text(f"{KEY}\n# the next one can never match\nключ-{'x' * 20}\n",
                         encoding="utf-8")
    settings.api_keys_file = keys_file
    with pytest.raises(ApiKeyError, match=f"^{keys_file}:3: an API key must be printable ASCII"):
        read_keys(settings)
    settings.api_keys_file = None
    settings.api_keys = SecretStr(f"{KEY},{'y' * 20}\x7f")
    with pytest.raises(ApiKeyError, match="^RAGSHIELD_API_KEYS: an API key must be printable"):
        read_keys(settings)


def test_calls_that_differ_in_anything_a_verdict_reads_are_each_stored(
        settings: Settings, sqlite_store: Store) -> None:
    client = client_for(settings, sqlite_store)
    base = {"question": "Who gave their name to Normandy?", "answer": "The Normans",
            "passages": [{"text": "The Normans gave their name to Normandy.", "title": "N",
                          "score": 0.9},
                         {"text": "Rollo was a Viking.", "title": "R", "score": 0.5}],
            "cited_passages": [0], "answer_logprobs": [{"token": "The", "logprob": SURE}],
            "judges": ["trivial", "token_prob"], "rule": "trivial"}

    def with_passage(**change: Any) -> list[dict]:
        return [{**base["passages"][0], **change}, base["passages"][1]]

    variants = {
        "question": {"question": "Who named Normandy?"},
        "passage text": {"passages": with_passage(text="The Normans named Normandy.")},
        "passage title": {"passages": with_passage(title="Normandy")},
        "passage score": {"passages": with_passage(score=0.2)},
        "passage order": {"passages": base["passages"][::-1]},
        "cited passages": {"cited_passages": [1]},
        "log-probs": {"answer_logprobs": [{"token": "The", "logprob": UNSURE}]},
        "answer": {"answer": "The Vikings"},
        "answer model": {"answer_model": "their-model"},
        "judges": {"judges": ["trivial"]},
        "rule": {"rule": "token_prob"},
    }
    first = client.post("/v1/judge", json=base).json()["record"]
    assert first["stored"]
    assert client.post("/v1/judge", json=base).json()["record"] == {**first, "stored": False}
    records = {}
    for what, change in variants.items():
        response = client.post("/v1/judge", json={**base, **change})
        assert response.status_code == 200, (what, response.text)
        records[what] = response.json()["record"]
        assert records[what]["stored"], f"a call differing in its {what} was not stored"
    kept = {(record["run_id"], record["sample_id"]) for record in [first, *records.values()]}
    assert len(kept) == len(variants) + 1 == live_answers(sqlite_store)


class NoModels:
    """Models that must not be opened: an ask that needs none must not ask for one."""

    def llm(self, packaged: str | None = None) -> LLM:
        raise AssertionError("a model was opened for an ask that needs none")


def test_judges_that_read_no_model_need_no_model_and_no_turn_at_it(
        settings: Settings, sqlite_store: Store) -> None:
    settings.api_timeout_s = 2.0
    busy = threading.Lock()
    busy.acquire()  # the web app's long generation holds the in-process model
    guard = Guard(settings, sqlite_store, NoModels(), ModelGate(settings, busy))  # type: ignore[arg-type]
    client = TestClient(build_api(settings, guard, KeyCheck([])), raise_server_exceptions=False)
    started = time.monotonic()
    response = client.post("/v1/judge", json=judge_body(judges=["trivial"], rule="trivial"))
    assert response.status_code == 200, response.text
    assert time.monotonic() - started < 1.5 and response.json()["record"]["stored"]
    # token_prob reads the log-probs given with the answer: no model opened, no turn waited
    given = judge_body(judges=["token_prob"], rule="token_prob",
                       answer_logprobs=[{"token": "The", "logprob": SURE}])
    assert client.post("/v1/judge", json=given).status_code == 200
    needs_one = client.post("/v1/judge", json=judge_body(judges=["trivial", "p_true"]))
    assert needs_one.status_code == 504  # p_true waits for the model, which stays busy
    busy.release()


def test_a_missing_model_file_is_a_server_fault_that_names_no_path(
        settings: Settings, sqlite_store: Store, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    from ragshield.services.questions.asking import OpenedModels

    missing = tmp_path / "models" / "gone.gguf"
    settings.backend, settings.model = "embedded", str(missing)
    guard = Guard(settings, sqlite_store, OpenedModels(settings, sqlite_store),
                  ModelGate(settings))
    client = TestClient(build_api(settings, guard, KeyCheck([])), raise_server_exceptions=False)
    response = client.post("/v1/judge", json=judge_body(judges=["p_true"]))
    assert response.status_code == 503, response.text
    assert str(tmp_path) not in response.text and "log" in error_of(response)["message"]
    assert str(missing) in caplog.text  # the operator finds the path in the server's log
    assert live_answers(sqlite_store) == 0


def test_unknown_corpora_and_trained_judges_name_no_server_path(
        settings: Settings, sqlite_store: Store) -> None:
    client = client_for(settings, sqlite_store)
    judge = client.post("/v1/judge", json=judge_body(judges=["trained:nosuch"]))
    assert judge.status_code == 400
    message = error_of(judge)["message"]
    assert "trained:nosuch" in message and "judges list" in message
    assert str(settings.cache_dir) not in message and "/judges" not in message
    corpus = client.post("/v1/ask", json={
        "question": "q", "passages": [{"text": "p"}], "corpus": "nosuch", "noise": 1,
        "judges": ["trivial"]})
    assert corpus.status_code == 400
    message = error_of(corpus)["message"]
    assert "'nosuch'" in message and "corpus list" in message
    assert str(settings.corpora_dir) not in message
    assert live_answers(sqlite_store) == 0


def test_an_unknown_corpus_is_refused_before_the_embedding_model_loads(
        settings: Settings, sqlite_store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 45, item 10: the embedder loaded first (504 on a server with a 3 s deadline)."""
    loaded = []
    monkeypatch.setattr("ragshield.retrieval.encoding.default_embedder",
                        lambda settings: loaded.append(settings))
    response = client_for(settings, sqlite_store).post("/v1/ask", json={
        "question": "Who?", "corpus": "nosuch", "mode": "hybrid", "judges": ["trivial"]})
    assert response.status_code == 400 and "'nosuch'" in error_of(response)["message"]
    assert loaded == []
