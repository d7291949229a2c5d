"""Benchmark the LLM backends: load time, prompt and generation speed, time to first token,
call-cache speedup and peak memory. Prints a table, writes JSON, appends to docs/BENCHMARKS.md.

    python scripts/bench_llm.py [--runs 5] [--backends embedded,small,openai,transformers-gguf]

Every figure is the median of --runs runs. Each run uses a fresh prompt (a new nonce at the
start), so llama.cpp cannot reuse a cached prefix and the prompt is read in full.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_report import publish  # noqa: E402
from ragshield.config import Settings  # noqa: E402
from ragshield.llm.base import LLM  # noqa: E402
from ragshield.llm.call_cache import CachedLLM  # noqa: E402
from ragshield.llm.factory import embedded_model_path  # noqa: E402
from ragshield.store.database import open_store  # noqa: E402

PASSAGE = (
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. "
    "It is named after the engineer Gustave Eiffel, whose company designed and built the tower "
    "from 1887 to 1889. Locally nicknamed La dame de fer, it was constructed as the centrepiece "
    "of the 1889 World's Fair. "
)
LONG_PROMPT_REPEATS = 9  # about 800 prompt tokens, the size of a 3-passage RAG prompt


def messages(nonce: int, question: str, repeats: int = LONG_PROMPT_REPEATS) -> list[dict]:
    return [{"role": "user",
             "content": f"[{nonce}] Context:\n{PASSAGE * repeats}\nQuestion: {question}"}]


def rss_mb(pid: int | None = None) -> float:
    return psutil.Process(pid or os.getpid()).memory_info().rss / 2**20


def measure(llm: LLM, runs: int, nonce_base: int) -> dict[str, float]:
    """Median time to first token, prompt tokens/s and generation tokens/s over `runs` runs."""
    ttft, prompt_tps, gen_tps = [], [], []
    for run in range(runs):
        first = llm.chat(messages(nonce_base + 2 * run, "Who designed it?"), max_tokens=1)
        ttft.append(first.seconds)
        prompt_tps.append(first.prompt_tokens / first.seconds)
        long = llm.chat(
            messages(nonce_base + 2 * run + 1, "Count from 1 to 200, separated by commas."),
            max_tokens=96,
        )
        gen_seconds = long.seconds - first.seconds  # same prompt size: subtract reading it
        gen_tps.append((long.completion_tokens - 1) / gen_seconds if gen_seconds > 0
                       else float("nan"))
    return {
        "ttft_s": statistics.median(ttft),
        "prompt_tokens_per_s": statistics.median(prompt_tps),
        "gen_tokens_per_s": statistics.median(gen_tps),
        "prompt_tokens": first.prompt_tokens,
    }


def cache_speedup(llm: LLM, runs: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(f"sqlite:///{folder}/bench.db")
        cached = CachedLLM(llm, store)
        speedups, hits = [], []
        for run in range(runs):
            call = messages(10_000 + run, "Who designed it?", repeats=3)
            live = cached.chat(call, max_tokens=16)
            hit = cached.chat(call, max_tokens=16)
            assert hit.cache_hit
            speedups.append(live.seconds / hit.seconds)
            hits.append(hit.seconds)
        store.close()
    return {"cache_hit_ms": statistics.median(hits) * 1000,
            "cache_speedup_x": statistics.median(speedups)}


def bench_in_process(name: str, make: Callable[[], LLM], runs: int) -> dict[str, Any]:
    before = rss_mb()
    started = time.perf_counter()
    llm = make()
    load_s = time.perf_counter() - started
    result: dict[str, Any] = {"backend": name, "model": llm.model, "load_s": load_s}
    result.update(measure(llm, runs, nonce_base=hash(name) % 1000 * 100))
    result.update(cache_speedup(llm, runs))
    result["rss_mb"] = rss_mb()
    result["rss_added_mb"] = result["rss_mb"] - before
    return result


def bench_openai(settings: Settings, runs: int) -> dict[str, Any]:
    """Against `python -m llama_cpp.server` with the embedded model on a local port."""
    from ragshield.llm.openai_backend import OpenAICompatibleLLM

    port = 18000 + os.getpid() % 1000
    server = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(embedded_model_path(settings)),
         "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096", "--n_threads", "2",
         "--logits_all", "true"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        started = time.perf_counter()
        base_url = f"http://127.0.0.1:{port}/v1"
        while True:
            try:
                urllib.request.urlopen(f"{base_url}/models", timeout=2)
                break
            except OSError:
                if time.perf_counter() - started > 120 or server.poll() is not None:
                    raise RuntimeError("llama_cpp.server did not start")
                time.sleep(0.2)
        load_s = time.perf_counter() - started
        llm = OpenAICompatibleLLM(base_url, timeout_s=300)
        result: dict[str, Any] = {"backend": "openai (llama_cpp.server)", "model": llm.model,
                                  "load_s": load_s}
        result.update(measure(llm, runs, nonce_base=50_000))
        result.update(cache_speedup(llm, runs))
        result["rss_mb"] = rss_mb(server.pid)
        result["rss_added_mb"] = result["rss_mb"]
        return result
    finally:
        server.terminate()
        server.wait(timeout=30)


def embedded_with_embeddings_rss(settings: Settings) -> float:
    """RSS of a fresh process holding the embedded model and the embedding model."""
    code = (
        "from ragshield.config import Settings; from ragshield.llm.factory import make_llm;"
        "from ragshield.retrieval.embeddings import load_embedder; import psutil;"
        "s=Settings(); llm=make_llm(s); e=load_embedder(s);"
        "llm.chat([{'role':'user','content':'Hello '*700}], max_tokens=32);"
        "e.encode(['a sentence']*64);"
        "print(psutil.Process().memory_info().rss/2**20)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    return float(out.stdout.strip().splitlines()[-1])


COLUMNS = [
    ("backend", "backend", "{}"), ("load_s", "load s", "{:.2f}"), ("ttft_s", "TTFT s", "{:.2f}"),
    ("prompt_tokens_per_s", "prompt tok/s", "{:.0f}"), ("gen_tokens_per_s", "gen tok/s", "{:.1f}"),
    ("cache_hit_ms", "cache hit ms", "{:.2f}"), ("cache_speedup_x", "cache speedup", "{:.0f}x"),
    ("rss_added_mb", "RSS added MB", "{:.0f}"),
]


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| " + " | ".join(title for _, title, _ in COLUMNS) + " |",
             "|" + "---|" * len(COLUMNS)]
    for row in rows:
        cells = [fmt.format(row[key]) if row.get(key) is not None else "n/a"
                 for key, _, fmt in COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--backends", default="embedded,small,openai")
    parser.add_argument("--transformers-model",
                        help="a local model folder for the transformers backend")
    parser.add_argument("--json-out", type=Path, default=ROOT / "docs" / "bench" / "llm.json")
    parser.add_argument("--no-append", action="store_true", help="do not write docs/BENCHMARKS.md")
    args = parser.parse_args()

    settings = Settings()
    wanted = args.backends.split(",")
    rows: list[dict[str, Any]] = []
    if "embedded" in wanted:
        from ragshield.llm.llama_cpp_backend import LlamaCppLLM

        rows.append(bench_in_process(
            "embedded (llama.cpp)", lambda: LlamaCppLLM(embedded_model_path(settings)), args.runs))
    if "small" in wanted:
        from ragshield.llm.llama_cpp_backend import LlamaCppLLM

        rows.append(bench_in_process(
            "small (llama.cpp)", lambda: LlamaCppLLM(embedded_model_path(settings, small=True)),
            args.runs))
    if "openai" in wanted:
        rows.append(bench_openai(settings, args.runs))
    if "transformers-gguf" in wanted or args.transformers_model:
        from ragshield.llm.transformers_backend import TransformersLLM

        if args.transformers_model:
            make = lambda: TransformersLLM(args.transformers_model)  # noqa: E731
        else:
            path = embedded_model_path(settings)
            make = lambda: TransformersLLM(str(path.parent), gguf_file=path.name)  # noqa: E731
        rows.append(bench_in_process("transformers", make, max(1, args.runs // 2)))
    combined_rss = embedded_with_embeddings_rss(settings)

    rendered = table(rows)
    summary = (
        f"Peak RSS of one process with the embedded model and the embeddings loaded, after an "
        f"800-token call: {combined_rss:.0f} MB."
    )
    print(rendered)
    print(summary)
    prompt_tokens = rows[0]["prompt_tokens"] if rows else "?"
    publish(
        "LLM backends",
        f"python scripts/bench_llm.py --runs {args.runs} --backends {args.backends}",
        f"Medians of {args.runs} runs; prompts of about {prompt_tokens} tokens, each with a "
        "fresh prefix.",
        f"{rendered}\n\n{summary}",
        {"runs": args.runs, "rows": rows, "embedded_plus_embeddings_rss_mb": combined_rss},
        args.json_out, append=not args.no_append,
    )


if __name__ == "__main__":
    main()
