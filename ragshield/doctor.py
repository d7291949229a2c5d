"""`ragshield doctor`: check every part (models, embeddings, database) and report as JSON."""

from __future__ import annotations

import time
from typing import Any, Callable

from ragshield.config import Settings
from ragshield.errors import OptionError
from ragshield.llm.base import LLM, LOGPROBS
from ragshield.llm.factory import make_llm
from ragshield.llm.packaged_models import LARGER_MODEL, SMALLEST_MODEL
from ragshield.retrieval.embeddings import load_embedder
from ragshield.store.database import masked, open_store
from ragshield.types import Message

DOCTOR_QUESTION = (
    "Context: Paris is the capital of France. Question: What is the capital of France? "
    "Answer in one word."
)

# Generation speed is timed on a reply long enough to measure, as the difference between a
# SPEED_TOKENS-token and a 1-token reply to the same prompt: the prompt's reading time (and
# the first token's) cancels out. A one-word answer divided by its whole call measured the
# prompt, not generation (0.22 tok/s on a CPU that generates 47).
SPEED_PROMPT = "Count from 1 to 200, separated by commas."
SPEED_TOKENS = 32


def generation_speed(llm: LLM) -> float | None:
    """Tokens per second of generation alone, or None when the reply was too short to time.
    The prompt is read once before the two timed calls, so that both find it in the
    backend's prompt cache (llama.cpp's KV cache, a server's prefix cache) alike."""
    messages: list[Message] = [{"role": "user", "content": SPEED_PROMPT}]
    llm.chat(messages, max_tokens=1)
    short = llm.chat(messages, max_tokens=1)
    long = llm.chat(messages, max_tokens=SPEED_TOKENS)
    tokens = long.completion_tokens - short.completion_tokens
    seconds = long.seconds - short.seconds
    return round(tokens / seconds, 2) if tokens > 0 and seconds > 0 else None


def _llm_check(settings: Settings, packaged: str | None = None) -> dict[str, Any]:
    started = time.perf_counter()
    llm = make_llm(settings, packaged=packaged)  # no call cache: the doctor measures the model
    load_s = time.perf_counter() - started
    can_logprobs = LOGPROBS in llm.capabilities
    reply = llm.chat(
        [{"role": "user", "content": DOCTOR_QUESTION}],
        max_tokens=16,
        logprobs=can_logprobs,
        top_logprobs=3 if can_logprobs else 0,
    )
    answer = reply.text.strip()
    result: dict[str, Any] = {
        "ok": bool(answer),
        "backend": llm.backend,
        "model": llm.model,
        "answer": answer,
        "answer_mentions_paris": "paris" in answer.lower(),
        "load_seconds": round(load_s, 3),
        "call_seconds": round(reply.seconds, 3),
        "tokens_per_s": generation_speed(llm),
        "logprobs": bool(reply.tokens),
        "capabilities": sorted(llm.capabilities),
    }
    if llm.backend == "llama.cpp":
        from ragshield.llm.llama_cpp_backend import instruction_sets

        result["instruction_sets"] = instruction_sets()
    if not answer:
        result["error"] = "the model returned an empty answer"
    return result


def _embeddings_check(settings: Settings) -> dict[str, Any]:
    started = time.perf_counter()
    model = load_embedder(settings)
    vectors = model.encode(
        ["Paris is the capital of France.", "The capital of France is Paris.",
         "Bananas are yellow."],
        normalize_embeddings=True,
    )
    close, far = float(vectors[0] @ vectors[1]), float(vectors[0] @ vectors[2])
    ok = close > far
    result: dict[str, Any] = {
        "ok": ok,
        "model": settings.embedding_model or "all-MiniLM-L6-v2 (packaged)",
        "dimension": int(vectors.shape[1]),
        "similar_pair": round(close, 4),
        "unrelated_pair": round(far, 4),
        "seconds": round(time.perf_counter() - started, 3),
    }
    if not ok:
        result["error"] = "paraphrases are not closer than unrelated sentences"
    return result


def _database_check(settings: Settings) -> dict[str, Any]:
    store = open_store(settings.database_url)
    try:
        return {"ok": True, "url": store.url, "revision": store.revision()}
    finally:
        store.close()


def _guarded(check: Callable[[], dict[str, Any]], **context: Any) -> dict[str, Any]:
    try:
        return check()
    except Exception as exc:  # noqa: BLE001 - the doctor reports every failure, it never crashes
        return {"ok": False, **context, "error": f"{type(exc).__name__}: {exc}"}


DOCTOR_PARTS = ("llm", "small_llm", "larger_llm", "embeddings", "database")


def doctor_parts(names: str | None) -> tuple[str, ...]:
    """The parts named in a comma-separated list (None: every part), in report order."""
    if names is None:
        return DOCTOR_PARTS
    chosen = {name.strip() for name in names.split(",") if name.strip()}
    unknown = sorted(chosen - set(DOCTOR_PARTS))
    if unknown or not chosen:
        raise OptionError(f"unknown doctor part(s) {unknown}; "
                          f"choose from {', '.join(DOCTOR_PARTS)}")
    return tuple(part for part in DOCTOR_PARTS if part in chosen)


def run_doctor(settings: Settings, parts: tuple[str, ...] = DOCTOR_PARTS) -> dict[str, Any]:
    """Each chosen part's check, in report order. Loading the larger model alone takes
    seconds, so a check of one part need not wait for the others."""
    checks: dict[str, tuple[Callable[[], dict[str, Any]], dict[str, Any]]] = {
        "llm": (lambda: _llm_check(settings), {"backend": settings.backend}),
        "small_llm": (lambda: _llm_check(settings, SMALLEST_MODEL), {}),
        "larger_llm": (lambda: _llm_check(settings, LARGER_MODEL), {}),
        "embeddings": (lambda: _embeddings_check(settings), {}),
        "database": (lambda: _database_check(settings), {"url": masked(settings.database_url)}),
    }
    return {part: _guarded(checks[part][0], **checks[part][1]) for part in parts}
