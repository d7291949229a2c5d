"""Benchmark the metric engine: `judge_metrics` over a synthetic verdict table of 100,000
samples x 10 judges (six scored, four hard), with the bootstrap (1000 resamples) and without.
Prints a table, writes JSON, appends to docs/BENCHMARKS.md.

    python scripts/bench_metrics.py [--runs 5] [--samples 100000] [--judges 10]

Data: answer_correct ~ Bernoulli(0.6); passages_support is true for 90% of correct answers
and 40% of the others. A scored judge's score is a noisy logistic function of correctness and
it keeps score >= 0.5; a hard judge keeps the correct answers with probability 0.8 and the
others with 0.3. 1% of each judge's verdicts are null (judge failed), sample ids are strings.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_report import bench_parser, publish  # noqa: E402
from ragshield.metrics.summary import judge_metrics  # noqa: E402

TARGETS = {1000: 5.0, 0: 0.5}  # seconds, by n_resamples
SCORED_SHARE = 0.6
FAILED_SHARE = 0.01


def verdict_table(samples: int, judges: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    correct = rng.random(samples) < 0.6
    support = rng.random(samples) < np.where(correct, 0.9, 0.4)
    sample_ids = np.array([f"q{i:07d}" for i in range(samples)], dtype=object)
    scored = round(judges * SCORED_SHARE)
    frames = []
    for j in range(judges):
        if j < scored:
            score = 1 / (1 + np.exp(-(2.0 * correct - 1 + rng.normal(0, 1.5, samples))))
            keep = score >= 0.5
        else:
            score = np.full(samples, np.nan)
            keep = rng.random(samples) < np.where(correct, 0.8, 0.3)
        keep = pd.array(keep, dtype="boolean")
        keep[rng.random(samples) < FAILED_SHARE] = pd.NA
        frames.append(pd.DataFrame({
            "sample_id": sample_ids, "judge": f"{'scored' if j < scored else 'hard'}_{j}",
            "keep": keep, "score": score, "answer_correct": correct,
            "passages_support": support}))
    return pd.concat(frames, ignore_index=True)


def timed(table: pd.DataFrame, n_resamples: int, runs: int) -> list[float]:
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        judge_metrics(table, n_resamples=n_resamples)
        seconds.append(time.perf_counter() - started)
    return seconds


def main() -> None:
    parser = bench_parser(__doc__, "metrics.json")
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--judges", type=int, default=10)
    args = parser.parse_args()

    load_before = os.getloadavg()[0]
    table = verdict_table(args.samples, args.judges)
    judge_metrics(table.head(1000))  # warm-up: imports, first allocations
    rows = []
    for n_resamples, target in TARGETS.items():
        seconds = timed(table, n_resamples, args.runs)
        median = statistics.median(seconds)
        rows.append({"n_resamples": n_resamples, "median_s": median, "runs_s": seconds,
                     "target_s": target, "met": median <= target})

    lines = ["| bootstrap resamples | median s | min s | max s | target s | met |",
             "|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['n_resamples']} | {row['median_s']:.3f} | {min(row['runs_s']):.3f} "
                     f"| {max(row['runs_s']):.3f} | {row['target_s']:.1f} | "
                     f"{'met' if row['met'] else 'NOT MET'} |")
    rendered = "\n".join(lines)
    command = (f"python scripts/bench_metrics.py --runs {args.runs} --samples {args.samples} "
               f"--judges {args.judges}")
    notes = (
        f"Medians of {args.runs} runs of `judge_metrics` over a synthetic long table of "
        f"{args.samples:,} samples x {args.judges} judges ({len(table):,} rows; "
        f"{round(args.judges * SCORED_SHARE)} scored judges with PR sweep and AURC, the rest "
        f"hard; {FAILED_SHARE:.0%} null verdicts). Times include the per-judge split of the "
        "table, every point metric and, with resamples, the percentile bootstrap of the ten "
        "count-based metrics of every judge. Load average (1 min) at start "
        f"{load_before:.1f}, at end {os.getloadavg()[0]:.1f}."
    )
    publish("Metrics", command, notes, rendered,
            {"runs": args.runs, "samples": args.samples, "judges": args.judges, "rows": rows},
            args.json_out, append=not args.no_append, show=True)


if __name__ == "__main__":
    main()
