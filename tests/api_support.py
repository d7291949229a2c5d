"""Helpers of the guard API tests: scripted model replies, a client over a Guard, request bodies."""

from __future__ import annotations

import json
import threading
import time
from typing import Any, Sequence

from pydantic import SecretStr
from starlette.testclient import TestClient

from ragshield.api.app import build_api
from ragshield.api.keys import KeyCheck, KeyEntry
from ragshield.config import Settings
from ragshield.llm.base import LLM
from ragshield.services.guarding.decision_log import DecisionLog
from ragshield.services.guarding.guard import Guard, Listener, ModelGate
from ragshield.store.database import Store
from ragshield.store.runs import list_runs
from ragshield.types import Message
from tests.fakes import FakeModels, ScriptedLLM, ScriptedReply
from tests.reliability.fake_openai import FakeOpenAIServer, Fault

KEY = "k" * 24


SURE, UNSURE = -0.01, -4.0  # per-token log-probs: p 0.99 (token_prob keeps), 0.02 (withholds)


UNSURE_UPSTREAM = Fault(token_logprob=UNSURE)  # its answer's log-probs, asked for: withheld


def p_true_reply(messages: Sequence[Message]) -> ScriptedReply:
    """p_true's yes/no question, answered "Yes" with P(yes) 0.9."""
    return ScriptedReply("Yes", top={"Yes": -0.105, "No": -2.3})


class SlowLLM(ScriptedLLM):
    """Each chat call holds the model `seconds`; `busy` is set when the first begins."""

    def __init__(self, seconds: float) -> None:
        super().__init__(respond=p_true_reply)
        self.seconds, self.busy = seconds, threading.Event()

    def chat(self, messages, **params):  # type: ignore[no-untyped-def, override]
        self.busy.set()
        time.sleep(self.seconds)
        return super().chat(messages, **params)


def client_for(settings: Settings, store: Store, llm: LLM | None = None,
               keys: Sequence[str] = ()) -> TestClient:
    llm = llm or ScriptedLLM(respond=p_true_reply)
    guard = Guard(settings, store, FakeModels(llm), ModelGate(settings))
    return TestClient(build_api(settings, guard, KeyCheck(list(keys))),
                      raise_server_exceptions=False)


def judge_body(question: str = "Who gave their name to Normandy?", **extra: Any) -> dict:
    return {"question": question, "answer": "The Normans",
            "passages": [{"text": "The Normans gave their name to Normandy.", "id": "d1",
                          "score": 0.9}],
            "judges": ["trivial", "token_prob", "p_true"], **extra}


def live_answers(store: Store) -> int:
    return sum(run.done for run in list_runs(store) if run.status == "live")


def error_of(response: Any) -> dict:
    return response.json()["error"]


# A stored policy on token_prob: keep at >= 0.9, withhold below 0.1, defer between.
API_GUARD_POLICY = {
    "format": "ragshield-policy/1", "name": "api-guard", "source": "token_prob",
    "answer_at": 0.9, "withhold_below": 0.1, "alpha": 0.1, "delta": 0.1, "beta": 0.2,
    "calibration": {"labels": 40, "answered": 20, "withheld": 10, "deferred": 10,
                    "bad_answered": 1, "good_withheld": 1},
    "fitted_on": {"truth": "human", "human_labels": 40, "automatic_labels": 0,
                  "unscored": 0, "fingerprint": "f", "sample_ids": []},
    "code_version": "test", "created_at": "2026-11-25T00:00:00+00:00"}


def proxy_settings(settings: Settings, upstream: FakeOpenAIServer) -> Settings:
    settings.upstream_base_url = upstream.url
    settings.upstream_api_key = SecretStr("upstream-secret-key-123")
    return settings


def chat_body(**extra: Any) -> dict:
    return {"model": "fake-model", "messages": [{"role": "user", "content": "Capital?"}],
            "ragshield": {"passages": [{"text": "Paris is the capital of France."}],
                          "judges": ["trivial", "token_prob"], "rule": "token_prob"},
            **extra}


def guarded_client(settings: Settings, store: Store, keys: Sequence[KeyEntry | str] = (),
                   listeners: Sequence[Listener] | None = None,
                   llm: LLM | None = None) -> TestClient:
    """tests/test_api.py's client, its guard told of each call: by the decision log unless
    `listeners` are given."""
    guard = Guard(settings, store, FakeModels(llm or ScriptedLLM(respond=p_true_reply)),
                  ModelGate(settings),
                  listeners=(DecisionLog(store, settings),) if listeners is None else listeners)
    return TestClient(build_api(settings, guard, KeyCheck(list(keys))),
                      raise_server_exceptions=False)


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def events(text: str) -> list[Any]:
    """The data of each server-sent event: parsed JSON, or the string [DONE]."""
    found = []
    for block in text.split("\n\n"):
        if block.startswith("data: "):
            data = block[len("data: "):]
            found.append(data if data == "[DONE]" else json.loads(data))
    return found


def streamed_text(chunks: list[Any]) -> str:
    return "".join(choice["delta"].get("content") or "" for chunk in chunks
                   if isinstance(chunk, dict) for choice in chunk.get("choices", []))


def chunk(created: int = 7, **choice: Any) -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion.chunk", "created": created, "model": "m",
            "choices": [{"index": 0, **choice}] if choice else []}


SLACK_S = 1.5  # what a call may take past its budget in a test, on cores shared with other
