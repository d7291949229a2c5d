"""The LLM call cache: every call is stored in the database and an identical call is replayed.

The key is the sha256 of (backend, model, method, messages, parameters), so a change to any
of them is a new call. Runs can then be replayed, re-scored and browsed without the model.
A call whose text must not be kept (the guard API's `"store": false`) reads the cache but
writes nothing to it (`unsaved`): its prompts hold the question, the answer and the passages.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any, Sequence, Unpack

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from ragshield.llm.base import LLM, ChatOptions, ChatParams, WrappedLLM
from ragshield.store.database import Store
from ragshield.store.models import LLMCallRow
from ragshield.types import Completion, ContinuationScore, Message


def call_key(backend: str, model: str, method: str, request: dict[str, Any]) -> str:
    payload = json.dumps(
        {"backend": backend, "model": model, "method": method, "request": request},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class CachedLLM(WrappedLLM):
    """Wraps any backend; same protocol, with every call stored in (unless `saves` is off)
    and served from the store."""

    def __init__(self, inner: LLM, store: Store, *, saves: bool = True) -> None:
        super().__init__(inner)
        self.store = store
        self.saves = saves

    def _lookup(self, key: str) -> dict[str, Any] | None:
        with self.store.session() as session:
            return session.scalar(select(LLMCallRow.response).where(LLMCallRow.key == key))

    def _save(self, key: str, method: str, request: dict[str, Any], response: dict[str, Any],
              prompt_tokens: int, completion_tokens: int, seconds: float) -> None:
        if not self.saves:
            return
        row = LLMCallRow(
            key=key, backend=self.backend, model=self.model, method=method, request=request,
            response=response, prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens, seconds=seconds,
        )
        try:
            with self.store.session() as session:
                session.add(row)
        except IntegrityError:
            pass  # another worker stored the same call first; both results are equivalent

    def chat(self, messages: Sequence[Message], **options: Unpack[ChatOptions]) -> Completion:
        params = ChatParams.of(options)
        request = {"messages": [dict(m) for m in messages], **params.request()}
        key = call_key(self.backend, self.model, "chat", request)
        started = time.perf_counter()
        cached = self._lookup(key)
        if cached is not None:
            completion = Completion.from_dict(cached)
            completion.cache_hit = True
            completion.cached_prompt_tokens = completion.prompt_tokens
            completion.seconds = time.perf_counter() - started
            return completion
        completion = self.inner.chat(messages, **params.as_options())
        self._save(key, "chat", request, completion.to_dict(), completion.prompt_tokens,
                   completion.completion_tokens, completion.seconds)
        return completion

    def score(self, prompt_messages: Sequence[Message], continuation: str) -> ContinuationScore:
        request = {"messages": [dict(m) for m in prompt_messages], "continuation": continuation}
        key = call_key(self.backend, self.model, "score", request)
        started = time.perf_counter()
        cached = self._lookup(key)
        if cached is not None:
            result = ContinuationScore.from_dict(cached)
            result.cache_hit = True
            result.seconds = time.perf_counter() - started
            return result
        result = self.inner.score(prompt_messages, continuation)
        self._save(key, "score", request, result.to_dict(), 0, len(result.tokens), result.seconds)
        return result


def unsaved(llm: LLM) -> LLM:
    """`llm` writing nothing to the call cache (it still replays what the cache holds)."""
    if isinstance(llm, CachedLLM) and llm.saves:
        return CachedLLM(llm.inner, llm.store, saves=False)
    return llm
