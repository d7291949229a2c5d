"""One ChatParams for every backend (issue 60): the options' defaults and checks live in one
place, the backends take them as they come, and the call cache keys them as before."""

from __future__ import annotations

import inspect

import pytest

from ragshield.judge_budget import StoppingLLM
from ragshield.llm.base import ChatParams
from ragshield.llm.call_cache import CachedLLM, call_key
from ragshield.llm.llama_cpp_backend import LlamaCppLLM
from ragshield.llm.no_model import NoModel
from ragshield.llm.openai_backend import OpenAICompatibleLLM
from ragshield.llm.traced import TracedLLM
from ragshield.llm.transformers_backend import TransformersLLM

BACKENDS = (LlamaCppLLM, OpenAICompatibleLLM, TransformersLLM, CachedLLM, NoModel, TracedLLM,
            StoppingLLM)


def test_the_options_default_and_are_checked_in_one_place() -> None:
    assert ChatParams.of({}) == ChatParams()
    assert ChatParams.of({"stop": ["\n", ""], "max_tokens": 8}).stop == ("\n", "")
    assert ChatParams.of({"stop": ["\n", ""]}).stops == ["\n"]  # an empty stop stops nothing
    with pytest.raises(ValueError, match="max_tokens must be at least 1, got 0"):
        ChatParams.of({"max_tokens": 0})
    with pytest.raises(TypeError):
        ChatParams.of({"max_token": 8})  # type: ignore[typeddict-unknown-key]


def test_no_backend_restates_an_option_or_its_default() -> None:
    for backend in BACKENDS:
        kinds = [p.kind for p in inspect.signature(backend.chat).parameters.values()]
        assert inspect.Parameter.VAR_KEYWORD in kinds, backend
        named = [name for name, p in inspect.signature(backend.chat).parameters.items()
                 if p.kind is inspect.Parameter.KEYWORD_ONLY]
        assert named in ([], ["purpose"]), (backend, named)  # the trace's own field only


def test_a_call_cached_before_is_found_by_the_same_key() -> None:
    messages = [{"role": "user", "content": "Where is Paris?"}]
    before = {"messages": messages, "max_tokens": 16, "temperature": 0.0, "seed": 0,
              "logprobs": True, "top_logprobs": 5, "stop": ["\n"]}
    params = ChatParams.of({"max_tokens": 16, "logprobs": True, "top_logprobs": 5,
                            "stop": ("\n",)})
    now = {"messages": messages, **params.request()}
    assert call_key("embedded", "m", "chat", now) == call_key("embedded", "m", "chat", before)
