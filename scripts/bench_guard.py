"""Benchmark the guard API (`python app.py --api-only`), each part against a real server:

1. POST /v1/judge with the fast judge set on demo samples (their reference answer given as
   the answer), embedded model, call cache off: latency p50/p95, and each call as a ratio to
   the time the embedded model takes to read the same prompt once (measured afterwards, in
   this process, with one generated token). Target: p50 ratio <= 1.5.
2. Throughput at 1, 4 and 8 concurrent clients with a llama.cpp server as the judges'
   backend (judges trivial, token_prob and p_true, so that 8 calls per level take minutes,
   not an hour): requests per second, p50 latency, failures, and whether every answered call
   was stored exactly once. Target: no failure, nothing stored twice. The guard sends one
   call at a time (RAGSHIELD_CONCURRENCY=1): llama-cpp-python's server has one KV cache, so
   interleaved calls would evict each other's prompts.
3. The proxy's overhead: POST /v1/chat/completions (judge: trivial, which calls no model)
   minus the same request sent straight to the upstream. The upstream here answers at once,
   so the model's time does not drown the few milliseconds measured. Target: p50 <= 20 ms.

Prints a table, writes JSON, appends to docs/BENCHMARKS.md. Run it on a quiet machine.

    python scripts/bench_guard.py [--samples 10] [--requests 8] [--proxy-calls 60] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_report import publish  # noqa: E402
from ragshield.answerers.context import shared_messages  # noqa: E402
from ragshield.answerers.vanilla import INSTRUCTIONS  # noqa: E402
from ragshield.config import Settings  # noqa: E402
from ragshield.datasets import load_dataset  # noqa: E402
from ragshield.datasets.demo import DEMO_SAMPLES  # noqa: E402
from ragshield.llm.factory import make_llm  # noqa: E402
from ragshield.llm.packaged_models import QWEN_05B, ensure_model  # noqa: E402
from ragshield.services.guard import default_judges  # noqa: E402
from ragshield.testing.servers import free_port, running_server  # noqa: E402
from ragshield.types import Message, Sample  # noqa: E402

CANNED = {"id": "c", "object": "chat.completion", "created": 0, "model": "canned",
          "choices": [{"index": 0, "finish_reason": "stop",
                       "message": {"role": "assistant", "content": "The Normans."}}],
          "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}}


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


THROUGHPUT_JUDGES = ["trivial", "token_prob", "p_true"]


def judge_body(sample: Sample, tag: str = "", judges: list[str] | None = None) -> dict[str, Any]:
    answer = sample.reference_answers[0] if sample.reference_answers else "I don't know."
    body: dict[str, Any] = {
        "question": sample.question + tag, "answer": answer,
        "passages": [{"text": p.text, "title": p.title} for p in sample.passages]}
    return {**body, "judges": judges} if judges else body


@contextmanager
def guard_server(folder: Path, env: dict[str, str], *extra: str) -> Iterator[str]:
    port = free_port()
    args = [sys.executable, "app.py", "--api-only", "--port", str(port), *extra]
    env = {"RAGSHIELD_DATABASE_URL": f"sqlite:///{folder / f'guard-{port}.db'}",
           "RAGSHIELD_LLM_CACHE": "false", **env}
    with running_server(args, f"http://127.0.0.1:{port}/v1/health", folder / f"guard-{port}.log",
                        env=env, cwd=ROOT, timeout_s=300):
        yield f"http://127.0.0.1:{port}"


def judge_latencies(folder: Path, warm_up: Sample, samples: list[Sample]) -> list[float]:
    """Seconds per /v1/judge call on the embedded model, one sample at a time, after one
    call on `warm_up` (a sample not measured: its passages must not be in the cache)."""
    with guard_server(folder, {"RAGSHIELD_BACKEND": "embedded"}) as base, \
            httpx.Client(base_url=base, timeout=600) as http:
        http.post("/v1/judge", json=judge_body(warm_up)).raise_for_status()
        seconds = []
        for sample in samples:
            started = time.perf_counter()
            http.post("/v1/judge", json=judge_body(sample)).raise_for_status()
            seconds.append(time.perf_counter() - started)
    return seconds


def prompt_read_seconds(warm_up: Sample, samples: list[Sample]) -> list[float]:
    """Seconds for the embedded model to read each sample's answer prompt (question,
    passages and the given answer) and write one token, after reading `warm_up`'s; the
    samples are read in turn, so no prompt finds itself in llama.cpp's cache."""
    llm = make_llm(Settings(llm_cache=False))
    seconds = []
    for sample in [warm_up, *samples]:
        answer = judge_body(sample)["answer"]
        messages: list[Message] = [*shared_messages(sample, INSTRUCTIONS),
                                   {"role": "assistant", "content": answer},
                                   {"role": "user", "content": "Is it right?"}]
        started = time.perf_counter()
        llm.chat(messages, max_tokens=1)
        seconds.append(time.perf_counter() - started)
    return seconds[1:]


def stored_once(database: Path) -> bool:
    with sqlite3.connect(database) as connection:
        counts = connection.execute(
            "SELECT COUNT(*) FROM answers a JOIN runs r ON r.id = a.run_id "
            "WHERE r.status = 'live' AND a.role = 'main' GROUP BY a.sample_id").fetchall()
    return all(count == 1 for (count,) in counts)


def throughput(folder: Path, samples: list[Sample], requests: int) -> list[dict[str, Any]]:
    """Requests per second at 1, 4 and 8 clients, judges on a llama.cpp server."""
    llama_port = free_port()
    llama = f"http://127.0.0.1:{llama_port}/v1"
    model = ensure_model(QWEN_05B, Settings().cache_dir)
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model),
               "--host", "127.0.0.1", "--port", str(llama_port), "--n_ctx", "4096",
               "--n_threads", "2", "--logits_all", "true", "--model_alias", "qwen"]
    rows = []
    with running_server(command, f"{llama}/models", folder / "llama.log", timeout_s=300), \
            guard_server(folder, {"RAGSHIELD_BACKEND": "openai", "RAGSHIELD_MODEL": "qwen",
                                  "RAGSHIELD_OPENAI_BASE_URL": llama,
                                  "RAGSHIELD_CONCURRENCY": "1",
                                  "RAGSHIELD_API_TIMEOUT_S": "900"}) as base:
        database = next(folder.glob(f"guard-{base.rsplit(':', 1)[1]}.db"))
        with httpx.Client(base_url=base, timeout=900) as http:
            http.post("/v1/judge", json=judge_body(samples[0], " (warm-up)",
                                                    THROUGHPUT_JUDGES)).raise_for_status()
        for clients in (1, 4, 8):
            bodies = [judge_body(samples[i % len(samples)], f" (clients {clients}, call {i})",
                                 THROUGHPUT_JUDGES) for i in range(requests)]
            latencies: list[float] = []
            failures = 0

            def call(body: dict[str, Any]) -> None:
                nonlocal failures
                started = time.perf_counter()
                response = httpx.post(f"{base}/v1/judge", json=body, timeout=900)
                latencies.append(time.perf_counter() - started)
                failures += response.status_code != 200

            started = time.perf_counter()
            with ThreadPoolExecutor(clients) as pool:
                list(pool.map(call, bodies))
            elapsed = time.perf_counter() - started
            rows.append({"clients": clients, "requests": requests,
                         "per_second": requests / elapsed,
                         "p50_s": statistics.median(latencies), "failures": failures,
                         "stored_once": stored_once(database)})
    return rows


class CannedUpstream:
    """An OpenAI-compatible upstream that answers every chat request at once: the reply in
    one write with Nagle off, so that no delayed ACK (40 ms) lands in the measurement."""

    def __init__(self) -> None:
        body = json.dumps(CANNED).encode()
        reply = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(body)) + body

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                self.wfile.write(reply)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def proxy_overheads(folder: Path, calls: int) -> list[float]:
    """Per call: the proxy's latency minus the upstream's own (both over keep-alive)."""
    upstream = CannedUpstream()
    try:
        with guard_server(folder, {"RAGSHIELD_BACKEND": "embedded"},
                          "--upstream", upstream.url) as base, \
                httpx.Client(timeout=60) as http:
            overheads = []
            for i in range(calls + 5):  # the first 5 warm the connections
                body = {"model": "canned",
                        "messages": [{"role": "user", "content": f"Who gave their name ({i})?"}]}
                started = time.perf_counter()
                http.post(f"{upstream.url}/chat/completions", json=body).raise_for_status()
                direct = time.perf_counter() - started
                started = time.perf_counter()
                http.post(f"{base}/v1/chat/completions", json={
                    **body, "ragshield": {"passages": [{"text": "The Normans."}],
                                          "judges": ["trivial"]}}).raise_for_status()
                if i >= 5:
                    overheads.append(time.perf_counter() - started - direct)
    finally:
        upstream.close()
    return overheads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--requests", type=int, default=8, help="calls per concurrency level")
    parser.add_argument("--proxy-calls", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3, help="proxy rounds (medians of)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json-out", type=Path, default=ROOT / "docs" / "bench" / "guard.json")
    parser.add_argument("--no-append", action="store_true")
    args = parser.parse_args()

    samples = list(load_dataset(DEMO_SAMPLES))
    warm_up, *samples = random.Random(args.seed).sample(samples, min(args.samples + 1,
                                                                     len(samples)))
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as temp:
        folder = Path(temp)
        proxy = [statistics.median(proxy_overheads(folder, args.proxy_calls)) * 1000
                 for _ in range(args.rounds)]
        latencies = judge_latencies(folder, warm_up, samples)
        reads = prompt_read_seconds(warm_up, samples)
        levels = throughput(folder, samples, args.requests)
    ratios = [latency / read for latency, read in zip(latencies, reads)]

    judges = ", ".join(default_judges())
    lines = ["| measure | value | target |", "|---|---|---|",
             f"| /v1/judge p50 (embedded, {len(samples)} demo samples) | "
             f"{statistics.median(latencies):.2f} s | |",
             f"| /v1/judge p95 | {percentile(latencies, 0.95):.2f} s | |",
             f"| prompt read once, p50 | {statistics.median(reads):.2f} s | |",
             f"| /v1/judge / prompt read, p50 | {statistics.median(ratios):.2f}x | <= 1.5x |",
             f"| proxy overhead p50 (median of {args.rounds} rounds of {args.proxy_calls}) | "
             f"{statistics.median(proxy):.1f} ms | <= 20 ms |"]
    lines += [f"| {row['clients']} client(s), llama.cpp server, judges "
              f"{'+'.join(THROUGHPUT_JUDGES)}: {row['per_second']:.2f} req/s, "
              f"p50 {row['p50_s']:.1f} s | {row['failures']} failed of {row['requests']}, "
              f"{'each stored once' if row['stored_once'] else 'STORED TWICE'} | no failure |"
              for row in levels]
    table = "\n".join(lines)
    notes = (f"Fast judge set ({judges}); the call cache off. Load average (1 min) at start "
             f"{load_before:.1f}, at end {os.getloadavg()[0]:.1f}.")
    print(table)
    print(notes)
    publish("Guard API", "python scripts/bench_guard.py " + " ".join(sys.argv[1:]), notes,
            table, {"judge_s": latencies, "prompt_read_s": reads, "ratios": ratios,
                    "proxy_overhead_ms_rounds": proxy, "throughput": levels},
            args.json_out, append=not args.no_append)


if __name__ == "__main__":
    main()
