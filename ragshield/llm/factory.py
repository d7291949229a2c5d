"""Building the configured LLM backend, wrapped in the call cache when a store is given."""

from __future__ import annotations

from pathlib import Path

from ragshield.config import Settings
from ragshield.errors import OptionError
from ragshield.llm.base import LLM
from ragshield.llm.call_cache import CachedLLM
from ragshield.llm.packaged_models import (PACKAGED_MODELS, default_answer_model, ensure_model,
                                            packaged_model, unknown_embedded_model)
from ragshield.store.database import Store


def embedded_model_path(settings: Settings, *, packaged: str | None = None) -> Path:
    """The GGUF file of the embedded model, assembled if needed: the packaged model named
    `packaged`, else `settings.model` (a packaged model's name or a GGUF path), else the
    default packaged model (default_answer_model)."""
    name = packaged or settings.model or default_answer_model()
    if packaged is None and name not in PACKAGED_MODELS:
        return Path(name).expanduser()
    return ensure_model(packaged_model(name), settings.cache_dir)


def make_llm(settings: Settings, *, store: Store | None = None,
             packaged: str | None = None) -> LLM:
    """The backend named by `settings.backend`; `packaged` picks one of the packaged models
    (PACKAGED_MODELS) on the embedded backend whatever the settings say.

    With a store and `settings.llm_cache` on, every call goes through the call cache.
    """
    inner: LLM
    if packaged or settings.backend == "embedded":
        from ragshield.llm.llama_cpp_backend import LlamaCppLLM

        inner = LlamaCppLLM(
            embedded_model_path(settings, packaged=packaged),
            n_ctx=settings.n_ctx,
            n_threads=settings.n_threads,
        )
    elif settings.backend == "openai":
        from ragshield.llm.openai_backend import OpenAICompatibleLLM

        key = settings.openai_api_key
        inner = OpenAICompatibleLLM(
            settings.openai_base_url,
            settings.model,
            api_key=key.get_secret_value() if key else None,
            timeout_s=settings.request_timeout_s,
            max_retries=settings.max_retries,
            backoff_s=settings.retry_backoff_s,
        )
    else:
        from ragshield.llm.transformers_backend import TransformersLLM

        if not settings.model:
            raise OptionError("the transformers backend needs a model: set RAGSHIELD_MODEL")
        inner = TransformersLLM(settings.model)
    if store is not None and settings.llm_cache:
        return CachedLLM(inner, store)
    return inner


def make_reader(settings: Settings, name: str, *, store: Store | None = None) -> LLM:
    """The judges' model `name` (Settings.judge_model): a packaged model, else a GGUF path or
    a served model's name on the configured backend."""
    if name in PACKAGED_MODELS:
        return make_llm(settings, store=store, packaged=name)
    problem = unknown_embedded_model(name) if settings.backend == "embedded" else None
    if problem is not None:
        raise OptionError(f"judge model {problem}")
    return make_llm(settings.model_copy(update={"model": name}), store=store)
