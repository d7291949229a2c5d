"""Benchmark the judges: LLM calls, tokens and seconds per sample for each judge on demo
samples with the embedded model, as ratios to the base answer's own time, and the time of a
fully cached rerun. Prints a table, writes JSON, appends to docs/BENCHMARKS.md.

    python scripts/bench_judges.py [--samples 20] [--judges all] [--seed 0]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_report import publish  # noqa: E402
from ragshield.answerers.registry import make_answerer  # noqa: E402
from ragshield.config import Settings  # noqa: E402
from ragshield.datasets import load_dataset  # noqa: E402
from ragshield.datasets.demo import DEMO_SAMPLES  # noqa: E402
from ragshield.judges.registry import make_judges  # noqa: E402
from ragshield.judging import judge_samples  # noqa: E402
from ragshield.llm.call_cache import CachedLLM  # noqa: E402
from ragshield.llm.factory import make_llm  # noqa: E402
from ragshield.store.database import open_store  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--judges", default="all")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json-out", type=Path, default=ROOT / "docs" / "bench" / "judges.json")
    parser.add_argument("--no-append", action="store_true")
    args = parser.parse_args()

    settings = Settings()
    samples = list(load_dataset(DEMO_SAMPLES))
    samples = random.Random(args.seed).sample(samples, min(args.samples, len(samples)))
    judges = make_judges(args.judges, settings)
    answerer = make_answerer("evidence")
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(f"sqlite:///{folder}/bench.db")
        llm = CachedLLM(make_llm(Settings(llm_cache=False)), store)

        started = time.perf_counter()
        results = list(judge_samples(samples, llm, answerer, judges))
        live_total = time.perf_counter() - started

        started = time.perf_counter()
        replayed = list(judge_samples(samples, llm, answerer, judges))
        cached_total = time.perf_counter() - started
        assert all(c.cache_hit for r in replayed for v in r.verdicts for c in v.trace)
        store.close()

    per_judge: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    base_seconds, all_ratio = [], []
    for result in results:
        base = sum(c.seconds for c in result.answer.calls)
        base_seconds.append(base)
        judged_seconds = 0.0
        for verdict in result.verdicts:
            cost = verdict.cost
            judged_seconds += cost.seconds
            row = per_judge[verdict.judge]
            row["calls"].append(cost.calls)
            row["prompt_tokens"].append(cost.prompt_tokens)
            row["cached_prompt_tokens"].append(cost.cached_prompt_tokens)
            row["completion_tokens"].append(cost.completion_tokens)
            row["seconds"].append(cost.seconds)
            row["ratio"].append(cost.seconds / base)
        all_ratio.append(judged_seconds / base)

    lines = ["| judge | calls | prompt tok | of which cached | completion tok | seconds | x base answer |",
             "|---|---|---|---|---|---|---|"]
    summary: dict[str, dict[str, float]] = {}
    for judge, row in per_judge.items():
        med = {key: statistics.median(values) for key, values in row.items()}
        summary[judge] = med
        lines.append(f"| {judge} | {med['calls']:.0f} | {med['prompt_tokens']:.0f} | "
                     f"{med['cached_prompt_tokens']:.0f} | {med['completion_tokens']:.0f} | "
                     f"{med['seconds']:.2f} | {med['ratio']:.2f} |")
    table = "\n".join(lines)
    totals = (
        f"Base answer: median {statistics.median(base_seconds):.2f} s per sample. All judges "
        f"together: median {statistics.median(all_ratio):.2f}x the base answer (target <= 4x); "
        f"counterfactual: {summary.get('counterfactual', {}).get('ratio', float('nan')):.2f}x "
        f"(target <= 2x). Live run {live_total:.1f} s; fully cached rerun of {len(samples)} "
        f"samples x {len(judges)} judges: {cached_total:.2f} s (target <= 2 s)."
    )
    print(table)
    print(totals)
    publish(
        "Judges",
        f"python scripts/bench_judges.py --samples {args.samples} --judges {args.judges} "
        f"--seed {args.seed}",
        f"Embedded Qwen2.5-0.5B, evidence answerer, medians over {len(samples)} demo samples; "
        "seconds are each judge's own model time.",
        f"{table}\n\n{totals}",
        {"samples": len(samples), "per_judge_median": summary, "base_seconds": base_seconds,
         "all_judges_ratio": all_ratio, "live_total_s": live_total,
         "cached_rerun_s": cached_total},
        args.json_out, append=not args.no_append,
    )


if __name__ == "__main__":
    main()
