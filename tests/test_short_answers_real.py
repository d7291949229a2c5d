"""The Normandy answers of issue 56, judged for real (the packaged 1.5B reads pre_answer,
support and p_true; the shipped `grounded` rule decides) in the three faces that judge a given
answer: `Shield.judge`, `POST /v1/judge` and the proxy (as its upstream's answer). The two
right ones are kept and marked supported; the six wrong short answers, whose words are all in
the passages, are withheld: where they sit in the passages (judges/answer_alignment.py) pulls
their support to 0.14-0.29, under the short-answer floor (docs/QUALITY.md, 2026-12-04)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import SecretStr
from starlette.testclient import TestClient

from ragshield.api.app import build_api
from ragshield.api.keys import KeyCheck
from ragshield.datasets.demo import DEMO_CORPUS
from ragshield.services.guarding.guard import Guard, ModelGate
from ragshield.services.questions.asking import OpenedModels
from ragshield.services.shield import Shield
from tests.reliability.fake_openai import Fault, FakeOpenAIServer

QUESTION = "Who gave their name to Normandy?"
PASSAGE_IDS = ("squad2-f19a5b45994b", "squad2-c9f56009b144")  # the Normans, Guy de Lusignan
WRONG = ("Guy de Lusignan", "Guy de Lusignan.", "It was Guy de Lusignan.",
         "Guy de Lusignan gave his name to Normandy.", "Rollo.", "King Charles III.")
RIGHT = ("The Normans", "The Normans.")


@pytest.fixture
def passages() -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in DEMO_CORPUS.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    by_id = {row["id"]: row for row in rows}
    return [{"text": by_id[i]["text"], "title": by_id[i].get("title")} for i in PASSAGE_IDS]


def marked(support: dict[str, Any]) -> list[bool]:
    return [claim["supported"] for claim in support["claims"]]


def test_shield_withholds_the_wrong_spans_and_keeps_the_right_answer(
        settings, sqlite_store, larger_model_path, passages):
    with Shield(settings, sqlite_store, record=False) as shield:
        decisions = {answer: shield.judge(QUESTION, passages, answer)
                     for answer in (*WRONG, *RIGHT)}
    reasons = {a: (d.kept, d.reason) for a, d in decisions.items()}
    withheld = [answer for answer in WRONG if not decisions[answer].kept]
    assert withheld == list(WRONG), reasons
    for answer in withheld:
        # support is low enough that the combination withholds it before the floor need
        reason = decisions[answer].reason
        assert "under the threshold" in reason or "kept only at support" in reason, reason
        support = next(v for v in decisions[answer].verdicts if v.judge == "support")
        assert not support.details["claims"][0]["supported"], support.rationale
    for answer in RIGHT:
        decision = decisions[answer]
        assert decision.kept, reasons
        support = next(v for v in decision.verdicts if v.judge == "support")
        assert support.keep and support.details["claims"][0]["supported"], support.rationale
        assert "short answer" in support.rationale


def completion(content: str) -> bytes:
    return json.dumps({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "fake-model",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}}).encode()


def test_the_guard_api_and_the_proxy_decide_the_same(settings, sqlite_store, larger_model_path,
                                                     passages):
    given = {"Rollo.": False, "The Normans.": True}
    replies = iter(given)
    with FakeOpenAIServer(lambda request: Fault(body=completion(next(replies)))
                          if request.is_chat else None) as upstream:
        settings.upstream_base_url = upstream.url
        settings.upstream_api_key = SecretStr("upstream-secret-key-123")
        guard = Guard(settings, sqlite_store, OpenedModels(settings, sqlite_store),
                      ModelGate(settings))
        client = TestClient(build_api(settings, guard, KeyCheck([])))
        for answer, right in given.items():
            judged = client.post("/v1/judge", json={"question": QUESTION, "answer": answer,
                                                    "passages": passages})
            assert judged.status_code == 200, judged.text
            body = judged.json()
            assert body["kept"] is right, body["reason"]
            support = next(v for v in body["verdicts"] if v["judge"] == "support")
            assert marked(support) == [right]
            proxied = client.post("/v1/chat/completions", json={
                "model": "fake-model", "messages": [{"role": "user", "content": QUESTION}],
                "ragshield": {"passages": passages}})
            assert proxied.status_code == 200, proxied.text
            verdicts = proxied.json()["ragshield"]
            assert verdicts["kept"] is right, verdicts["reason"]
            content = proxied.json()["choices"][0]["message"]["content"]
            assert (content == answer) is right  # a withheld answer is not passed on
