"""The LLM call cache on real SQLite and PostgreSQL, with a scripted LLM and the real model."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import func, select

from ragshield.config import Settings
from ragshield.llm.base import CHAT, SCORE, BackendBase
from ragshield.llm.call_cache import CachedLLM, unsaved
from ragshield.llm.factory import make_llm
from ragshield.store.models import LLMCallRow
from ragshield.types import Completion, ContinuationScore, TokenLogprob

MESSAGES = [{"role": "user", "content": "Q?"}]


class CountingLLM(BackendBase):
    """A scripted test double: answers with a counter so every real call is visible."""

    backend = "scripted"
    model = "counter"
    capabilities = frozenset({CHAT, SCORE})

    def __init__(self) -> None:
        self.calls = 0

    def chat(self, messages, **params) -> Completion:
        self.calls += 1
        return Completion(text=f"answer {self.calls}", backend=self.backend, model=self.model,
                          prompt_tokens=3, completion_tokens=2, seconds=0.5,
                          tokens=[TokenLogprob("answer", -0.1, {"answer": -0.1, "reply": -2.5})])

    def score(self, prompt_messages, continuation) -> ContinuationScore:
        self.calls += 1
        return ContinuationScore([TokenLogprob(continuation, -0.25)], self.backend, self.model, 0.1)


def test_identical_call_is_served_from_the_store(store):
    inner = CountingLLM()
    llm = CachedLLM(inner, store)
    first = llm.chat(MESSAGES, max_tokens=8)
    second = llm.chat(MESSAGES, max_tokens=8)
    assert inner.calls == 1
    assert second.text == first.text and second.tokens == first.tokens
    assert not first.cache_hit and second.cache_hit
    assert second.cached_prompt_tokens == second.prompt_tokens


def test_any_change_of_the_call_is_a_new_call(store):
    inner = CountingLLM()
    llm = CachedLLM(inner, store)
    llm.chat(MESSAGES)
    llm.chat(MESSAGES, temperature=0.7)
    llm.chat(MESSAGES, seed=1)
    llm.chat(MESSAGES, max_tokens=9)
    llm.chat([{"role": "user", "content": "Q?!"}])
    llm.chat(MESSAGES, logprobs=True, top_logprobs=2)
    assert inner.calls == 6
    with store.session() as session:
        assert session.scalar(select(func.count()).select_from(LLMCallRow)) == 6


def test_an_unsaved_call_replays_the_cache_and_writes_nothing(store):
    """Issue 55: a guard call with `"store": false` left its prompts in the call cache."""
    inner = CountingLLM()
    llm = CachedLLM(inner, store)
    llm.chat(MESSAGES)
    quiet = unsaved(llm)
    assert quiet.chat(MESSAGES).cache_hit and inner.calls == 1
    quiet.chat([{"role": "user", "content": "not to keep"}])
    quiet.score(MESSAGES, "not to keep either")
    assert inner.calls == 3 and llm.saves and unsaved(inner) is inner
    with store.session() as session:
        assert session.scalar(select(func.count()).select_from(LLMCallRow)) == 1


def test_scores_are_cached_too(store):
    inner = CountingLLM()
    llm = CachedLLM(inner, store)
    assert llm.score(MESSAGES, "Paris").total_logprob == -0.25
    again = llm.score(MESSAGES, "Paris")
    assert again.cache_hit and again.total_logprob == -0.25 and inner.calls == 1


def test_cache_survives_a_new_process_view_of_the_store(store):
    CachedLLM(CountingLLM(), store).chat(MESSAGES)
    fresh_inner = CountingLLM()
    assert CachedLLM(fresh_inner, store).chat(MESSAGES).cache_hit
    assert fresh_inner.calls == 0


def test_concurrent_identical_calls_store_one_row(store):
    llm = CachedLLM(CountingLLM(), store)
    with ThreadPoolExecutor(max_workers=8) as pool:
        texts = list(pool.map(lambda _: llm.chat(MESSAGES).text, range(16)))
    assert all(text.startswith("answer") for text in texts)
    with store.session() as session:
        assert session.scalar(select(func.count()).select_from(LLMCallRow)) == 1


def test_flag_turns_the_cache_off(settings, store, qwen_path):
    # make_llm builds the configured backend: the embedded Qwen, loaded for real.
    cached = make_llm(settings, store=store)
    assert isinstance(cached, CachedLLM)
    plain = make_llm(Settings(**{**settings.model_dump(), "llm_cache": False}), store=store)
    assert not isinstance(plain, CachedLLM)


def test_real_model_call_is_replayed_exactly(settings, store, embedded_llm):
    llm = CachedLLM(embedded_llm, store)
    messages = [{"role": "user", "content": "Name a colour of the French flag in one word."}]
    live = llm.chat(messages, max_tokens=6, logprobs=True, top_logprobs=2)
    replay = llm.chat(messages, max_tokens=6, logprobs=True, top_logprobs=2)
    assert replay.cache_hit and not live.cache_hit
    assert replay.text == live.text and replay.tokens == live.tokens
    assert replay.seconds < live.seconds
