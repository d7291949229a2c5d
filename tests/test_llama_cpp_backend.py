"""The embedded llama.cpp backend with the real packaged models."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import pytest

from ragshield.llm.base import LLM, LLMError
from ragshield.llm.llama_cpp_backend import LlamaCppLLM
from ragshield.llm.streaming import streaming_to

PASSAGES = (
    "Passage-0: The Eiffel Tower is in Paris and was completed in 1889.\n"
    "Passage-1: The Colosseum is an amphitheatre in Rome."
)
SYSTEM = {"role": "system", "content": "Answer from the passages in as few words as possible."}


def ask(question: str) -> list[dict]:
    return [SYSTEM, {"role": "user", "content": f"{PASSAGES}\n\nQuestion: {question}"}]


def test_follows_the_protocol_and_answers(embedded_llm):
    assert isinstance(embedded_llm, LLM)
    reply = embedded_llm.chat(ask("In which city is the Eiffel Tower?"), max_tokens=16)
    assert "paris" in reply.text.lower()
    assert reply.prompt_tokens > 20 and 0 < reply.completion_tokens <= 16
    assert reply.seconds > 0 and reply.finish_reason in {"stop", "length"}
    assert reply.backend == "llama.cpp" and reply.model.endswith(".gguf")


def test_greedy_is_deterministic_and_max_tokens_is_respected(embedded_llm):
    messages = ask("Describe the Colosseum.")
    first = embedded_llm.chat(messages, max_tokens=5)
    second = embedded_llm.chat(messages, max_tokens=5)
    assert first.text == second.text
    assert first.completion_tokens == 5 and first.finish_reason == "length"


def test_sampling_depends_on_the_seed(embedded_llm):
    messages = [{"role": "user", "content": "Write one made-up word."}]
    texts = {embedded_llm.chat(messages, max_tokens=8, temperature=1.5, seed=s).text
             for s in range(4)}
    again = embedded_llm.chat(messages, max_tokens=8, temperature=1.5, seed=0).text
    assert len(texts) > 1
    assert again == embedded_llm.chat(messages, max_tokens=8, temperature=1.5, seed=0).text


def test_logprobs_match_llama_cpp_pythons_own_computation(embedded_llm):
    messages = ask("When was the Eiffel Tower completed?")
    # Both computations read the prompt from scratch, in the same batches, so the logits
    # are computed identically (batch shape changes the last digits of quantised matmuls).
    embedded_llm._llama.reset()
    ours = embedded_llm.chat(messages, max_tokens=8, logprobs=True, top_logprobs=3)
    assert ours.tokens is not None and len(ours.tokens) == ours.completion_tokens
    assert "".join(t.token for t in ours.tokens) == ours.text
    for token in ours.tokens:
        assert token.logprob <= 0
        values = list(token.top.values())
        assert values == sorted(values, reverse=True) and len(values) <= 3
        # Greedy decoding picks the most likely token.
        assert math.isclose(token.logprob, values[0], abs_tol=1e-6)
    with embedded_llm._lock:  # the library's own chat API, for a cross-check
        embedded_llm._llama.reset()
        theirs = embedded_llm._llama.create_chat_completion(
            messages=messages, max_tokens=8, temperature=0.0, logprobs=True, top_logprobs=3
        )
    their_content = theirs["choices"][0]["logprobs"]["content"]
    assert [c["token"] for c in their_content] == [t.token for t in ours.tokens]
    for mine, their in zip(ours.tokens, their_content):
        assert mine.logprob == pytest.approx(their["logprob"], abs=1e-4)


def test_score_agrees_with_generation_and_prefers_the_right_answer(embedded_llm):
    messages = ask("In which city is the Eiffel Tower?")
    reply = embedded_llm.chat(messages, max_tokens=8, logprobs=True)
    scored = embedded_llm.score(messages, reply.text)
    assert [t.token for t in scored.tokens] == [t.token for t in reply.tokens]
    for a, b in zip(scored.tokens, reply.tokens):
        assert a.logprob == pytest.approx(b.logprob, abs=1e-3)
    right = embedded_llm.score(messages, "Paris")
    wrong = embedded_llm.score(messages, "Tokyo")
    assert right.mean_logprob > wrong.mean_logprob
    assert right.total_logprob == pytest.approx(sum(t.logprob for t in right.tokens))
    with pytest.raises(LLMError, match="empty"):
        embedded_llm.score(messages, "")


def test_shared_prefix_is_reused_and_gives_the_same_answer(embedded_llm):
    base = ask("In which city is the Eiffel Tower?")
    embedded_llm.chat(base, max_tokens=4)
    follow_up = base + [
        {"role": "assistant", "content": "Paris"},
        {"role": "user", "content": "Are you sure? Answer yes or no."},
    ]
    warm = embedded_llm.chat(follow_up, max_tokens=4)
    assert warm.cached_prompt_tokens > 20
    embedded_llm.chat([{"role": "user", "content": "Unrelated."}], max_tokens=2)
    cold = embedded_llm.chat(follow_up, max_tokens=4)
    assert cold.cached_prompt_tokens < warm.cached_prompt_tokens
    assert cold.text == warm.text


def test_stop_strings_cut_the_answer(embedded_llm):
    messages = [{"role": "user", "content": "Count from 1 to 10, separated by commas."}]
    full = embedded_llm.chat(messages, max_tokens=30)
    assert "4" in full.text
    cut = embedded_llm.chat(messages, max_tokens=30, stop=["4"])
    assert "4" not in cut.text and cut.finish_reason == "stop"
    assert full.text.startswith(cut.text)


def test_a_text_sink_sees_the_reply_grow_token_by_token(embedded_llm):
    messages = [{"role": "user", "content": "Count from 1 to 10, separated by commas."}]
    seen: list[str] = []
    with streaming_to(seen.append):
        reply = embedded_llm.chat(messages, max_tokens=20)
    quiet = embedded_llm.chat(messages, max_tokens=20)  # outside the block: no sink
    assert len(seen) == reply.completion_tokens == quiet.completion_tokens
    assert all(b.startswith(a) for a, b in zip(seen, seen[1:]))
    assert seen[-1] == reply.text == quiet.text


def test_prompt_over_the_window_is_a_clear_error(embedded_llm):
    huge = [{"role": "user", "content": "word " * 5000}]
    with pytest.raises(LLMError, match="context window"):
        embedded_llm.chat(huge, max_tokens=4)


def test_concurrent_calls_are_serialised_and_correct(embedded_llm):
    questions = ["In which city is the Eiffel Tower?", "Where is the Colosseum?"] * 3
    expected = {q: embedded_llm.chat(ask(q), max_tokens=8).text for q in set(questions)}
    with ThreadPoolExecutor(max_workers=4) as pool:
        texts = list(pool.map(lambda q: embedded_llm.chat(ask(q), max_tokens=8).text, questions))
    assert texts == [expected[q] for q in questions]


def test_missing_model_file_is_a_clear_error(tmp_path):
    with pytest.raises(LLMError, match="not found"):
        LlamaCppLLM(tmp_path / "absent.gguf")


def test_small_model_loads_and_answers(small_model_path):
    small = LlamaCppLLM(small_model_path)
    reply = small.chat([{"role": "user", "content": "What is the capital of France?"}],
                       max_tokens=12)
    assert reply.text.strip() and reply.completion_tokens > 0
    assert small.model != "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
