"""The embedded backend: a GGUF model run in-process by llama.cpp (llama-cpp-python).

We drive the token loop ourselves rather than calling create_chat_completion: it gives the
exact generated token ids, so log-probs come from the logit rows llama.cpp already keeps
(`logits_all=True`) at almost no cost, where asking the chat API for log-probs nearly
doubles a call's time. The prompt prefix shared with the previous call stays in the KV
cache and is not read again; `cached_prompt_tokens` reports how much was reused.
"""

from __future__ import annotations

import atexit
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence, Unpack, cast

from ragshield.llm.base import (CHAT, LOGPROBS, SCORE, BackendBase, ChatOptions, ChatParams,
                                LLMError)
from ragshield.llm.logprobs import token_logprob
from ragshield.llm.streaming import text_sink
from ragshield.types import Completion, ContinuationScore, Message, TokenLogprob

if TYPE_CHECKING:
    from llama_cpp import Llama

# One llama.cpp instance per (file, context, threads) in this process, each with its lock:
# a model is large and its KV cache is state that two calls must not share at once.
_INSTANCES: dict[tuple[str, int, int], tuple[Llama, threading.Lock]] = {}
_INSTANCES_LOCK = threading.Lock()


@atexit.register
def _close_instances() -> None:
    """Free the models before interpreter shutdown: llama-cpp-python's own finaliser runs
    too late then and prints a TypeError traceback at every exit."""
    for model, _lock in _INSTANCES.values():
        model.close()


# With logits_all, llama.cpp's output buffer holds n_batch rows of vocabulary-sized logits
# (152k for Qwen: 0.6 MB a row). 128 instead of the default 512 keeps the process with the
# model and the embeddings under 2 GB; prompt reading was as fast in a side test (about
# 105 tok/s either way on 960 tokens).
N_BATCH = 128


def instruction_sets() -> list[str]:
    """The CPU instruction sets the installed llama.cpp build uses (AVX2, AVX512, ...), as
    its system info reports them: `make setup` builds for the best set the CPU runs."""
    import llama_cpp

    info = llama_cpp.llama_print_system_info().decode("utf-8", "replace")
    return [name.strip() for part in info.split("|") if "=" in part
            for name, _, value in [part.rpartition(":")[2].partition("=")]
            if value.strip() == "1"]


def _load(path: Path, n_ctx: int, n_threads: int) -> tuple[Llama, threading.Lock]:
    key = (str(path), n_ctx, n_threads)
    with _INSTANCES_LOCK:
        if key not in _INSTANCES:
            from llama_cpp import Llama

            if not path.is_file():
                raise LLMError(f"GGUF model file not found: {path}")
            try:
                model = Llama(
                    model_path=str(path),
                    n_ctx=n_ctx,
                    n_threads=n_threads,
                    logits_all=True,
                    n_batch=N_BATCH,
                    verbose=False,
                )
            except ValueError as exc:  # llama-cpp-python's error for unreadable files
                raise LLMError(f"llama.cpp could not load {path}: {exc}") from exc
            _INSTANCES[key] = (model, threading.Lock())
        return _INSTANCES[key]


class LlamaCppLLM(BackendBase):
    backend = "llama.cpp"
    capabilities = frozenset({CHAT, LOGPROBS, SCORE})

    def __init__(self, model_path: Path, *, n_ctx: int = 4096, n_threads: int = 2) -> None:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self.path = Path(model_path)
        self.model = self.path.name
        self._llama, self._lock = _load(self.path, n_ctx, n_threads)
        llama = self._llama
        template = llama.metadata.get("tokenizer.chat_template")
        if not template:
            raise LLMError(f"{self.path.name} carries no chat template in its GGUF metadata")
        vocab = llama._model
        eos_id, bos_id = llama.token_eos(), llama.token_bos()
        self._formatter = Jinja2ChatFormatter(
            template=template,
            eos_token=vocab.token_get_text(eos_id) if eos_id != -1 else "",
            bos_token=vocab.token_get_text(bos_id) if bos_id != -1 else "",
        )

    # -- helpers -------------------------------------------------------------------------
    def _prompt_tokens(self, messages: Sequence[Message]) -> list[int]:
        prompt = self._formatter(messages=cast(Any, list(messages))).prompt
        return self._llama.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)

    def _token_text(self, token_id: int) -> str:
        return self._llama.detokenize([token_id]).decode("utf-8", errors="replace")

    def _is_end(self, token_id: int) -> bool:
        import llama_cpp

        return bool(llama_cpp.llama_vocab_is_eog(self._llama._model.vocab, token_id))

    def _cached_prefix(self, tokens: list[int]) -> int:
        llama = self._llama
        shared = 0
        for a, b in zip(llama.input_ids[: llama.n_tokens], tokens):
            if a != b:
                break
            shared += 1
        return shared

    def _check_window(self, n_prompt: int, n_new: int) -> None:
        n_ctx = self._llama.n_ctx()
        if n_prompt + n_new > n_ctx:
            raise LLMError(
                f"{self.name}: prompt of {n_prompt} tokens plus {n_new} new tokens exceeds "
                f"the context window of {n_ctx} tokens"
            )

    # -- protocol ------------------------------------------------------------------------
    def chat(self, messages: Sequence[Message], **options: Unpack[ChatOptions]) -> Completion:
        params = ChatParams.of(options)
        max_tokens = params.max_tokens
        started = time.perf_counter()
        prompt = self._prompt_tokens(messages)
        self._check_window(len(prompt), max_tokens)
        stops = params.stops
        sink = text_sink()
        with self._lock:
            llama = self._llama
            cached = self._cached_prefix(prompt)
            llama.set_seed(params.seed)
            generated: list[int] = []
            finish = "length"
            text = ""
            for token in llama.generate(prompt, temp=params.temperature, repeat_penalty=1.0):
                if self._is_end(token):
                    finish = "stop"
                    break
                generated.append(token)
                if stops or sink:
                    text = llama.detokenize(generated).decode("utf-8", errors="ignore")
                    if any(s in text for s in stops):
                        finish = "stop"
                        break
                    if sink:
                        sink(text)
                if len(generated) >= max_tokens:
                    break
            text = llama.detokenize(generated).decode("utf-8", errors="ignore")
            tokens = None
            if params.logprobs:
                # Row p-1 of the logits predicts the token at position p.
                tokens = [
                    token_logprob(
                        llama.scores[len(prompt) + i - 1], tok, params.top_logprobs,
                        self._token_text,
                    )
                    for i, tok in enumerate(generated)
                ]
        for s in stops:
            if s in text:
                text = text[: text.index(s)]
        return Completion(
            text=text,
            backend=self.backend,
            model=self.model,
            prompt_tokens=len(prompt),
            completion_tokens=len(generated),
            seconds=time.perf_counter() - started,
            finish_reason=finish,
            cached_prompt_tokens=min(cached, len(prompt)),
            tokens=tokens,
        )

    def score(self, prompt_messages: Sequence[Message], continuation: str) -> ContinuationScore:
        started = time.perf_counter()
        prompt = self._prompt_tokens(prompt_messages)
        # The continuation is tokenized on its own, as the model would have generated it.
        cont = self._llama.tokenize(continuation.encode("utf-8"), add_bos=False, special=False)
        if not cont:
            raise LLMError(f"{self.name}: cannot score an empty continuation")
        everything = prompt + cont
        self._check_window(len(everything), 0)
        with self._lock:
            llama = self._llama
            keep = min(self._cached_prefix(everything), len(everything) - 1)
            llama.n_tokens = keep
            llama.eval(everything[keep:])
            tokens: list[TokenLogprob] = [
                token_logprob(llama.scores[len(prompt) + i - 1], tok, 0, self._token_text)
                for i, tok in enumerate(cont)
            ]
        return ContinuationScore(
            tokens=tokens,
            backend=self.backend,
            model=self.model,
            seconds=time.perf_counter() - started,
        )
