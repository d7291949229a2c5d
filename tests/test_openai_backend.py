"""The OpenAI-compatible backend against a real llama.cpp server, and its retry policy against
a scripted HTTP server on 127.0.0.1 (500s, 429, 400, hangs, no log-probs)."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import replace
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest

from ragshield.answerers.registry import make_answerer
from ragshield.judges.token_prob import TokenProbJudge
from ragshield.llm.base import CHAT, LOGPROBS, CapabilityError, LLMError
from ragshield.llm.openai_backend import OpenAICompatibleLLM
from ragshield.types import Passage, Sample
from tests.conftest import free_port
from tests.run_helpers import llama_server_command

QUESTION = [
    {"role": "user", "content": "Context: Paris is the capital of France. "
     "Question: What is the capital of France? Answer in one word."}
]


@pytest.fixture(scope="module")
def llama_server(qwen_path: Path, run_server,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`python -m llama_cpp.server` with the embedded model on a free local port."""
    port = free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    log = tmp_path_factory.mktemp("llama_server") / "server.log"
    with run_server(llama_server_command(qwen_path, port), f"{base_url}/models", log):
        yield base_url


def test_real_server_chat_with_detected_logprobs(llama_server):
    llm = OpenAICompatibleLLM(llama_server, timeout_s=60)
    assert llm.model == "qwen-embedded", "the served model is found by listing /models"
    assert llm.capabilities == {CHAT, LOGPROBS}
    reply = llm.chat(QUESTION, max_tokens=8, logprobs=True, top_logprobs=3)
    assert "paris" in reply.text.lower()
    assert reply.prompt_tokens > 10 and reply.completion_tokens >= 1 and reply.seconds > 0
    assert reply.tokens and all(t.logprob <= 0 for t in reply.tokens)
    assert all(0 < len(t.top) <= 3 for t in reply.tokens)


def test_real_server_matches_the_embedded_backend(llama_server, embedded_llm):
    remote = OpenAICompatibleLLM(llama_server, timeout_s=60)
    served = remote.chat(QUESTION, max_tokens=8, logprobs=True, top_logprobs=2)
    local = embedded_llm.chat(QUESTION, max_tokens=8, logprobs=True, top_logprobs=2)
    assert served.text.strip() == local.text.strip()
    assert served.tokens[0].logprob == pytest.approx(local.tokens[0].logprob, abs=1e-2)


def test_scoring_is_reported_unavailable(llama_server):
    with pytest.raises(CapabilityError, match="cannot score"):
        OpenAICompatibleLLM(llama_server).score(QUESTION, "Paris")


def test_token_prob_reads_the_log_probs_the_server_returned(llama_server):
    """The server cannot score, but it returned the answer's log-probs: token_prob judges
    from them, where it could not re-score an answer that came without."""
    llm = OpenAICompatibleLLM(llama_server, timeout_s=60)
    sample = Sample(id="paris", question="What is the capital of France?",
                    passages=[Passage("Paris is the capital of France.")])
    answer = make_answerer("vanilla").answer(sample, llm)
    verdict = TokenProbJudge().judge(sample, answer, llm)
    assert verdict.available and verdict.details["source"] == "generation"
    assert 0 < verdict.score <= 1 and verdict.details["tokens"] >= 1 and not verdict.trace
    bare = replace(answer, calls=[])
    unavailable = TokenProbJudge().judge(sample, bare, llm)
    assert unavailable.available is False and "score" in unavailable.rationale


# -- the retry policy, against a scripted server ---------------------------------------------

CHAT_OK = {
    "id": "c1", "object": "chat.completion", "created": 0, "model": "scripted",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Paris"},
                 "finish_reason": "stop", "logprobs": None}],
    "usage": {"prompt_tokens": 12, "completion_tokens": 1, "total_tokens": 13},
}


class ScriptedServer:
    """Answers each chat request with the next scripted (status, body, headers, delay)."""

    def __init__(self, script: list[tuple[int, object, dict, float]]) -> None:
        self.script = list(script)
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                outer.requests.append(json.loads(self.rfile.read(length) or b"{}"))
                status, body, headers, delay = (
                    outer.script.pop(0) if outer.script else (200, CHAT_OK, {}, 0.0)
                )
                time.sleep(delay)
                payload = body if isinstance(body, bytes) else json.dumps(body).encode()
                try:
                    self.send_response(status)
                    for key, value in {"content-type": "application/json", **headers}.items():
                        self.send_header(key, value)
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        # Polled every 20 ms (not 0.5 s): stopping the server waits for the next poll.
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,),
                                       daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> ScriptedServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def scripted_llm(server: ScriptedServer, **kwargs) -> OpenAICompatibleLLM:
    options = {"timeout_s": 5.0, "max_retries": 3, "backoff_s": 0.01, **kwargs}
    return OpenAICompatibleLLM(server.url, "scripted", api_key="sk-test", **options)


ERROR = {"error": {"message": "boom", "type": "server_error"}}


def test_5xx_is_retried_then_succeeds():
    with ScriptedServer([(500, ERROR, {}, 0), (503, ERROR, {}, 0)]) as server:
        reply = scripted_llm(server).chat(QUESTION)
    assert reply.text == "Paris" and len(server.requests) == 3


def test_429_waits_for_retry_after():
    with ScriptedServer([(429, ERROR, {"retry-after": "0.3"}, 0)]) as server:
        started = time.monotonic()
        scripted_llm(server).chat(QUESTION)
        assert time.monotonic() - started >= 0.3
    assert len(server.requests) == 2


def test_4xx_is_never_retried():
    with ScriptedServer([(400, {"error": {"message": "bad request"}}, {}, 0)]) as server:
        with pytest.raises(LLMError, match="refused"):
            scripted_llm(server).chat(QUESTION)
    assert len(server.requests) == 1


def test_persistent_5xx_gives_up_after_bounded_retries():
    with ScriptedServer([(502, ERROR, {}, 0)] * 10) as server:
        with pytest.raises(LLMError, match="after 3 attempts"):
            scripted_llm(server, max_retries=2).chat(QUESTION)
    assert len(server.requests) == 3


def test_a_hanging_server_times_out_instead_of_hanging():
    with ScriptedServer([(200, CHAT_OK, {}, 3.0)] * 3) as server:
        started = time.monotonic()
        with pytest.raises(LLMError, match="after 2 attempts"):
            scripted_llm(server, timeout_s=0.5, max_retries=1).chat(QUESTION)
        assert time.monotonic() - started < 3.0


def test_unreachable_endpoint_fails_fast_with_a_clear_error():
    started = time.monotonic()
    with pytest.raises(LLMError,
                       match=r"127\.0\.0\.1:\d+/v1: listing models failed after 2 attempts"):
        OpenAICompatibleLLM(f"http://127.0.0.1:{free_port()}/v1", max_retries=1, backoff_s=0.01)
    assert time.monotonic() - started < 10


def test_garbage_body_is_an_error_not_a_crash():
    with ScriptedServer([(200, b"{not json", {}, 0)]) as server:
        with pytest.raises(LLMError, match="unreadable"):
            scripted_llm(server, max_retries=0).chat(QUESTION)


def test_server_without_logprobs_is_detected():
    with ScriptedServer([]) as server:
        llm = scripted_llm(server)
        assert llm.capabilities == {CHAT}
        with pytest.raises(CapabilityError):
            llm.chat(QUESTION, logprobs=True)
    assert server.requests[0]["logprobs"] is True, "detected by asking, not assumed"


@pytest.mark.parametrize("body", [
    b"[]", b"null", b'{"choices": {"0": {}}}', b'{"choices": [{"message": null}]}',
    b'{"choices": [{"message": {"role": "assistant", "content": 42}}]}',
], ids=["array", "null", "choices-object", "no-message", "number-content"])
def test_a_reply_of_the_wrong_shape_is_an_error_not_a_crash(body):
    with ScriptedServer([(200, body, {}, 0)]) as server:
        with pytest.raises(LLMError, match="unreadable response"):
            scripted_llm(server, max_retries=0).chat(QUESTION)


def test_unreadable_retry_after_values_fall_back_to_the_backoff():
    script = [(429, ERROR, {"retry-after": value}, 0) for value in ("-1", "nan", "soon")]
    with ScriptedServer(script) as server:
        started = time.monotonic()
        assert scripted_llm(server).chat(QUESTION).text == "Paris"
        assert time.monotonic() - started < 2.0
    assert len(server.requests) == 4


def test_retry_after_as_an_http_date_is_honoured():
    when = formatdate(time.time() + 2, usegmt=True)  # whole seconds: 1 to 2 s from now
    with ScriptedServer([(429, ERROR, {"retry-after": when}, 0)]) as server:
        started = time.monotonic()
        scripted_llm(server).chat(QUESTION)
        assert 0.9 <= time.monotonic() - started < 2.5


def test_the_log_prob_probe_retries_a_passing_server_error():
    token = {"token": "Yes", "logprob": -0.1, "bytes": None,
             "top_logprobs": [{"token": "Yes", "logprob": -0.1, "bytes": None}]}
    with_logprobs = {**CHAT_OK, "choices": [{**CHAT_OK["choices"][0],
                                             "logprobs": {"content": [token]}}]}
    with ScriptedServer([(503, ERROR, {}, 0), (200, with_logprobs, {}, 0)]) as server:
        assert scripted_llm(server).capabilities == {CHAT, LOGPROBS}


def test_the_api_key_is_blanked_out_of_error_messages():
    echo = {"error": {"message": "invalid key: sk-test"}}
    with ScriptedServer([(401, echo, {}, 0)]) as server:
        with pytest.raises(LLMError, match="refused") as caught:
            scripted_llm(server).chat(QUESTION)
    assert "sk-test" not in str(caught.value) and "***" in str(caught.value)
