"""TransformersLLM against a tiny Llama built in the test, and (slow) a packaged GGUF: the
smallest one, SmolLM2-135M (dequantizing the 0.5B model took 66 s of the suite for the same
check)."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ragshield.llm.base import CHAT, LOGPROBS, SCORE, LLMError

if TYPE_CHECKING:
    import torch
    from transformers import LlamaForCausalLM, PreTrainedTokenizerFast

    from ragshield.llm.transformers_backend import TransformersLLM

# torch and transformers take seconds to import: they are imported where they are used, so
# that collecting this file (in every test worker) does not import them.

CORPUS = [
    "user : what is the capital of france",
    "assistant : the capital of france is paris",
    "system : answer in one word",
    "the cat sat on the mat and the dog ran in the park",
    "a red apple and a green pear are on the table",
    "rain falls on the river while birds sing near the old bridge",
]
TEMPLATE = (
    "{% for m in messages %}<bos> {{ m['role'] }} : {{ m['content'] }} <eos> {% endfor %}"
    "{% if add_generation_prompt %}<bos> assistant :{% endif %}"
)
MESSAGES = [
    {"role": "system", "content": "answer in one word"},
    {"role": "user", "content": "what is the capital of france"},
]


def _backend(path: str, **options) -> TransformersLLM:
    from ragshield.llm.transformers_backend import TransformersLLM

    return TransformersLLM(path, **options)


def _tokenizer(chat_template: str | None) -> PreTrainedTokenizerFast:
    """A word-level tokenizer: one token per word, so texts and ids map back and forth."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.WordLevelTrainer(special_tokens=["<unk>", "<pad>", "<bos>", "<eos>"])
    tok.train_from_iterator(CORPUS, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="<unk>",
        pad_token="<pad>",
        bos_token="<bos>",
        eos_token="<eos>",
    )
    fast.chat_template = chat_template
    return fast


def _save_tiny(path: Path, chat_template: str | None = TEMPLATE) -> Path:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = _tokenizer(chat_template)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        initializer_range=0.5,  # large weights: a varied, non-repeating greedy output
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _save_tiny(tmp_path_factory.mktemp("models") / "tiny-llama")


@pytest.fixture(scope="module")
def llm(tiny_dir: Path) -> TransformersLLM:
    return _backend(str(tiny_dir), device="cpu")


@pytest.fixture(scope="module")
def reference(tiny_dir: Path) -> tuple[PreTrainedTokenizerFast, LlamaForCausalLM]:
    """The same files loaded straight through transformers, to check the backend against."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_dir, dtype=torch.float32).eval()
    return tokenizer, model


def _prompt_ids(tokenizer: PreTrainedTokenizerFast, messages: list[dict[str, str]]) -> list[int]:
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def _log_softmax_rows(model: LlamaForCausalLM, ids: list[int]) -> torch.Tensor:
    import torch

    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0]
    return torch.log_softmax(logits.double(), dim=-1)


def test_identity(llm: TransformersLLM, tiny_dir: Path) -> None:
    assert llm.backend == "transformers"
    assert llm.model == "tiny-llama" == tiny_dir.name
    assert llm.name == "transformers:tiny-llama"
    assert llm.capabilities == frozenset({CHAT, LOGPROBS, SCORE})
    assert llm.device == "cpu"


def test_greedy_is_deterministic_and_respects_max_tokens(llm: TransformersLLM) -> None:
    first = llm.chat(MESSAGES, max_tokens=7, seed=1)
    second = llm.chat(MESSAGES, max_tokens=7, seed=2)
    assert first.text == second.text
    assert first.text.strip()
    assert first.completion_tokens == 7
    assert len(first.text.split()) == 7
    assert first.finish_reason == "length"
    assert first.tokens is None
    assert first.seconds > 0
    assert first.backend == "transformers" and first.model == "tiny-llama"
    assert llm.chat(MESSAGES, max_tokens=3).completion_tokens == 3


def test_sampling_follows_the_seed(llm: TransformersLLM) -> None:
    runs = {seed: llm.chat(MESSAGES, max_tokens=6, temperature=1.0, seed=seed) for seed in range(4)}
    again = llm.chat(MESSAGES, max_tokens=6, temperature=1.0, seed=2)
    assert again.text == runs[2].text
    assert len({c.text for c in runs.values()}) > 1


def test_prompt_tokens_follow_the_chat_template(llm: TransformersLLM, reference) -> None:
    tokenizer, _ = reference
    completion = llm.chat(MESSAGES, max_tokens=1)
    assert completion.prompt_tokens == len(_prompt_ids(tokenizer, MESSAGES))


def test_logprobs_come_from_the_raw_logits(llm: TransformersLLM, reference) -> None:
    tokenizer, model = reference
    completion = llm.chat(MESSAGES, max_tokens=6, logprobs=True, top_logprobs=5)
    assert completion.tokens is not None and len(completion.tokens) == 6
    assert " ".join(t.token for t in completion.tokens) == completion.text
    prompt = _prompt_ids(tokenizer, MESSAGES)
    generated = tokenizer.convert_tokens_to_ids([t.token for t in completion.tokens])
    rows = _log_softmax_rows(model, prompt + generated)
    for i, (tok, tok_id) in enumerate(zip(completion.tokens, generated)):
        expected = float(rows[len(prompt) + i - 1, tok_id])
        assert tok.logprob <= 0
        assert tok.logprob == pytest.approx(expected, abs=1e-4)
        top = list(tok.top.items())
        assert len(top) == 5
        assert [v for _, v in top] == sorted((v for _, v in top), reverse=True)
        assert top[0] == (tok.token, pytest.approx(tok.logprob))  # greedy picks the top token


def test_sampled_logprobs_are_not_tempered(llm: TransformersLLM, reference) -> None:
    """At temperature 2 the log-probs still come from the model's own distribution."""
    tokenizer, model = reference
    completion = llm.chat(MESSAGES, max_tokens=3, temperature=2.0, seed=5, logprobs=True)
    prompt = _prompt_ids(tokenizer, MESSAGES)
    generated = tokenizer.convert_tokens_to_ids([t.token for t in completion.tokens])
    rows = _log_softmax_rows(model, prompt + generated)
    for i, (tok, tok_id) in enumerate(zip(completion.tokens, generated)):
        assert tok.top == {}
        assert tok.logprob == pytest.approx(float(rows[len(prompt) + i - 1, tok_id]), abs=1e-4)


def test_score_matches_a_manual_forward_pass(llm: TransformersLLM, reference) -> None:
    tokenizer, model = reference
    continuation = "the capital of france is paris"
    scored = llm.score(MESSAGES, continuation)
    prompt = _prompt_ids(tokenizer, MESSAGES)
    cont = tokenizer(continuation, add_special_tokens=False)["input_ids"]
    rows = _log_softmax_rows(model, prompt + cont)
    expected = [float(rows[len(prompt) + i - 1, t]) for i, t in enumerate(cont)]
    assert [t.token for t in scored.tokens] == continuation.split()
    assert [t.logprob for t in scored.tokens] == pytest.approx(expected, abs=1e-4)
    assert scored.total_logprob == pytest.approx(sum(expected), abs=1e-4)
    assert scored.mean_logprob == pytest.approx(scored.total_logprob / len(cont))
    assert all(t.logprob <= 0 for t in scored.tokens)
    assert scored.backend == "transformers" and scored.model == "tiny-llama"
    assert scored.seconds > 0


def test_score_without_logits_to_keep(tiny_dir: Path, llm: TransformersLLM) -> None:
    """Models whose forward() lacks logits_to_keep get the full logits; same scores."""
    full = _backend(str(tiny_dir), device="cpu")
    full._keeps_logits = False
    continuation = "a green pear"
    assert [t.logprob for t in full.score(MESSAGES, continuation).tokens] == pytest.approx(
        [t.logprob for t in llm.score(MESSAGES, continuation).tokens], abs=1e-5
    )


def test_score_agrees_with_chat_logprobs(llm: TransformersLLM) -> None:
    completion = llm.chat(MESSAGES, max_tokens=5, logprobs=True)
    scored = llm.score(MESSAGES, completion.text)
    assert [t.token for t in scored.tokens] == [t.token for t in completion.tokens]
    assert [t.logprob for t in scored.tokens] == pytest.approx(
        [t.logprob for t in completion.tokens], abs=1e-4
    )


def test_stop_strings_truncate(llm: TransformersLLM) -> None:
    full = llm.chat(MESSAGES, max_tokens=8)
    stop = full.text.split()[3]
    expected = full.text[: full.text.index(stop)]
    stopped = llm.chat(MESSAGES, max_tokens=8, stop=[stop, "never-appears"])
    assert stopped.text == expected
    assert stop not in stopped.text
    assert stopped.finish_reason == "stop"
    assert stopped.completion_tokens < full.completion_tokens


def test_end_of_sequence_stops(tiny_dir: Path, tmp_path: Path, llm: TransformersLLM) -> None:
    """A copy whose generation config counts the greedy first token as an end token."""
    from transformers import AutoTokenizer, GenerationConfig

    first = llm.chat(MESSAGES, max_tokens=2, logprobs=True).tokens
    copy = shutil.copytree(tiny_dir, tmp_path / "tiny-eos")
    tokenizer = AutoTokenizer.from_pretrained(copy)
    end_ids = [tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids(first[0].token)]
    config = GenerationConfig(eos_token_id=end_ids, pad_token_id=tokenizer.pad_token_id)
    config.save_pretrained(copy)
    llm_eos = _backend(str(copy), device="cpu")
    completion = llm_eos.chat(MESSAGES, max_tokens=5, logprobs=True)
    assert completion.finish_reason == "stop"
    assert completion.completion_tokens == 0
    assert completion.text == ""
    assert completion.tokens == []


def test_fallback_rendering_without_a_chat_template(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    path = _save_tiny(tmp_path / "no-template", chat_template=None)
    llm = _backend(str(path), device="cpu")
    tokenizer = AutoTokenizer.from_pretrained(path)
    rendered = "system: answer in one word\nuser: what is the capital of france\nassistant:"
    completion = llm.chat(MESSAGES, max_tokens=2)
    assert completion.prompt_tokens == len(tokenizer(rendered)["input_ids"])
    assert completion.completion_tokens == 2


def test_concurrent_calls_match_sequential_ones(llm: TransformersLLM) -> None:
    expected = llm.chat(MESSAGES, max_tokens=5, temperature=1.0, seed=3).text
    results: list[str] = []

    def call() -> None:
        results.append(llm.chat(MESSAGES, max_tokens=5, temperature=1.0, seed=3).text)

    threads = [threading.Thread(target=call) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [expected] * 4


def test_bad_calls(llm: TransformersLLM) -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        llm.chat(MESSAGES, max_tokens=0)
    with pytest.raises(LLMError, match="empty continuation"):
        llm.score(MESSAGES, "")
    with pytest.raises(LLMError, match="exceeds"):
        llm.chat(MESSAGES, max_tokens=1000)


def test_missing_path_is_an_llm_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(LLMError, match="no-such-model"):
        _backend(str(missing), device="cpu")


def test_bad_config_is_an_llm_error(tiny_dir: Path, tmp_path: Path) -> None:
    broken = shutil.copytree(tiny_dir, tmp_path / "broken-model")
    (broken / "config.json").write_text('{"model_type": "no-such-architecture"}')
    with pytest.raises(LLMError, match="broken-model"):
        _backend(str(broken), device="cpu")


# -- a packaged GGUF, dequantized by transformers --------------------------------------------


def test_packaged_gguf_through_transformers(small_model_path: Path) -> None:
    pytest.importorskip("gguf", reason="the gguf package is needed to read GGUF files")
    pytest.importorskip("accelerate", reason="transformers needs accelerate to load GGUF files")
    path = small_model_path
    started = time.perf_counter()
    llm = _backend(str(path.parent), gguf_file=path.name)
    loaded = time.perf_counter()
    question = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]
    answer = llm.chat(question, max_tokens=8, logprobs=True, top_logprobs=3)
    answered = time.perf_counter()
    assert llm.model == f"models/{path.name}"
    assert "Paris" in answer.text
    assert answer.finish_reason == "stop"
    assert all(t.logprob <= 0 for t in answer.tokens)
    good = llm.score(question, "Paris")
    absurd = llm.score(question, "Banana")
    scored = time.perf_counter()
    assert good.total_logprob > absurd.total_logprob
    print(
        f"\ngguf via transformers: load {loaded - started:.1f}s, chat {answered - loaded:.1f}s "
        f"({answer.completion_tokens} tokens), two scores {scored - answered:.2f}s; "
        f"answer {answer.text!r}, score Paris {good.total_logprob:.3f} vs Banana "
        f"{absurd.total_logprob:.3f}"
    )
