"""Benchmark labelling: label writes with 4 concurrent writer processes on SQLite (p50 / p95
per write), sentence labels by 8 people at once on SQLite and on PostgreSQL (each one what the
Annotate tab does for a mark: store it, then read the answer's sentences again), and the
next-item queue query on a dataset of 100,000 samples. Prints a table, writes JSON, appends to
docs/BENCHMARKS.md.

    python scripts/bench_labels.py [--runs 3] [--samples 100000] [--writers 4] [--writes 200]
                                   [--sentence-people 8] [--postgres ADMIN_URL | --no-postgres]

The queue dataset is synthetic (short questions, no passages). Before timing, 10% of its
samples carry a label by another annotator and the timed annotator has labelled the first
2,000; a run gives every sample a judge-disagreement value. Each timed query asks for the
next sample, then labels it, so the queue moves as it does for a person.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_report import publish  # noqa: E402
from sqlalchemy import insert, select  # noqa: E402

from ragshield.services.annotation.sentence_labelling import (item_sentences,  # noqa: E402
                                                           label_sentence)
from ragshield.store.annotation_item import annotation_item  # noqa: E402
from ragshield.store.annotation_queue import next_sample  # noqa: E402
from ragshield.store.database import open_store  # noqa: E402
from ragshield.store.labels import add_annotator, add_label  # noqa: E402
from ragshield.store.models import AnswerRow, Label, Run, Sample as SampleRow  # noqa: E402
from ragshield.store.sample_import import import_samples  # noqa: E402
from ragshield.testing.replicas import fresh_postgres  # noqa: E402
from ragshield.types import Sample  # noqa: E402

WRITE_P95_TARGET_MS = 20.0
QUEUE_TARGET_MS = 50.0
SENTENCE_P95_TARGET_MS = 300.0  # issue 57: a sentence mark with 8 people at once
SENTENCE_ANSWERS = 200
SENTENCE_ANSWER = ("The Normans descended from Norse raiders. Their leader was Rollo. "
                   "They gave their name to Normandy in the tenth century.")
POSTGRES_ADMIN = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
LABELS = ("answerable", "unanswerable", "unsure")
SENTENCE_LABELS = ("supported", "unsupported", "unsure")


def _writer(url: str, name: str, samples: int, writes: int, seed: int) -> list[float]:
    store = open_store(url)
    rng = random.Random(seed)
    latencies = []
    for j in range(writes):
        started = time.perf_counter()
        add_label(store, "bench", f"s{rng.randrange(samples)}", name, LABELS[j % 3],
                  note=f"{name} {j}")
        latencies.append((time.perf_counter() - started) * 1000)
    store.close()
    return latencies


def bench_writes(folder: Path, writers: int, writes: int, run: int) -> list[float]:
    url = f"sqlite:///{folder / f'writes{run}.db'}"
    store = open_store(url)
    import_samples(store, "bench", (Sample(id=f"s{i}", question=f"q{i}") for i in range(1000)))
    names = [f"w{i}" for i in range(writers)]
    for name in names:
        add_annotator(store, name)
    store.close()
    with multiprocessing.get_context("spawn").Pool(writers) as pool:
        results = pool.starmap(_writer,
                               [(url, name, 1000, writes, i) for i, name in enumerate(names)])
    return [ms for result in results for ms in result]


def build_sentence_db(url: str, people: int) -> None:
    """SENTENCE_ANSWERS samples, each answered with SENTENCE_ANSWER (three sentences) by a run."""
    store = open_store(url)
    import_samples(store, "sentences", (Sample(id=f"s{i}", question=f"Who were they {i}?")
                                        for i in range(SENTENCE_ANSWERS)))
    for person in range(people):
        add_annotator(store, f"p{person}")
    with store.session() as session:
        ids = list(session.scalars(select(SampleRow.id).order_by(SampleRow.id)))
        run = Run(dataset_id=1, config={"dataset": "sentences"}, samples_total=len(ids),
                  status="done")
        session.add(run)
        session.flush()
        session.execute(insert(AnswerRow), [
            {"run_id": run.id, "sample_id": i, "role": "main", "answerer": "given",
             "text": SENTENCE_ANSWER} for i in ids])
    store.close()


def _sentence_writer(url: str, name: str, writes: int, seed: int) -> list[float]:
    """`writes` sentence marks, each stored and followed by a fresh read of the answer's
    sentences (the tab's handler), on random answers."""
    store = open_store(url)
    rng = random.Random(seed)
    latencies = []
    for j in range(writes):
        sample = f"s{rng.randrange(SENTENCE_ANSWERS)}"
        started = time.perf_counter()
        label_sentence(store, "sentences", sample, name, SENTENCE_LABELS[j % 3],
                       index=1 + j % 3, answer_text=SENTENCE_ANSWER)
        item_sentences(store, annotation_item(store, "sentences", sample, name), name)
        latencies.append((time.perf_counter() - started) * 1000)
    store.close()
    return latencies


def bench_sentences(url: str, people: int, writes: int) -> list[float]:
    build_sentence_db(url, people)
    with multiprocessing.get_context("spawn").Pool(people) as pool:
        results = pool.starmap(_sentence_writer,
                               [(url, f"p{i}", writes, i) for i in range(people)])
    return [ms for result in results for ms in result]


def build_queue_db(url: str, samples: int) -> None:
    store = open_store(url)
    import_samples(store, "big",
                   (Sample(id=f"s{i}", question=f"question {i}") for i in range(samples)))
    other, me = add_annotator(store, "other"), add_annotator(store, "me")
    rng = np.random.default_rng(0)
    with store.session() as session:
        ids = list(session.scalars(select(SampleRow.id).order_by(SampleRow.id)))
        labelled = rng.choice(ids, size=len(ids) // 10, replace=False)
        session.execute(insert(Label), [{"sample_id": int(i), "annotator_id": other,
                                         "label": "answerable", "passages_shown": []}
                                        for i in labelled])
        session.execute(insert(Label), [{"sample_id": i, "annotator_id": me,
                                         "label": "unsure", "passages_shown": []}
                                        for i in ids[:2000]])
        run = Run(dataset_id=1, config={}, samples_total=len(ids), status="done")
        session.add(run)
        session.flush()
        session.execute(insert(AnswerRow), [
            {"run_id": run.id, "sample_id": i, "role": "main", "answerer": "evidence",
             "text": "x", "disagreement": float(d)}
            for i, d in zip(ids, rng.choice([0.0, 0.5, 1.0], size=len(ids)))])
    store.close()


def bench_queue(url: str, strategy: str, overlap: int, queries: int) -> list[float]:
    store = open_store(url)
    latencies = []
    for _ in range(queries):
        started = time.perf_counter()
        found = next_sample(store, "big", "me", strategy=strategy, overlap=overlap, seed=1)
        latencies.append((time.perf_counter() - started) * 1000)
        add_label(store, "big", found, "me", "answerable")
    store.close()
    return latencies


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--sentence-people", type=int, default=8)
    parser.add_argument("--sentence-writes", type=int, default=50, help="per person and run")
    parser.add_argument("--postgres", default=POSTGRES_ADMIN,
                        help="an admin URL of a PostgreSQL server (a database is made and dropped)")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--json-out", type=Path, default=ROOT / "docs" / "bench" / "labels.json")
    parser.add_argument("--no-append", action="store_true")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        writes = [bench_writes(folder, args.writers, args.writes, run) for run in range(args.runs)]
        rows.append({"what": f"label write, {args.writers} writer processes, SQLite",
                     "p50_ms": statistics.median(pct(w, 50) for w in writes),
                     "p95_ms": statistics.median(pct(w, 95) for w in writes),
                     "target_ms": WRITE_P95_TARGET_MS, "of": "p95"})
        servers = [("SQLite", None)] + ([] if args.no_postgres else [("PostgreSQL", True)])
        for database, postgres in servers:
            runs = []
            for run in range(args.runs):
                if postgres:
                    with fresh_postgres(args.postgres) as pg_url:
                        runs.append(bench_sentences(pg_url, args.sentence_people,
                                                    args.sentence_writes))
                else:
                    runs.append(bench_sentences(f"sqlite:///{folder / f'sentences{run}.db'}",
                                                args.sentence_people, args.sentence_writes))
            rows.append({"what": f"sentence label and the sentences read again, "
                                 f"{args.sentence_people} people at once, {database}",
                         "p50_ms": statistics.median(pct(r, 50) for r in runs),
                         "p95_ms": statistics.median(pct(r, 95) for r in runs),
                         "target_ms": SENTENCE_P95_TARGET_MS, "of": "p95"})
        url = f"sqlite:///{folder / 'queue.db'}"
        started = time.perf_counter()
        build_queue_db(url, args.samples)
        build_s = time.perf_counter() - started
        for strategy, overlap in (("unlabelled", 1), ("unlabelled", 2), ("random", 1),
                                  ("disagreement", 1)):
            runs = [bench_queue(url, strategy, overlap, args.queries) for _ in range(args.runs)]
            rows.append({"what": f"next item, {strategy}, overlap {overlap}, "
                                 f"{args.samples:,} samples",
                         "p50_ms": statistics.median(pct(r, 50) for r in runs),
                         "p95_ms": statistics.median(pct(r, 95) for r in runs),
                         "target_ms": QUEUE_TARGET_MS, "of": "p95"})
    for row in rows:
        row["met"] = "met" if row["p95_ms"] <= row["target_ms"] else "NOT met"
    header = "| what | p50 ms | p95 ms | target (p95) ms | met |\n|---|---|---|---|---|\n"
    body = header + "\n".join(f"| {r['what']} | {r['p50_ms']:.2f} | {r['p95_ms']:.2f} | "
                              f"{r['target_ms']:.0f} | {r['met']} |" for r in rows)
    print(body)
    command = "python scripts/bench_labels.py " + " ".join(sys.argv[1:])
    notes = (f"Medians over {args.runs} runs of each run's p50 / p95. Writes: {args.writers} "
             f"processes x {args.writes} labels on a 1,000-sample dataset. Sentence labels: "
             f"{args.sentence_people} processes x {args.sentence_writes} marks on "
             f"{SENTENCE_ANSWERS} three-sentence answers. Queue: "
             f"{args.queries} next-item queries per run, each followed by a label; the "
             f"{args.samples:,}-sample database took {build_s:.0f} s to build. Load average "
             f"(1 min) at start {load_before:.1f}, at end {os.getloadavg()[0]:.1f}.")
    publish("Labels", command.strip(), notes, body, {"runs": args.runs, "rows": rows},
            args.json_out, append=not args.no_append)


if __name__ == "__main__":
    main()
