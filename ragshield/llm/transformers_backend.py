"""Any Hugging Face causal LM run in-process by transformers (GPU when present).

Log-probs come from the model's raw logits (`output_logits=True`), before temperature or any
other logits processor, so they mean the same as the llama.cpp backend's: the model's own
distribution over the next token. Sampling is plain temperature sampling over the whole
vocabulary with no repetition penalty, whatever the checkpoint's generation_config suggests,
so that the same call means the same thing on every backend.
"""

from __future__ import annotations

import inspect
import threading
import time
from pathlib import Path
from typing import Any, Sequence, Unpack, cast

import numpy as np
import torch
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    StoppingCriteria,
    StoppingCriteriaList,
)

from ragshield.llm.base import (CHAT, LOGPROBS, SCORE, BackendBase, ChatOptions, ChatParams,
                                LLMError)
from ragshield.llm.logprobs import token_logprob
from ragshield.types import Completion, ContinuationScore, Message, TokenLogprob


def default_device() -> str:
    if torch.cuda.is_available():
        return "cuda"
    if torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def _looks_local(name: str) -> bool:
    """True for names that can only be a local path: a hub id never starts with . ~ or /."""
    return name.startswith((".", "~", "/")) or Path(name).is_absolute() or Path(name).exists()


class _StopOnStrings(StoppingCriteria):
    """Ends generation once the decoded new tokens contain any of the stop strings."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, prompt_len: int, stops: list[str]):
        self._tokenizer = tokenizer
        self._prompt_len = prompt_len
        self._stops = stops

    def __call__(
        self, input_ids: torch.LongTensor, scores: torch.FloatTensor, **kwargs: object
    ) -> torch.BoolTensor:
        text = self._tokenizer.decode(input_ids[0, self._prompt_len :], skip_special_tokens=True)
        done = any(s in text for s in self._stops)
        return cast(torch.BoolTensor, torch.full((input_ids.shape[0],), done, dtype=torch.bool,
                                                 device=input_ids.device))


class TransformersLLM(BackendBase):
    backend = "transformers"
    capabilities = frozenset({CHAT, LOGPROBS, SCORE})

    def __init__(
        self,
        model_name_or_path: str,
        *,
        gguf_file: str | None = None,
        device: str | None = None,
    ) -> None:
        source = str(model_name_or_path)
        local = _looks_local(source)
        # Checked here: transformers would take a missing local path for a hub id and go to
        # the network.
        if local and not Path(source).expanduser().exists():
            raise LLMError(f"transformers model path not found: {source}")
        if local:
            source = str(Path(source).expanduser())
        base = Path(source).name if local else source
        self.model = f"{base}/{gguf_file}" if gguf_file else base
        self.device = device or default_device()
        # Full precision on CPU, where half precision is slow and inexact; on an accelerator
        # the checkpoint's own dtype.
        dtype: torch.dtype | str = torch.float32 if self.device == "cpu" else "auto"
        try:
            self._tokenizer: PreTrainedTokenizerBase = AutoTokenizer.from_pretrained(
                source, gguf_file=gguf_file
            )
            self._model: PreTrainedModel = cast(Any, AutoModelForCausalLM.from_pretrained(
                source, gguf_file=gguf_file, dtype=dtype
            )).to(self.device)
        except (OSError, ValueError, KeyError, ImportError) as exc:
            where = f"{source} (gguf file {gguf_file})" if gguf_file else source
            raise LLMError(f"transformers could not load {where}: {exc}") from exc
        self._model.eval()
        self._lock = threading.Lock()
        # A chat model may end its turn with tokens besides the tokenizer's EOS (Qwen on the
        # hub: <|im_end|> and <|endoftext|>); its generation config lists them.
        configured = self._model.generation_config.eos_token_id
        ends = [configured] if isinstance(configured, int) else list(configured or [])
        if self._tokenizer.eos_token_id is not None:
            ends.append(self._tokenizer.eos_token_id)
        self._end_ids: list[int] = list(dict.fromkeys(ends))
        pad = self._tokenizer.pad_token_id
        self._pad_id: int | None = pad if pad is not None else next(iter(self._end_ids), None)
        text_config = self._model.config.get_text_config()
        self._max_positions: int | None = getattr(text_config, "max_position_embeddings", None)
        # Scoring needs only the rows over the continuation; over a long prompt the full
        # logits (positions x vocabulary) would cost hundreds of MB.
        self._keeps_logits = "logits_to_keep" in inspect.signature(self._model.forward).parameters

    # -- helpers -------------------------------------------------------------------------
    def _prompt_ids(self, messages: Sequence[Message]) -> list[int]:
        tokenizer = self._tokenizer
        if tokenizer.chat_template:
            text = tokenizer.apply_chat_template(
                cast(Any, [dict(m) for m in messages]), tokenize=False,
                add_generation_prompt=True
            )
            # The template writes its own BOS and control tokens.
            return tokenizer(text, add_special_tokens=False)["input_ids"]
        text = "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant:"
        return tokenizer(text, add_special_tokens=True)["input_ids"]

    def _token_text(self, token_id: int) -> str:
        return cast(str, self._tokenizer.decode([token_id], skip_special_tokens=False))

    def _check_window(self, n_prompt: int, n_new: int) -> None:
        if self._max_positions is not None and n_prompt + n_new > self._max_positions:
            raise LLMError(
                f"{self.name}: prompt of {n_prompt} tokens plus {n_new} new tokens exceeds "
                f"the model's {self._max_positions} positions"
            )

    @staticmethod
    def _rows(logits: torch.Tensor) -> np.ndarray:
        return logits.detach().float().cpu().numpy()

    # -- protocol ------------------------------------------------------------------------
    def chat(self, messages: Sequence[Message], **options: Unpack[ChatOptions]) -> Completion:
        params = ChatParams.of(options)
        max_tokens, temperature, logprobs = params.max_tokens, params.temperature, params.logprobs
        started = time.perf_counter()
        prompt = self._prompt_ids(messages)
        self._check_window(len(prompt), max_tokens)
        stops = params.stops
        sampling = temperature > 0
        sampler: dict[str, object] = {"do_sample": sampling}
        if sampling:
            sampler.update(temperature=temperature, top_k=0, top_p=1.0)
        criteria = StoppingCriteriaList(
            [_StopOnStrings(self._tokenizer, len(prompt), stops)] if stops else []
        )
        input_ids = torch.tensor([prompt], device=self.device)
        with self._lock, torch.no_grad():
            if sampling:
                torch.manual_seed(params.seed)
            out = cast(Any, self._model).generate(
                input_ids=input_ids,
                attention_mask=torch.ones_like(input_ids),
                max_new_tokens=max_tokens,
                repetition_penalty=1.0,
                eos_token_id=self._end_ids or None,
                pad_token_id=self._pad_id,
                stopping_criteria=criteria,
                output_logits=logprobs,  # raw rows, kept only when asked for
                return_dict_in_generate=True,
                **sampler,
            )
        generated: list[int] = out.sequences[0, len(prompt) :].tolist()
        finish = "length"
        if generated and generated[-1] in self._end_ids:
            generated.pop()
            finish = "stop"
        text = cast(str, self._tokenizer.decode(generated, skip_special_tokens=True))
        for s in stops:
            if s in text:
                text = text[: text.index(s)]
                finish = "stop"
        tokens = None
        if logprobs:
            top_k = min(params.top_logprobs, len(self._tokenizer))
            # out.logits[i] is the raw row that predicted generated token i.
            tokens = [
                token_logprob(self._rows(out.logits[i][0]), tok, top_k, self._token_text)
                for i, tok in enumerate(generated)
            ]
        return Completion(
            text=text,
            backend=self.backend,
            model=self.model,
            prompt_tokens=len(prompt),
            completion_tokens=len(generated),
            seconds=time.perf_counter() - started,
            finish_reason=finish,
            tokens=tokens,
        )

    def score(self, prompt_messages: Sequence[Message], continuation: str) -> ContinuationScore:
        started = time.perf_counter()
        prompt = self._prompt_ids(prompt_messages)
        # The continuation is tokenized on its own, as the model would have generated it.
        cont: list[int] = self._tokenizer(continuation, add_special_tokens=False)["input_ids"]
        if not cont:
            raise LLMError(f"{self.name}: cannot score an empty continuation")
        everything = prompt + cont
        self._check_window(len(everything), 0)
        input_ids = torch.tensor([everything], device=self.device)
        keep = {"logits_to_keep": len(cont) + 1} if self._keeps_logits else {}
        with self._lock, torch.no_grad():
            logits = self._model(input_ids=input_ids, **keep).logits[0]
        # Row p-1 of the logits predicts the token at position p: the rows that predict the
        # continuation are the last len(cont)+1 but one, with or without logits_to_keep.
        rows = self._rows(logits[-len(cont) - 1 : -1])
        tokens: list[TokenLogprob] = [
            token_logprob(rows[i], tok, 0, self._token_text) for i, tok in enumerate(cont)
        ]
        return ContinuationScore(
            tokens=tokens,
            backend=self.backend,
            model=self.model,
            seconds=time.perf_counter() - started,
        )
