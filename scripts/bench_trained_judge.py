"""Benchmark the trained judge (docs/METHODS.md 4.13): train it on SQuAD 2.0 part A with the
dataset's flags (articles held out), measure it on the held-out articles and, unchanged, on
ClapNQ (what transfers), then train and measure one on ClapNQ. Prints a table and appends it
to docs/QUALITY.md.

    python scripts/bench_trained_judge.py [--epochs 2] [--timing-samples 100]

Each figure is QPP PR-AUC (does the score rank the questions the passages answer first)
with a 95% bootstrap interval, beside keep-all (the share of answerable questions). Time
per sample: one sample scored alone (its texts, tokenising, the model's pass), median over
the timed samples. Needs ../shared/data.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_report import QUALITY_MD, bench_parser, publish  # noqa: E402
from ragshield.config import Settings  # noqa: E402
from ragshield.datasets.registry import load_dataset  # noqa: E402
from ragshield.judges.registry import make_judge  # noqa: E402
from ragshield.judges.training import Example, group_of, pair_texts, predict  # noqa: E402
from ragshield.services.judge_training import EPOCHS, held_out_metrics, train_judge  # noqa: E402
from ragshield.store.database import open_store  # noqa: E402
from ragshield.store.samples import import_samples  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
DATASETS = {"squad2-part-a": DATA / "squad2_dev_part_a.jsonl", "clapnq": DATA / "clapnq_dev.jsonl"}
TARGET_PR_AUC, TARGET_MS, TARGET_TRAIN_S = 0.80, 50.0, 15 * 60


def _interval(metrics: dict) -> str:
    low, high = metrics["pr_auc_interval"]
    return f"{metrics['pr_auc']:.3f} [{low:.3f}, {high:.3f}]"


def _timed_ms(judge, samples, count: int) -> float:
    """Median ms to score one sample alone: its texts, tokenising and the model's pass."""
    seconds = []
    for sample in samples[:count]:
        started = time.perf_counter()
        predict(judge.tokenizer, judge.model, [Example(sample.id, *pair_texts(sample), False, "")])
        seconds.append(time.perf_counter() - started)
    return 1000 * statistics.median(seconds)


def main() -> None:
    parser = bench_parser(__doc__, "trained_judge.json", runs=1)
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    parser.add_argument("--timing-samples", type=int, default=100)
    args = parser.parse_args()

    load_before = os.getloadavg()[0]
    work = Path(tempfile.mkdtemp(prefix="bench-trained-"))
    settings = Settings(cache_dir=work / "cache", database_url=f"sqlite:///{work / 'bench.db'}")
    store = open_store(settings.database_url)
    samples = {name: list(load_dataset(path)) for name, path in DATASETS.items()}
    rows, data = [], {}
    for name in DATASETS:
        import_samples(store, name, samples[name])
        info = train_judge(store, settings, f"bench-{name}", name, epochs=args.epochs)
        card = info.card
        judge = make_judge(info.judge, settings)
        held_groups = set(card.split["held_out_groups"])
        held = [s for s in samples[name] if group_of(s) in held_groups]
        ms = _timed_ms(judge, held, args.timing_samples)
        rows.append([f"trained on {name}", name, "held-out articles" if name != "clapnq"
                     else "held-out titles", str(card.metrics["n"]), _interval(card.metrics),
                     f"{card.metrics['positive_rate']:.3f}", f"{ms:.1f}",
                     f"{card.train_seconds:.0f}"])
        data[name] = {"card": card.to_dict(), "ms_per_sample": ms}
        for other in DATASETS:
            if other == name:
                continue
            examples = [Example(s.id, *pair_texts(s), bool(s.answerable), group_of(s))
                        for s in samples[other] if s.answerable is not None]
            scores = predict(judge.tokenizer, judge.model, examples)
            labels = np.asarray([e.label for e in examples], dtype=bool)
            transfer = held_out_metrics(scores, labels)
            rows.append([f"trained on {name}", other, "all (never seen)", str(transfer["n"]),
                         _interval(transfer), f"{transfer['positive_rate']:.3f}", "-", "-"])
            data[f"{name}->{other}"] = transfer
    store.close()

    lines = ["| judge | measured on | samples | n | QPP PR-AUC [95%] | keep-all | ms / sample "
             "| training s |", "|---|---|---|---|---|---|---|---|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    rendered = "\n".join(lines)
    squad = data["squad2-part-a"]
    verdicts = [
        f"QPP PR-AUC >= {TARGET_PR_AUC} on held-out SQuAD2 articles: "
        f"{'met' if squad['card']['metrics']['pr_auc'] >= TARGET_PR_AUC else 'NOT MET'}",
        f"<= {TARGET_MS:.0f} ms per sample: "
        f"{'met' if squad['ms_per_sample'] <= TARGET_MS else 'NOT MET'}",
        f"training <= {TARGET_TRAIN_S // 60} min: "
        f"{'met' if squad['card']['train_seconds'] <= TARGET_TRAIN_S else 'NOT MET'}"]
    command = (f"python scripts/bench_trained_judge.py --epochs {args.epochs} "
               f"--timing-samples {args.timing_samples}")
    notes = (f"The packaged all-MiniLM-L6-v2 fine-tuned as a cross-encoder for {args.epochs} "
             "epochs on each dataset's answerable flags, about a quarter of the articles "
             "(titles) held out; intervals: 500 bootstrap resamples. Targets: "
             + "; ".join(verdicts) + f". Load average (1 min) at start {load_before:.1f}, at "
             f"end {os.getloadavg()[0]:.1f}.")
    publish("Trained judge (QPP)", command, notes, rendered,
            {"epochs": args.epochs, "results": data}, args.json_out,
            append=not args.no_append, show=True, markdown=QUALITY_MD)


if __name__ == "__main__":
    main()
