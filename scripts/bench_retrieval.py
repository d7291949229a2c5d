"""Benchmark retrieval: build time, memory and query latency of BM25 and of dense search (flat,
IVF, HNSW) at several corpus sizes, recall@10 of IVF and HNSW against flat, building and
reloading a saved corpus, and the embedding model's throughput. Prints a table, writes JSON,
appends to docs/BENCHMARKS.md.

    python scripts/bench_retrieval.py [--runs 3] [--sizes 10000,100000,1000000] [--queries 200]

Data: corpus texts are synthetic (words of the embedding model's vocabulary drawn with Zipf
frequencies, about 200 tokens each). Dense vectors at every size are synthetic too (embedding
100k chunks on 2 cores would take hours): unit vectors of dimension 384 with intrinsic
dimension 32 (a random 32-dim Gaussian mapped to 384 dims, plus isotropic noise); queries are
noisy copies of corpus vectors. The embedding throughput uses the real model on real prose.

Latencies are per single query (one query per call), p50 / p95 over --queries queries, each the
median of --runs runs. Build times and memory are measured once. Memory is the growth of the
process RSS while building (the index, not the input data).
"""

from __future__ import annotations

import argparse
import ctypes
import importlib
import inspect
import json
import math
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import faiss
import numpy as np
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_report import publish  # noqa: E402
from ragshield.config import Settings  # noqa: E402
from ragshield.retrieval.bm25_index import BM25Index  # noqa: E402
from ragshield.retrieval.chunking import TokenChunker, load_chunk_tokenizer  # noqa: E402
from ragshield.retrieval.corpus_store import load_corpus, save_corpus  # noqa: E402
from ragshield.retrieval.demo_corpus import DEMO_CORPUS_FILE  # noqa: E402
from ragshield.retrieval.documents import Document, read_documents  # noqa: E402
from ragshield.retrieval.embeddings import packaged_embedding_path  # noqa: E402
from ragshield.retrieval.encoding import Embedder, default_embedder  # noqa: E402
from ragshield.retrieval.faiss_index import build_dense_index, search_parameters  # noqa: E402
from ragshield.retrieval.index_config import INDEX_KINDS, DenseIndexConfig  # noqa: E402
from ragshield.retrieval.ingest import build_corpus  # noqa: E402

DIM = 384
LATENT_DIM = 32
WORDS_PER_TEXT = 190  # about 200 tokens of the MiniLM tokenizer
NPROBES = (16, 32, 64, 128, 256)
EF_SEARCHES = (32, 64, 128, 256, 512)
RECALL_TARGET = 0.95
LIBC = ctypes.CDLL("libc.so.6")
PROSE_MODULES = ("argparse", "collections", "json", "logging", "pathlib", "subprocess")
TARGETS = [
    "dense search over 100k chunks: p50 <= 20 ms",
    "dense search over 1M chunks with IVF or HNSW: p50 <= 10 ms at recall@10 >= 0.95",
    "BM25 over 1M chunks: p50 <= 50 ms",
    "reload of a saved 100k-chunk corpus <= 2 s",
    "embedding >= 300 chunks/s on 2 cores",
]


def rss_mb() -> float:
    return psutil.Process().memory_info().rss / 2**20


def measured(build: Callable[[], Any]) -> tuple[Any, float, float]:
    """What `build` returns, the seconds it took and the MB the process grew by."""
    LIBC.malloc_trim(0)  # hand freed heap back first, or the growth hides in it
    before, started = rss_mb(), time.perf_counter()
    built = build()
    return built, time.perf_counter() - started, rss_mb() - before


def latencies_ms(search: Callable[[int], Any], count: int, runs: int) -> tuple[float, float]:
    """Median over runs of the p50 and p95 of `search(i)` for i in range(count), in ms."""
    p50s, p95s = [], []
    for _ in range(runs):
        times = []
        for i in range(count):
            started = time.perf_counter()
            search(i)
            times.append(time.perf_counter() - started)
        p50s.append(float(np.percentile(times, 50)) * 1000)
        p95s.append(float(np.percentile(times, 95)) * 1000)
    return statistics.median(p50s), statistics.median(p95s)


Row = dict[str, Any]


def row(part: str, size: int | None, method: str, **figures: Any) -> Row:
    return {"part": part, "size": size, "method": method, **figures}


# --- synthetic data -----------------------------------------------------------------------


def unit_rows(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def latent_vectors(count: int, rng: np.random.Generator, block: int = 100_000) -> np.ndarray:
    mixing = rng.standard_normal((LATENT_DIM, DIM), dtype=np.float32) / math.sqrt(LATENT_DIM)
    vectors = np.empty((count, DIM), dtype=np.float32)
    for first in range(0, count, block):
        n = min(block, count - first)
        latent = rng.standard_normal((n, LATENT_DIM), dtype=np.float32) @ mixing
        noise = rng.standard_normal((n, DIM), dtype=np.float32) / math.sqrt(DIM)
        vectors[first : first + n] = unit_rows(latent + noise)
    return vectors


def noisy_queries(vectors: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    picked = vectors[rng.integers(0, len(vectors), count)]
    noise = rng.standard_normal(picked.shape, dtype=np.float32) / math.sqrt(DIM)
    return unit_rows(picked + 0.5 * noise)


def exact_top10(queries: np.ndarray, vectors: np.ndarray, block: int = 200_000) -> np.ndarray:
    best_rows = np.empty((len(queries), 0), dtype=np.int64)
    best_scores = np.empty((len(queries), 0), dtype=np.float32)
    for first in range(0, len(vectors), block):
        scores = queries @ vectors[first : first + block].T
        top = np.argpartition(-scores, 10, axis=1)[:, :10]
        best_rows = np.hstack([best_rows, top + first])
        best_scores = np.hstack([best_scores, np.take_along_axis(scores, top, axis=1)])
    order = np.argsort(-best_scores, axis=1)[:, :10]
    return np.take_along_axis(best_rows, order, axis=1)


def recall_at_10(found: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean([len(set(f) & set(t)) / 10 for f, t in zip(found, truth)]))


def vocabulary_words() -> np.ndarray:
    """Whole English words of the MiniLM vocabulary (one token each)."""
    lines = (packaged_embedding_path() / "vocab.txt").read_text(encoding="utf-8").split()
    return np.array([w for w in lines if w.isalpha() and w.isascii() and len(w) > 2])


def zipf_texts(count: int, rng: np.random.Generator, words: np.ndarray,
               block: int = 50_000) -> list[str]:
    order = rng.permutation(len(words))
    weights = 1.0 / np.arange(1, len(words) + 1) ** 1.07
    weights /= weights.sum()
    texts: list[str] = []
    for first in range(0, count, block):
        ids = rng.choice(len(words), size=(min(block, count - first), WORDS_PER_TEXT), p=weights)
        texts.extend(" ".join(row) for row in words[order[ids]])
    return texts


def keyword_queries(texts: Sequence[str], count: int, rng: np.random.Generator) -> list[str]:
    """Five words of a random text: every query has matching chunks."""
    return [" ".join(rng.choice(texts[i].split(), 5)) for i in rng.integers(0, len(texts), count)]


def real_prose() -> tuple[str, list[Document]]:
    """The demo corpus when present, else the docstrings of a few standard-library modules."""
    if DEMO_CORPUS_FILE.is_file():
        documents = read_documents([DEMO_CORPUS_FILE]).documents
        return f"the demo corpus ({DEMO_CORPUS_FILE.name})", documents
    modules = [importlib.import_module(name) for name in PROSE_MODULES]
    docs = {inspect.getdoc(obj) for module in modules for _, obj in inspect.getmembers(module)}
    texts = sorted(d for d in docs if d and len(d) > 200)
    return "Python standard-library docstrings", [Document(str(i), t) for i, t in enumerate(texts)]


class SyntheticEncoder:
    """Stands in for the embedding model where embedding for real would take hours."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.max_seq_length = 512

    def encode(self, sentences: list[str], **options: Any) -> np.ndarray:
        return latent_vectors(len(sentences), self.rng)


# --- benchmarks ---------------------------------------------------------------------------


def index_settings(resolved: DenseIndexConfig, sweep: bool) -> list[tuple[str, Any]]:
    """(label, search parameters) to measure an index with: the saved defaults, or a sweep."""
    if resolved.kind == "ivf":
        probes = NPROBES if sweep else (resolved.nprobe,)
        return [(f"ivf nlist={resolved.nlist} nprobe={p}", search_parameters(resolved, nprobe=p))
                for p in probes]
    if resolved.kind == "hnsw":
        efs = EF_SEARCHES if sweep else (resolved.ef_search,)
        return [(f"hnsw M={resolved.hnsw_m} efSearch={e}", search_parameters(resolved, ef_search=e))
                for e in efs]
    return [("flat", None)]


def bench_dense(size: int, args: argparse.Namespace, rng: np.random.Generator) -> list[Row]:
    vectors = latent_vectors(size, rng)
    queries = noisy_queries(vectors, args.queries, rng)
    truth = exact_top10(queries, vectors)
    rows = []
    for kind in INDEX_KINDS:
        faiss.omp_set_num_threads(psutil.cpu_count())  # builds use every core
        (index, resolved), build_s, grown = measured(
            lambda: build_dense_index(vectors, DenseIndexConfig(kind=kind)))
        faiss.omp_set_num_threads(args.threads)
        for label, params in index_settings(resolved, sweep=size >= 100_000):
            def search(i: int) -> Any:
                return index.search(queries[i : i + 1], 10, params=params)

            p50, p95 = latencies_ms(search, args.queries, args.runs)
            recall = recall_at_10(index.search(queries, 10, params=params)[1], truth)
            rows.append(row("dense", size, label, build_s=build_s, rss_mb=grown, p50_ms=p50,
                            p95_ms=p95, recall_at_10=recall))
        if kind == "flat" and size == 100_000 and args.threads != psutil.cpu_count():
            faiss.omp_set_num_threads(psutil.cpu_count())
            p50, p95 = latencies_ms(search, args.queries, args.runs)
            rows.append(row("dense", size, f"flat, {psutil.cpu_count()} query threads",
                            p50_ms=p50, p95_ms=p95))
        index.reset()  # free its memory before the next one is built
    return rows


def bench_bm25(size: int, args: argparse.Namespace, rng: np.random.Generator,
               words: np.ndarray) -> list[Row]:
    texts = zipf_texts(size, rng, words)
    queries = keyword_queries(texts, args.queries, rng)
    index, build_s, grown = measured(lambda: BM25Index.build(texts))
    texts.clear()
    p50, p95 = latencies_ms(lambda i: index.top(queries[i], 10), args.queries, args.runs)
    return [row("bm25", size, "bm25s, English stemming", build_s=build_s, rss_mb=grown,
                p50_ms=p50, p95_ms=p95)]


def bench_corpus(size: int, args: argparse.Namespace, rng: np.random.Generator,
                 words: np.ndarray) -> list[Row]:
    """The ingestion pipeline on a JSONL file (synthetic vectors instead of embedding), then
    reloading the saved corpus."""
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "corpus.jsonl"
        with open(source, "w") as out:
            for i, text in enumerate(zipf_texts(size, rng, words)):
                out.write(json.dumps({"id": f"d{i}", "text": text}) + "\n")
        settings = Settings(corpora_dir=Path(folder) / "corpora")
        embedder = Embedder("synthetic", SyntheticEncoder(seed=size))
        faiss.omp_set_num_threads(psutil.cpu_count())
        corpus, build_s, grown = measured(
            lambda: build_corpus("bench", [source], settings, embedder=embedder))
        _, save_s, _ = measured(lambda: save_corpus(corpus, settings.corpora_dir))
        chunks = len(corpus)
        reloads = [measured(lambda: load_corpus(settings.corpora_dir, "bench"))[1]
                   for _ in range(args.runs)]
    return [
        row("corpus", chunks, "ingest JSONL: chunk + BM25 + flat (no embedding)",
            build_s=build_s, rss_mb=grown),
        row("corpus", chunks, "save", build_s=save_s),
        row("corpus", chunks, "reload (warm page cache)", reload_s=statistics.median(reloads)),
    ]


def bench_embedding(args: argparse.Namespace) -> list[Row]:
    import torch

    settings = Settings()
    source, documents = real_prose()
    chunks = [c.text for c in TokenChunker(load_chunk_tokenizer(settings), 200).chunk(documents)]
    texts = (chunks * math.ceil(args.embed_chunks / len(chunks)))[: args.embed_chunks]
    embedder = default_embedder(settings)
    tokens = statistics.mean(len(embedder.model.tokenizer(t)["input_ids"]) for t in texts)
    rows = []
    for threads in sorted({args.threads, psutil.cpu_count()}):
        torch.set_num_threads(threads)
        embedder.encode(texts[:8])  # warm-up
        rates = []
        for _ in range(args.runs):
            started = time.perf_counter()
            embedder.encode(texts)
            rates.append(len(texts) / (time.perf_counter() - started))
        rows.append(row("embedding", len(texts), f"MiniLM-L6 fp32, {tokens:.0f}-token chunks of "
                        f"{source}, batches of <= {embedder.batch_tokens} tokens, "
                        f"{threads} thread(s)",
                        chunks_per_s=statistics.median(rates)))
    torch.set_num_threads(args.threads)
    queries = [" ".join(t.split()[:10]) for t in texts[:64]]
    p50, p95 = latencies_ms(lambda i: embedder.encode([queries[i]]), len(queries), args.runs)
    started = time.perf_counter()
    embedder.encode(queries)
    batched = len(queries) / (time.perf_counter() - started)
    return rows + [
        row("embedding", len(queries), f"one 10-word query per call, {args.threads} thread(s)",
            p50_ms=p50, p95_ms=p95),
        row("embedding", len(queries), f"10-word queries in one batch, {args.threads} thread(s)",
            chunks_per_s=batched),
    ]


# --- report -------------------------------------------------------------------------------

COLUMNS = [
    ("part", "part", "{}"), ("size", "chunks", "{:,}"), ("method", "method", "{}"),
    ("build_s", "build s", "{:.2f}"), ("rss_mb", "RSS added MB", "{:.0f}"),
    ("p50_ms", "p50 ms", "{:.3f}"), ("p95_ms", "p95 ms", "{:.3f}"),
    ("recall_at_10", "recall@10", "{:.3f}"), ("reload_s", "reload s", "{:.2f}"),
    ("chunks_per_s", "items/s", "{:.1f}"),
]


def table(rows: list[Row]) -> str:
    lines = ["| " + " | ".join(title for _, title, _ in COLUMNS) + " |",
             "|" + "---|" * len(COLUMNS)]
    for r in rows:
        cells = [fmt.format(r[key]) if r.get(key) is not None else "" for key, _, fmt in COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def verdict(target: str, figure: str, ok: bool) -> str:
    return f"{target}: {figure} -> {'met' if ok else 'NOT MET'}"


def fastest_accurate(rows: list[Row], size: int) -> Row | None:
    """The fastest IVF or HNSW setting at `size` that reaches the recall target."""
    accurate = [r for r in rows if r["part"] == "dense" and r["size"] == size
                and r["method"].startswith(("ivf", "hnsw"))
                and r["recall_at_10"] >= RECALL_TARGET]
    return min(accurate, key=lambda r: r["p50_ms"], default=None)


def verdicts(rows: list[Row], peak_mb: float) -> list[str]:
    def first(part: str, size: int, method_start: str) -> Row | None:
        return next((r for r in rows if r["part"] == part and r["size"] == size
                     and r["method"].startswith(method_start)), None)

    out = []
    if flat := first("dense", 100_000, "flat"):
        best = fastest_accurate(rows, 100_000)
        also = (f"; fastest IVF/HNSW at recall >= 0.95: {best['method']} {best['p50_ms']:.2f} ms"
                if best else "")
        out.append(verdict(TARGETS[0], f"flat {flat['p50_ms']:.2f} ms{also}", flat["p50_ms"] <= 20))
    if first("dense", 1_000_000, "flat"):
        best = fastest_accurate(rows, 1_000_000)
        figure = (f"{best['method']} {best['p50_ms']:.2f} ms at recall {best['recall_at_10']:.3f}"
                  if best else "no IVF/HNSW setting reached recall 0.95")
        out.append(verdict(TARGETS[1], figure, best is not None and best["p50_ms"] <= 10))
    if bm25 := first("bm25", 1_000_000, ""):
        out.append(verdict(TARGETS[2], f"{bm25['p50_ms']:.2f} ms", bm25["p50_ms"] <= 50))
    if reload := first("corpus", 100_000, "reload"):
        out.append(verdict(TARGETS[3], f"{reload['reload_s']:.2f} s", reload["reload_s"] <= 2))
    if embed := [r for r in rows if r["part"] == "embedding" and r["method"].startswith("MiniLM")]:
        rate = max(r["chunks_per_s"] for r in embed)
        out.append(verdict(TARGETS[4], f"{rate:.1f} chunks/s (best thread count)", rate >= 300))
    out.append(verdict("peak RSS <= 8 GB", f"{peak_mb:.0f} MB", peak_mb <= 8192))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1,
                        help="threads (FAISS, torch) for single queries; builds use every core")
    parser.add_argument("--embed-chunks", type=int, default=128)
    parser.add_argument("--corpus-sizes", default="10000,100000",
                        help="chunk counts of the ingest and reload run")
    parser.add_argument("--json-out", type=Path, default=ROOT / "docs" / "bench" / "retrieval.json")
    parser.add_argument("--no-append", action="store_true", help="do not write docs/BENCHMARKS.md")
    args = parser.parse_args()

    started, load_before = time.perf_counter(), os.getloadavg()[0]
    rng = np.random.default_rng(0)
    words = vocabulary_words()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    rows: list[Row] = []

    def collect(new: list[Row]) -> None:
        rows.extend(new)
        print(table(new), flush=True)

    for size in sizes:
        collect(bench_dense(size, args, rng))
    for size in sizes:
        collect(bench_bm25(size, args, rng, words))
    for size in (int(s) for s in args.corpus_sizes.split(",") if s):
        collect(bench_corpus(size, args, rng, words))
    collect(bench_embedding(args))
    wall_s = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    command = (f"python scripts/bench_retrieval.py --runs {args.runs} --sizes {args.sizes} "
               f"--queries {args.queries} --threads {args.threads}")
    rendered = table(rows)
    summary = "\n".join(f"- {line}" for line in verdicts(rows, peak_mb))
    notes = (
        f"Medians of {args.runs} runs; latencies are single queries ({args.queries} per run, "
        f"{args.threads} FAISS thread(s)), query vectors given (query embedding is the "
        "'embedding' rows). Dense vectors are synthetic: random unit vectors of dimension 384 "
        f"with intrinsic dimension {LATENT_DIM}, queries are noisy copies of corpus vectors. "
        "BM25 and corpus texts are synthetic Zipf-distributed English words (~200 tokens). "
        f"Build times are single measurements. Peak RSS of the whole run: {peak_mb:.0f} MB. "
        f"Wall time: {wall_s / 60:.1f} min. Load average (1 min) at start {load_before:.1f}, "
        f"at end {os.getloadavg()[0]:.1f}."
    )
    print(rendered)
    print(summary)
    print(notes)
    publish("Retrieval", command, notes, f"{rendered}\n\nTargets:\n{summary}",
            {"runs": args.runs, "rows": rows, "peak_rss_mb": peak_mb, "wall_s": wall_s},
            args.json_out, append=not args.no_append)


if __name__ == "__main__":
    main()
