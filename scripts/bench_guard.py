"""Benchmark the guard API (`python app.py --api-only`), each part against a real server:

1. POST /v1/judge (`judge`, or `--judge`) with the product's defaults on given answers of three
   lengths (one phrase, about 60 and about 150 words), embedded model, call cache off: each
   call's seconds and each judge's, and the call as a ratio to its floor: the default reader
   reading the same prompt and answer once (measured afterwards, in this process). Targets:
   <= 1.3x on a phrase, <= 1.5x on 150 words (issue 58).
2. Throughput at 1, 4 and 8 concurrent clients with a llama.cpp server as the judges'
   backend (judges trivial, token_prob and p_true, so that 8 calls per level take minutes,
   not an hour): requests per second, p50 latency, failures, and whether every answered call
   was stored exactly once. Target: no failure, nothing stored twice. The guard sends one
   call at a time (RAGSHIELD_CONCURRENCY=1): llama-cpp-python's server has one KV cache, so
   interleaved calls would evict each other's prompts.
3. The proxy's overhead: POST /v1/chat/completions (judge: trivial, which calls no model)
   minus the same request sent straight to the upstream. The upstream here answers at once,
   so the model's time does not drown the few milliseconds measured. Target: p50 <= 20 ms.
4. Replicas: two API processes (`python -m ragshield serve --api-only`) started together on a
   fresh PostgreSQL database, 16 client threads sending distinct /v1/judge calls (judge:
   trivial, which calls no model) to both in turn: none lost or doubled (every reply 200,
   one `stored: true` each, one live sample and answer each, and the replicas' /v1/metrics
   count them all), the API's own latency as the client sees it and as the reply's
   `timings_ms` say, and calls per second. Target: p95 <= 20 ms.

5. Streaming (`stream`): the proxy's time to first byte with `"stream": true`, hold mode
   (judged, then streamed) and live mode, minus the same call unstreamed's whole reply
   (judge trivial, an upstream that answers at once). Target: hold <= +20 ms.
6. Latency budget (`budget`): /v1/judge with `budget_ms` 2,000 against an OpenAI-compatible
   judge backend that takes 5 s per judge call, one client and then 4: every call answers
   within the budget + 100 ms, decided from the judges that finished.

Each part is a section, one function returning its table rows; `--only` picks sections
(`--only replicas`). Prints a table, writes JSON, appends to docs/BENCHMARKS.md. Run it on
a quiet machine.

    python scripts/bench_guard.py [--only proxy,stream,budget,judge,throughput,replicas]
        [--judge] [--per-length 3] [--data-dir DIR] [--samples 10] [--requests 8]
        [--proxy-calls 60] [--rounds 3] [--calls 2000] [--budget-ms 2000] [--judge-s 5]
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
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import httpx
import psutil
from prometheus_client.parser import text_string_to_metric_families

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
from ragshield.services.questions.live_runs import LIVE_DATASET, LIVE_STATUS  # noqa: E402
from ragshield.store.database import open_store  # noqa: E402
from ragshield.store.runs import list_runs  # noqa: E402
from ragshield.store.samples import count_samples  # noqa: E402
from ragshield.testing.replicas import api_replicas, fresh_postgres  # noqa: E402
from ragshield.testing.servers import free_port, running_server  # noqa: E402
from ragshield.types import Message, Passage, Sample  # noqa: E402

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


def judge_latencies(folder: Path, bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each /v1/judge call on the embedded model with the product's defaults, one at a time,
    after one warm-up call (the first body, not measured: it loads the model): its seconds
    and each verdict's own (its judge's calls)."""
    with guard_server(folder, {"RAGSHIELD_BACKEND": "embedded"}) as base, \
            httpx.Client(base_url=base, timeout=900) as http:
        http.post("/v1/judge", json=bodies[0]).raise_for_status()
        calls = []
        for body in bodies[1:]:
            started = time.perf_counter()
            response = http.post("/v1/judge", json=body)
            response.raise_for_status()
            calls.append({"seconds": time.perf_counter() - started,
                          "judges": {v["judge"]: v["cost"]["seconds"]
                                     for v in response.json()["verdicts"]}})
    return calls


def read_seconds(bodies: list[dict[str, Any]]) -> list[float]:
    """The floor of each call: seconds for the judges' default reader to read the body's
    prompt (passages and question, as the answerer is asked) and its answer once, with one
    token written after them; the first body is read first and not counted, and no two
    bodies share a prompt, so none finds itself in llama.cpp's cache."""
    llm = make_llm(Settings(llm_cache=False))  # the defaults' reader: the answering model
    seconds = []
    for body in bodies:
        sample = Sample(id="floor", question=body["question"],
                        passages=[Passage(text=p["text"], title=p.get("title"))
                                  for p in body["passages"]])
        messages: list[Message] = [*shared_messages(sample, INSTRUCTIONS),
                                   {"role": "assistant", "content": body["answer"]}]
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
        events = sse_body(CANNED)
        streamed = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                    b"Content-Length: %d\r\n\r\n" % len(events)) + events

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                request = self.rfile.read(int(self.headers.get("content-length") or 0))
                self.wfile.write(streamed if b'"stream": true' in request else reply)

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



def sse_body(completion: dict[str, Any]) -> bytes:
    """A canned completion as a streaming server sends it: a role chunk, its text in chunks
    of a word, the finish, [DONE]."""
    head = {"id": completion["id"], "object": "chat.completion.chunk", "created": 0,
            "model": completion["model"]}
    words = completion["choices"][0]["message"]["content"].split(" ")
    deltas = [{"role": "assistant", "content": ""},
              *({"content": (" " if i else "") + word} for i, word in enumerate(words))]
    chunks = [{**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
              for delta in deltas]
    chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + \
        b"data: [DONE]\n\n"


def reply_seconds(http: httpx.Client, url: str, body: dict[str, Any]) -> tuple[float, float]:
    """Seconds to the first byte of the reply's body, and to its last."""
    started = time.perf_counter()
    with http.stream("POST", url, json=body) as response:
        response.raise_for_status()
        chunks = response.iter_raw()
        next(chunks)
        first = time.perf_counter() - started
        for _ in chunks:
            pass
    return first, time.perf_counter() - started


def stream_first_bytes(folder: Path, calls: int) -> dict[str, float]:
    """Hold mode's added time to first byte: per call, a streamed proxy call's first byte
    minus the same call unstreamed's whole reply (trivial judge; the upstream at once)."""
    upstream = CannedUpstream()
    try:
        with guard_server(folder, {"RAGSHIELD_BACKEND": "embedded"},
                          "--upstream", upstream.url) as base, httpx.Client(timeout=60) as http:
            added, live = [], []
            for i in range(calls + 5):  # the first 5 warm the connections
                body = {"model": "canned", "messages": [
                    {"role": "user", "content": f"Who gave their name ({i})?"}],
                        "ragshield": {"passages": [{"text": "The Normans."}],
                                      "judges": ["trivial"], "store": False}}
                _, whole = reply_seconds(http, f"{base}/v1/chat/completions", body)
                held, _ = reply_seconds(http, f"{base}/v1/chat/completions",
                                        {**body, "stream": True})
                passed, _ = reply_seconds(http, f"{base}/v1/chat/completions", {
                    **body, "stream": True,
                    "ragshield": {**body["ragshield"], "stream_mode": "live"}})
                if i >= 5:
                    added.append((held - whole) * 1000)
                    live.append((passed - whole) * 1000)
    finally:
        upstream.close()
    return {"hold_added_ms": statistics.median(added),
            "hold_added_p95_ms": percentile(added, 0.95), "live_added_ms": statistics.median(live)}


class SlowJudgeBackend:
    """An OpenAI-compatible judge backend whose every judge call takes `seconds` (its model
    list and the capability probe answer at once)."""

    def __init__(self, seconds: float) -> None:
        probe = json.dumps({**CANNED, "choices": [{
            "index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Yes"},
            "logprobs": {"content": [{"token": "Yes", "logprob": -0.1, "bytes": None,
                                      "top_logprobs": [{"token": "Yes", "logprob": -0.1,
                                                        "bytes": None}]}]}}]}).encode()
        models = json.dumps({"object": "list", "data": [{"id": "canned", "object": "model",
                                                         "owned_by": "bench"}]}).encode()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _send(self, body: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                self._send(models)

            def do_POST(self) -> None:
                request = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
                if request.get("messages", [{}])[-1].get("content") != "Say yes.":
                    time.sleep(seconds)
                try:
                    self._send(probe)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


BUDGET_JUDGES = ["trivial", "p_true", "pre_answer"]


def budget_calls(folder: Path, samples: list[Sample], budget_ms: int, judge_s: float,
                 clients: int) -> dict[str, Any]:
    """Each /v1/judge call's wall time with `budget_ms` against a backend that takes `judge_s`
    per judge call: one client, then `clients` at once."""
    backend = SlowJudgeBackend(judge_s)
    env = {"RAGSHIELD_BACKEND": "openai", "RAGSHIELD_OPENAI_BASE_URL": backend.url,
           "RAGSHIELD_MODEL": "canned", "RAGSHIELD_CONCURRENCY": "4"}
    try:
        with guard_server(folder, env) as base, httpx.Client(base_url=base, timeout=60) as http:
            def call(body: dict[str, Any]) -> tuple[float, dict[str, Any]]:
                started = time.perf_counter()
                response = http.post("/v1/judge", json=body)
                response.raise_for_status()
                return time.perf_counter() - started, response.json()

            bodies = [{**judge_body(sample, f" ({i})", BUDGET_JUDGES), "budget_ms": budget_ms,
                       "rule": "majority"} for i, sample in enumerate(samples * 2)]
            call(bodies[0])  # opens the backend (its probe) before anything is timed
            timed = [call(body) for body in bodies[1:len(samples) + 1]]
            with ThreadPoolExecutor(clients) as pool:
                timed += list(pool.map(call, bodies[len(samples) + 1:]))
    finally:
        backend.close()
    seconds = [took for took, _ in timed]
    decided = sum(1 for _, reply in timed if reply["decision"] is not None)
    return {"calls": len(timed), "p50_ms": statistics.median(seconds) * 1000,
            "max_ms": max(seconds) * 1000, "decided": decided,
            "unfinished": sorted({j for _, reply in timed for j in reply.get("unfinished", [])})}


Row = tuple[str, str, str]  # measure, value, target


@dataclass
class Section:
    """A section's table rows, its figures for the JSON file, and what its numbers are."""

    rows: list[Row]
    data: dict[str, Any]
    notes: str = ""


def demo_samples(args: argparse.Namespace) -> tuple[Sample, list[Sample]]:
    """A warm-up sample (never measured) and `--samples` others of the demo set."""
    samples = list(load_dataset(DEMO_SAMPLES))
    warm_up, *chosen = random.Random(args.seed).sample(samples, min(args.samples + 1,
                                                                    len(samples)))
    return warm_up, chosen


def proxy_section(args: argparse.Namespace, folder: Path) -> Section:
    proxy = [statistics.median(proxy_overheads(folder, args.proxy_calls)) * 1000
             for _ in range(args.rounds)]
    return Section([(f"proxy overhead p50 (median of {args.rounds} rounds of "
                     f"{args.proxy_calls})", f"{statistics.median(proxy):.1f} ms",
                     "<= 20 ms")], {"proxy_overhead_ms_rounds": proxy})


# Given answers of three lengths: the range of words each takes, and the target of the
# call's time over its floor (issue 58). Where they come from: length_bodies.
LENGTHS = {"one phrase": ((1, 6), "<= 1.3x"), "60 words": ((45, 75), ""),
           "150 words": ((120, 180), "<= 1.5x")}


def given_body(question: str, answer: str, passages: list[Any]) -> dict[str, Any]:
    return {"question": question, "answer": answer,
            "passages": [{"text": p["text"], "title": p.get("title")} if isinstance(p, dict)
                         else {"text": p.text, "title": p.title} for p in passages]}


def length_bodies(args: argparse.Namespace) -> tuple[dict[str, list[dict[str, Any]]], str]:
    """`--per-length` /v1/judge bodies for each length of LENGTHS, and where they came from:
    SQuAD 2.0 gold phrases and ClapNQ's answers from the repository's test data; 150-word
    answers from LFQA-Verification under `--data-dir` where it is there, else ClapNQ's
    longest (85 words and more)."""
    rng = random.Random(args.seed)
    data = ROOT / "tests" / "data"
    squad = [given_body(s.question, s.reference_answers[0], s.passages)
             for s in load_dataset(data / "squad2_dev_part_a.jsonl")
             if s.answerable and s.reference_answers]
    clapnq = [given_body(s.question, s.reference_answers[0], s.passages)
              for s in load_dataset(data / "clapnq_dev.jsonl") if s.reference_answers]
    lfqa_path = args.data_dir / "faithfulness" / "lfqa_verification.jsonl"
    lfqa = ([given_body(r["question"], r["answer"], r["passages"])
             for r in map(json.loads, lfqa_path.read_text(encoding="utf-8").splitlines())]
            if lfqa_path.is_file() else [])

    def words(body: dict[str, Any]) -> int:
        return len(body["answer"].split())

    pools = {"one phrase": squad, "60 words": clapnq, "150 words": lfqa}
    chosen = {}
    for length, ((low, high), _target) in LENGTHS.items():
        pool = [b for b in pools[length] if low <= words(b) <= high]
        if not pool and length == "150 words":
            pool = sorted(clapnq, key=words)[-args.per_length:]
        wanted = args.per_length + (length == "one phrase")  # and the warm-up
        chosen[length] = rng.sample(pool, min(wanted, len(pool)))
    where = ("one phrase: SQuAD 2.0 dev gold answers; 60 words: ClapNQ dev answers; 150 words: "
             + ("LFQA-Verification answers (--data-dir)" if lfqa else
                "ClapNQ's longest answers (no LFQA-Verification under --data-dir)"))
    return chosen, where


def judge_section(args: argparse.Namespace, folder: Path) -> Section:
    chosen, where = length_bodies(args)
    # The warm-up (not measured) loads the model; it is the phrase pool's last, judged first.
    warm_up = chosen["one phrase"].pop()
    bodies = [body for length in LENGTHS for body in chosen[length]]
    load = os.getloadavg()[0]
    calls = judge_latencies(folder, [warm_up, *bodies])
    floors = read_seconds([warm_up, *bodies])
    rows: list[Row] = []
    data: dict[str, Any] = {"judge_lengths": {}}
    done = 0
    for length, (_words, target) in LENGTHS.items():
        count = len(chosen[length])
        mine, floor = calls[done:done + count], floors[done:done + count]
        done += count
        if not mine:
            continue
        seconds = [call["seconds"] for call in mine]
        ratios = [took / read for took, read in zip(seconds, floor)]
        judges = sorted({judge for call in mine for judge in call["judges"]})
        by_judge = {judge: statistics.median(call["judges"].get(judge, 0.0) for call in mine)
                    for judge in judges}
        rows += [(f"{length}: /v1/judge, median of {len(mine)}",
                  f"{statistics.median(seconds):.2f} s", ""),
                 (f"{length}: one read of prompt and answer (the floor)",
                  f"{statistics.median(floor):.2f} s", ""),
                 (f"{length}: call / floor, median", f"{statistics.median(ratios):.2f}x", target),
                 (f"{length}: seconds by judge, medians",
                  ", ".join(f"{judge} {value:.1f}" for judge, value in by_judge.items()), "")]
        data["judge_lengths"][length] = {"calls": mine, "floor_s": floor, "ratios": ratios,
                                         "words": [len(b["answer"].split())
                                                   for b in chosen[length]]}
    return Section(rows, data,
                   f"/v1/judge with the product's defaults (no judges or rule named) on given "
                   f"answers ({where}), one call at a time from an empty call cache, the "
                   f"embedded model; the floor is the default reader reading the answerer's "
                   f"prompt and the answer once, afterwards in this process. Load average "
                   f"(1 min) before the calls: {load:.1f}.")


def throughput_section(args: argparse.Namespace, folder: Path) -> Section:
    _, samples = demo_samples(args)
    levels = throughput(folder, samples, args.requests)
    rows = [(f"{row['clients']} client(s), llama.cpp server, judges "
             f"{'+'.join(THROUGHPUT_JUDGES)}: {row['per_second']:.2f} req/s, "
             f"p50 {row['p50_s']:.1f} s",
             f"{row['failures']} failed of {row['requests']}, "
             f"{'each stored once' if row['stored_once'] else 'STORED TWICE'}", "no failure")
            for row in levels]
    return Section(rows, {"throughput": levels})


REPLICAS, CLIENTS = 2, 16
WARM_UP_CALLS, ONE_AT_A_TIME = 20, 100  # per replica, not measured; then measured alone


def replica_body(tag: str, number: int) -> dict[str, Any]:
    return {"question": f"Who gave their name to Normandy ({tag} {number})?",
            "passages": [{"text": "The Normans gave their name to Normandy, a region in "
                                  "France.", "title": "Normans"}],
            "answer": "The Normans", "judges": ["trivial"], "rule": "trivial"}


def decisions_counted(http: httpx.Client, base: str) -> float:
    """The decisions a replica's /v1/metrics counts."""
    text = http.get(f"{base}/v1/metrics").raise_for_status().text
    return sum(sample.value for family in text_string_to_metric_families(text)
               for sample in family.samples if sample.name == "ragshield_guard_decisions_total")


def p50_p95(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} / {percentile(values, 0.95):.1f} ms"


def cpu_seconds() -> dict[int, tuple[str, float]]:
    """pid -> (part, CPU seconds so far, user + system) of the processes a replicas' call
    costs: the API replicas, PostgreSQL's server processes and this one (the clients)."""
    own = os.getpid()
    found = {}
    for process in psutil.process_iter(["name", "cmdline"]):
        try:
            command = " ".join(process.info["cmdline"] or ())
            part = ("clients" if process.pid == own
                    else "api" if "serve --api-only" in command
                    else "postgres" if process.info["name"] == "postgres" else None)
            if part is not None:
                times = process.cpu_times()
                found[process.pid] = (part, times.user + times.system)
        except psutil.Error:  # ended while listed, or not ours to read
            continue
    return found


def cpu_per_call(before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]],
                 calls: int) -> dict[str, float]:
    """Milliseconds of CPU per call by part, between two `cpu_seconds` readings (a process
    that started in between counts from zero)."""
    spent: dict[str, float] = {"api": 0.0, "postgres": 0.0, "clients": 0.0}
    for pid, (part, seconds) in after.items():
        spent[part] += seconds - before.get(pid, (part, 0.0))[1]
    return {part: 1000 * seconds / calls for part, seconds in spent.items()}


TARGET_RATE = CLIENTS / 0.020  # calls a second that keep 16 clients' mean wait within 20 ms


def needed_cores(cpu_ms: dict[str, float]) -> float:
    return TARGET_RATE * (cpu_ms["api"] + cpu_ms["postgres"]) / 1000


def needed_processes(cpu_ms: dict[str, float]) -> float:
    """A process's Python work runs on one core at a time (the interpreter's lock)."""
    return TARGET_RATE * cpu_ms["api"] / 1000


def replicas_section(args: argparse.Namespace, folder: Path) -> Section:
    """Distinct calls to REPLICAS API processes in turn: ONE_AT_A_TIME from one client (the
    API's own time), then `--calls` from CLIENTS threads at once."""
    key = "bench-replica-key-" + "x" * 16
    env = {"RAGSHIELD_API_KEYS": key, "RAGSHIELD_LLM_CACHE": "false"}
    with fresh_postgres(args.postgres_admin) as url, \
            api_replicas(REPLICAS, url, folder, env=env, timeout_s=300) as bases, \
            httpx.Client(timeout=120, headers={"Authorization": f"Bearer {key}"},
                         limits=httpx.Limits(max_connections=2 * CLIENTS)) as http:
        def calls(tag: str, count: int) -> list[tuple[str, dict[str, Any]]]:
            return [(bases[n % REPLICAS], replica_body(tag, n)) for n in range(count)]

        def send(call: tuple[str, dict[str, Any]]) -> tuple[int, float, dict[str, Any]]:
            started = time.perf_counter()
            response = http.post(f"{call[0]}/v1/judge", json=call[1])
            wall = time.perf_counter() - started
            return response.status_code, wall, response.json()

        with ThreadPoolExecutor(CLIENTS) as pool:
            list(pool.map(send, calls("warm-up", WARM_UP_CALLS * REPLICAS)))
            alone = [send(call) for call in calls("alone", ONE_AT_A_TIME)]
            cpu_before, started = cpu_seconds(), time.perf_counter()
            replies = list(pool.map(send, calls("call", args.calls)))
            elapsed = time.perf_counter() - started
            cpu = cpu_per_call(cpu_before, cpu_seconds(), args.calls)
        counted = sum(decisions_counted(http, base) for base in bases)
        store = open_store(url)
        try:
            live = [run for run in list_runs(store) if run.status == LIVE_STATUS]
            samples = count_samples(store, LIVE_DATASET)
        finally:
            store.close()
    answered = [reply for status, _, reply in alone + replies if status == 200]
    stored = sum(reply["record"]["stored"] for reply in answered)
    measured = len(alone) + len(replies)
    expected = measured + WARM_UP_CALLS * REPLICAS
    whole = (len(answered) == measured == stored and samples == expected == counted
             and len(live) == 1 and live[0].done == live[0].total == expected)
    walls = {name: [wall * 1000 for status, wall, _ in got if status == 200]
             for name, got in (("alone", alone), ("together", replies))}
    phases = {name: {phase: [reply["timings_ms"][phase] for _, _, reply in got]
                     for phase in ("total", "queued", "judging", "storing")}
              for name, got in (("alone", alone), ("together", replies))}
    rows = [(f"{REPLICAS} replicas, PostgreSQL: {measured:,} calls lost or doubled",
             "none" if whole else f"{len(answered)} answered, {stored} stored, {samples} "
             f"live samples of {expected}, {counted:.0f} counted by /v1/metrics, "
             f"{len(live)} live runs", "none"),
            (f"one call at a time ({ONE_AT_A_TIME}): request time at the client, p50 / p95",
             p50_p95(walls["alone"]), "p95 <= 20 ms"),
            ("one call at a time: the guard's own time (reply's timings_ms total) / of which "
             "storing, p50", f"{statistics.median(phases['alone']['total']):.1f} / "
             f"{statistics.median(phases['alone']['storing']):.1f} ms", ""),
            (f"{CLIENTS} clients ({args.calls:,} calls): request time at the client, "
             "p50 / p95", p50_p95(walls["together"]), "p95 <= 20 ms"),
            (f"{CLIENTS} clients: the guard's own time (reply's timings_ms total), p50 / p95",
             p50_p95(phases["together"]["total"]), ""),
            (f"{CLIENTS} clients: of which queued / judging / storing, p50",
             " / ".join(f"{statistics.median(phases['together'][p]):.1f}"
                        for p in ("queued", "judging", "storing")) + " ms", ""),
            (f"{CLIENTS} clients: calls per second, both replicas",
             f"{args.calls / elapsed:.0f}", ""),
            (f"{CLIENTS} clients: CPU per call, API replicas / PostgreSQL / the clients",
             " / ".join(f"{cpu[part]:.1f}" for part in ("api", "postgres", "clients"))
             + " ms", ""),
            (f"p95 <= 20 ms for {CLIENTS} clients needs at least {TARGET_RATE:.0f} calls "
             "a second (Little's law): cores for the API and PostgreSQL at that rate / API "
             "processes (one Python thread of work each)",
             f"{needed_cores(cpu):.1f} / {needed_processes(cpu):.1f}", "")]
    notes = (f"Replicas: {REPLICAS} `ragshield serve --api-only` processes started together "
             f"on a fresh PostgreSQL database, judge trivial (no model), "
             f"{WARM_UP_CALLS * REPLICAS} unmeasured warm-up calls first; the clients are "
             "threads of the benchmark's process on the same machine.")
    return Section(rows, {"replicas": {"calls": args.calls, "lost_or_doubled": not whole,
                                       "alone_ms": walls["alone"],
                                       "client_ms": walls["together"], "phases_ms": phases,
                                       "per_second": args.calls / elapsed,
                                       "cpu_ms_per_call": cpu}}, notes)


def stream_section(args: argparse.Namespace, folder: Path) -> Section:
    rounds = [stream_first_bytes(folder, args.proxy_calls) for _ in range(args.rounds)]
    held = statistics.median(r["hold_added_ms"] for r in rounds)
    return Section([
        (f"stream, hold: time to first byte minus the unstreamed reply's time, p50 (median "
         f"of {args.rounds} rounds of {args.proxy_calls})", f"{held:+.1f} ms", "<= +20 ms"),
        ("stream, hold: the same, p95",
         f"{statistics.median(r['hold_added_p95_ms'] for r in rounds):+.1f} ms", ""),
        ("stream, live: time to first byte minus the unstreamed reply's time, p50",
         f"{statistics.median(r['live_added_ms'] for r in rounds):+.1f} ms", "")],
        {"stream_rounds": rounds},
        "Streaming: the proxy with judge trivial over an upstream that answers at once (its "
        "stream in one write), so that the guard's own added time shows.")


def budget_section(args: argparse.Namespace, folder: Path) -> Section:
    _, samples = demo_samples(args)
    found = budget_calls(folder, samples, args.budget_ms, args.judge_s, clients=4)
    limit = args.budget_ms + 100
    return Section([
        (f"budget {args.budget_ms:,} ms, judge backend {args.judge_s:g} s per call, "
         f"{found['calls']} calls (one client, then 4): slowest", f"{found['max_ms']:.0f} ms",
         f"<= {limit:,} ms"),
        ("budget: p50", f"{found['p50_ms']:.0f} ms", ""),
        ("budget: calls decided from the finished judges", f"{found['decided']} of "
         f"{found['calls']} (unfinished: {', '.join(found['unfinished']) or 'none'})", "all")],
        {"budget": found},
        f"Budget: judges {', '.join(BUDGET_JUDGES)}, rule majority, an OpenAI-compatible "
        f"judge backend whose every judge call takes {args.judge_s:g} s "
        "(RAGSHIELD_CONCURRENCY=4).")


SECTIONS = {"proxy": proxy_section, "stream": stream_section, "budget": budget_section,
            "judge": judge_section, "throughput": throughput_section,
            "replicas": replicas_section}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(SECTIONS),
                        help=f"sections to run, comma-separated: {', '.join(SECTIONS)}")
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--requests", type=int, default=8, help="calls per concurrency level")
    parser.add_argument("--proxy-calls", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3, help="proxy rounds (medians of)")
    parser.add_argument("--calls", type=int, default=2000, help="replicas: calls measured")
    parser.add_argument("--budget-ms", type=int, default=2000, help="budget: the calls' budget")
    parser.add_argument("--judge-s", type=float, default=5.0,
                        help="budget: seconds the slow judge backend takes per call")
    parser.add_argument("--postgres-admin", default=os.environ.get(
        "RAGSHIELD_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"),
        help="replicas: a PostgreSQL URL that may create databases")
    parser.add_argument("--per-length", type=int, default=3,
                        help="judge: given answers measured per length")
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data",
                        help="judge: where faithfulness/lfqa_verification.jsonl is, if anywhere")
    parser.add_argument("--judge", action="store_true", help="the same as --only judge")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json-out", type=Path, help="default: docs/bench/guard.json, or "
                        "guard-SECTIONS.json for some sections")
    parser.add_argument("--no-append", action="store_true")
    args = parser.parse_args()
    chosen = ["judge"] if args.judge else [
        name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(chosen) - set(SECTIONS))
    if unknown:
        parser.error(f"--only: no section {', '.join(unknown)}; there are {', '.join(SECTIONS)}")
    every = chosen == list(SECTIONS)
    json_out = args.json_out or ROOT / "docs" / "bench" / (
        "guard.json" if every else f"guard-{'-'.join(chosen)}.json")

    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as temp:
        sections = {name: SECTIONS[name](args, Path(temp)) for name in chosen}
    lines = ["| measure | value | target |", "|---|---|---|"]
    lines += [f"| {measure} | {value} | {target} |" for section in sections.values()
              for measure, value, target in section.rows]
    table = "\n".join(lines)
    notes = " ".join([*(section.notes for section in sections.values() if section.notes),
                      f"Load average (1 min) at start {load_before:.1f}, at end "
                      f"{os.getloadavg()[0]:.1f}."])
    data = {key: value for section in sections.values() for key, value in section.data.items()}
    title = "Guard API" if every else f"Guard API: {', '.join(chosen)}"
    publish(title, "python scripts/bench_guard.py " + " ".join(sys.argv[1:]), notes, table,
            data, json_out, append=not args.no_append, show=True)


if __name__ == "__main__":
    main()
