"""Benchmark the judges: LLM calls, tokens and seconds per sample for each judge on demo
samples with the embedded model, as ratios to the base answer's own time, and the time of a
fully cached rerun. Prints a table, writes JSON, appends to docs/BENCHMARKS.md.

    python scripts/bench_judges.py [--samples 20] [--judges all] [--seed 0]
    python scripts/bench_judges.py --demo [--samples 10] [--judge-model qwen-1.5b]
                                   [--model qwen-1.5b]

--demo times what a Demo user waits for, asking stored demo samples as the Demo does by
default (its judges and rule): the first streamed answer token against the time the model
takes to read the prompt, the default judges against the base answer, and the same question
asked again (replayed from the call cache). The judges read from the default readers
(pre_answer and p_true from the packaged 1.5B); with --judge-model every judge reads from that
model (self: the answering model); with --model that packaged model answers.
"""

from __future__ import annotations

import argparse
import os
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
from ragshield.llm.packaged_models import default_answer_model  # noqa: E402
from ragshield.store.database import open_store  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--judges", default="all")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--demo", action="store_true",
                        help="time the Demo's default ask instead (first token, judges, replay)")
    parser.add_argument("--judge-model", default=None,
                        help="with --demo: the model every judge reads from (e.g. qwen-1.5b, "
                             "or self); default: the default readers")
    parser.add_argument("--model", default=None,
                        help="with --demo: the packaged model that answers (e.g. qwen-1.5b); "
                             "default: the configured one")
    parser.add_argument("--json-out", type=Path, default=None)
    parser.add_argument("--no-append", action="store_true")
    args = parser.parse_args()
    if args.demo:
        demo_latency(args)
    else:
        judge_costs(args)


def _read_only(llm, messages) -> float:
    """Seconds the model takes to read `messages` (and write one token), from a cold prefix:
    an unrelated prompt goes first, so nothing of this one is in llama.cpp's KV cache."""
    llm.chat([{"role": "user", "content": "Say nothing."}], max_tokens=1)
    return llm.chat(messages, max_tokens=1).seconds


def demo_latency(args: argparse.Namespace) -> None:
    from ragshield.services.data.datasets import ensure_demo_dataset
    from ragshield.services.questions.ask_types import AskRequest
    from ragshield.services.questions.asking import OpenedModels, ask
    from ragshield.services.questions.settlement import ask_readers
    from ragshield.services.questions.demo_examples import demo_request
    from ragshield.store.samples import list_samples

    rows = []
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(database_url=f"sqlite:///{folder}/bench.db",
                            judge_model=args.judge_model, model=args.model)
        store = open_store(settings.database_url)
        ensure_demo_dataset(store)
        ids = [s.id for s in list_samples(store, "demo")]
        ids = random.Random(args.seed).sample(ids, min(args.samples, len(ids)))
        models = OpenedModels(settings, store)
        inner = models.llm().inner  # the model itself, under the call cache
        for sample_id in ids:
            request = demo_request(sample_id, settings)
            inner.chat([{"role": "user", "content": "Say nothing."}], max_tokens=1)
            seen: dict[str, float] = {}
            started = started_ask = time.perf_counter()
            result = ask(store, settings, models, request,
                         post=lambda event: seen.setdefault(type(event).__name__,
                                                            time.perf_counter()))
            done = time.perf_counter()
            answer_at = seen["Answered"] - started
            first = seen.get("Partial", seen["Answered"]) - started
            read = _read_only(inner, result.judged.answer.messages)
            started = time.perf_counter()
            ask(store, settings, models, request)
            replay = time.perf_counter() - started
            rows.append({"sample": sample_id, "first_token_s": first, "prompt_read_s": read,
                         "answer_s": answer_at, "judges_s": done - seen["Answered"],
                         "decision_s": seen["Decided"] - started_ask,
                         "replay_s": replay, "judges": len(result.judged.verdicts)})
            print(f"{sample_id}: first token {first:.2f} s (prompt read {read:.2f} s), "
                  f"answer {answer_at:.2f} s, judges {done - seen['Answered']:.2f} s, "
                  f"replayed {replay:.3f} s", flush=True)
        store.close()

    def median(key: str) -> float:
        return statistics.median(row[key] for row in rows)
    first_ratio = statistics.median(r["first_token_s"] / r["prompt_read_s"] for r in rows)
    judges_ratio = statistics.median(r["judges_s"] / r["answer_s"] for r in rows)
    decision_ratio = statistics.median(r["decision_s"] / r["prompt_read_s"] for r in rows)
    table = "\n".join([
        "| measure | median | target |", "|---|---|---|",
        f"| first answer token | {median('first_token_s'):.2f} s | |",
        f"| prompt read (cold, 1 token) | {median('prompt_read_s'):.2f} s | |",
        f"| first token / prompt read | {first_ratio:.2f}x | <= 1.5x |",
        f"| base answer | {median('answer_s'):.2f} s | |",
        f"| default judges after the answer | {median('judges_s'):.2f} s | |",
        f"| judges / base answer | {judges_ratio:.2f}x | <= 2x |",
        f"| time to the decision | {median('decision_s'):.2f} s | |",
        f"| time to the decision / prompt read | {decision_ratio:.2f}x | <= 1.3x |",
        f"| the same question again (replayed) | {median('replay_s'):.3f} s | < 1 s |",
    ])
    print(table)
    chosen = Settings(judge_model=args.judge_model, model=args.model)
    judges = ", ".join(demo_request("x", chosen).judges)
    readers = ask_readers(AskRequest(), chosen).describe()
    answering = args.model or f"{default_answer_model()} (the default)"
    publish(
        "Demo latency" + (f" ({args.model} answering)" if args.model else "")
        + (f" (judges read by {args.judge_model})" if args.judge_model
           else " (the default readers)"),
        f"python scripts/bench_judges.py --demo --samples {args.samples} --seed {args.seed}"
        + (f" --model {args.model}" if args.model else "")
        + (f" --judge-model {args.judge_model}" if args.judge_model else ""),
        f"Embedded {answering} answering; the judges' readers: {readers}; {len(rows)} stored "
        "demo samples asked as the Demo asks by "
        f"default (judges {judges}; rule {chosen.decision_rule}), from an empty call "
        f"cache; times from the click's start. Load average (1 min) at start {load_before:.1f}, "
        f"at end {os.getloadavg()[0]:.1f}.",
        table, {"samples": rows, "first_token_ratio": first_ratio,
                "judges_ratio": judges_ratio, "decision_ratio": decision_ratio},
        args.json_out or ROOT / "docs" / "bench" / (
            "demo_latency_reader.json" if args.judge_model or args.model
            else "demo_latency.json"),
        append=not args.no_append,
    )


def judge_costs(args: argparse.Namespace) -> None:
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

    lines = [("| judge | calls | prompt tok | of which cached | completion tok | seconds "
              "| x base answer |"),
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
        args.json_out or ROOT / "docs" / "bench" / "judges.json", append=not args.no_append,
    )


if __name__ == "__main__":
    main()
