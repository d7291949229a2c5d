"""A real HTTP server on 127.0.0.1 that speaks the OpenAI API ragshield uses (GET /v1/models,
POST /v1/chat/completions) and misbehaves on cue: a test's `behaviour` picks, for each
request, a Fault (a status, a raw body, headers, a delay, a body dripped byte by byte, a
dropped connection) or None for a healthy reply. Healthy replies are deterministic: "Yes" to
yes/no questions, else a short answer citing Passage-0, with log-probs when asked; a request
with `"stream": true` gets the same reply as server-sent events, one token per chunk.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

MODEL = "fake-model"
ANSWER = "Answer: Paris\nEvidence: ## Passage-0 ##"
# The next-token distribution of every generated token: P(yes) = 0.8 for yes/no questions.
TOP = [("Yes", -0.22), ("No", -1.61)]


@dataclass
class Request:
    """One request the server received."""

    method: str
    path: str
    body: dict[str, Any]
    authorization: str | None
    at: float  # time.monotonic() when it arrived
    answered_at: float | None = None  # when the reply (or the dropped connection) went out

    @property
    def prompt(self) -> str:
        """Every message's text, joined: what a behaviour looks at to pick its victims."""
        messages = self.body.get("messages") or []
        return "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))

    @property
    def is_chat(self) -> bool:
        return self.path.endswith("/chat/completions")


@dataclass(frozen=True)
class Fault:
    """How to answer one request instead of a healthy reply."""

    status: int = 200
    body: bytes | None = None  # None: the healthy reply's body
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # wait before answering (a hanging server)
    drip_s: float = 0.0  # send the body one byte every drip_s seconds (a server that hangs on)
    drop: bool = False  # close the connection without any reply
    gap_s: float = 0.0  # between the chunks of a streamed reply
    token_logprob: float = -0.05  # of each generated token, when log-probs are asked for


Behaviour = Callable[[Request], Fault | None]


def _reply_text(request: Request) -> str:
    messages = request.body.get("messages") or [{}]
    last = str(messages[-1].get("content", "")).lower()
    return "Yes" if "yes or no" in last or request.body.get("max_tokens") == 1 else ANSWER


def healthy_reply(request: Request, token_logprob: float = -0.05) -> dict[str, Any]:
    """The body of a correct reply to `request` (a model list or a chat completion)."""
    if not request.is_chat:
        return {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "test"}]}
    text = _reply_text(request)
    words = text.split(" ")
    tokens = [words[0], *(" " + w for w in words[1:])]
    logprobs = None
    if request.body.get("logprobs"):
        top = TOP[: max(int(request.body.get("top_logprobs") or 1), 1)]
        logprobs = {"content": [
            {"token": token, "logprob": token_logprob, "bytes": None,
             "top_logprobs": [{"token": t, "logprob": lp, "bytes": None} for t, lp in top]}
            for token in tokens
        ]}
    return {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                     "finish_reason": "stop", "logprobs": logprobs}],
        "usage": {"prompt_tokens": len(request.prompt.split()), "completion_tokens": len(tokens),
                  "total_tokens": len(request.prompt.split()) + len(tokens)},
    }


def streamed_reply(request: Request, token_logprob: float = -0.05) -> list[dict[str, Any]]:
    """The chunks of the healthy reply, as a streaming server sends them: the role, a token
    each (with its log-probs when asked), the finish, and the usage when asked."""
    whole = healthy_reply(request, token_logprob)
    choice = whole["choices"][0]
    head = {"id": whole["id"], "object": "chat.completion.chunk", "created": 0, "model": MODEL}
    entries = (choice["logprobs"] or {}).get("content") or []
    words = choice["message"]["content"].split(" ")
    tokens = [words[0], *(" " + w for w in words[1:])]
    chunks = [{**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                    "finish_reason": None}]}]
    for index, token in enumerate(tokens):
        logprobs = {"content": [entries[index]]} if entries else None
        chunks.append({**head, "choices": [{"index": 0, "delta": {"content": token},
                                            "logprobs": logprobs, "finish_reason": None}]})
    chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    if (request.body.get("stream_options") or {}).get("include_usage"):
        chunks.append({**head, "choices": [], "usage": whole["usage"]})
    return chunks


class FakeOpenAIServer:
    """`with FakeOpenAIServer(behaviour) as server:` serves on `server.url` until the block
    ends; `server.requests` lists what arrived, in order."""

    def __init__(self, behaviour: Behaviour | None = None) -> None:
        self.behaviour: Behaviour = behaviour or (lambda request: None)
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        # Polled every 20 ms (not 0.5 s): stopping the server waits for the next poll.
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,),
                                        daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def chat_requests(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.is_chat]

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _receive(self, method: str, path: str, raw: bytes, authorization: str | None) -> Request:
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        request = Request(method, path, body if isinstance(body, dict) else {}, authorization,
                          time.monotonic())
        with self._lock:
            self.requests.append(request)
        return request

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep the test output clean
                pass

            def _serve(self, method: str) -> None:
                length = int(self.headers.get("content-length") or 0)
                request = server._receive(method, self.path, self.rfile.read(length),
                                          self.headers.get("authorization"))
                fault = server.behaviour(request) or Fault()
                time.sleep(fault.delay_s)
                request.answered_at = time.monotonic()
                if fault.drop:
                    self.close_connection = True
                    return
                if fault.body is None and request.body.get("stream") and request.is_chat:
                    self._stream(streamed_reply(request, fault.token_logprob), fault)
                    return
                payload = fault.body if fault.body is not None else json.dumps(
                    healthy_reply(request, fault.token_logprob)).encode()
                try:
                    self.send_response(fault.status)
                    for key, value in {"content-type": "application/json",
                                       **fault.headers}.items():
                        self.send_header(key, value)
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    if fault.drip_s:
                        for index in range(len(payload)):
                            self.wfile.write(payload[index:index + 1])
                            time.sleep(fault.drip_s)
                    else:
                        self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up first (a timeout)

            def _stream(self, chunks: list[dict[str, Any]], fault: Fault) -> None:
                try:
                    self.send_response(fault.status)
                    self.send_header("content-type", "text/event-stream")
                    self.end_headers()
                    for chunk in chunks:
                        self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                        self.wfile.flush()
                        time.sleep(fault.gap_s)
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.close_connection = True
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self) -> None:
                self._serve("GET")

            def do_POST(self) -> None:
                self._serve("POST")

        return Handler
