"""Which packaged model should answer: answer correctness of each on SQuAD 2.0 part A and ClapNQ
(the full public sets, in the folder given by --data-dir), on the same balanced samples as
scripts/bench_quality.py draws, answered by the default (evidence) answerer. Appends to
docs/QUALITY.md; the time to a decision is `scripts/bench_judges.py --demo --model M`.

    python scripts/bench_answerer.py --data-dir DIR [--samples 80]
                                     [--models qwen-0.5b,qwen-1.5b]

Per model and set: of the answerable questions (the passages hold a reference answer), the
share answered correctly (a reference matched, or the --grader model says so; 95% bootstrap
interval, and the spread over bench_quality's groups); of the unanswerable ones, the share
refused; seconds per answer (median of the answer's own model time, from a cold prompt).
The paired gap between the two models is bootstrapped over the same questions. Each sample
is a resumable run of bench_quality's in the configured store (RAGSHIELD_DATABASE_URL;
default a SQLite file in the cache folder).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import psutil
from sqlalchemy import select

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_quality import DATASETS, dataset_samples, quality_run, sample_groups  # noqa: E402
from bench_report import QUALITY_MD, bench_parser, bench_settings, publish  # noqa: E402
from ragshield.config import Settings  # noqa: E402
from ragshield.evaluation import run_tables  # noqa: E402
from ragshield.grading import LLMGrader  # noqa: E402
from ragshield.llm.factory import make_llm  # noqa: E402
from ragshield.llm.packaged_models import SMALLER_MODEL, LARGER_MODEL  # noqa: E402
from ragshield.store.database import open_store  # noqa: E402
from ragshield.store.models import AnswerRow  # noqa: E402

RESAMPLES = 1000


def answers(store, settings: Settings, name: str, count: int, model: str,
            data_dir: Path, grader: LLMGrader) -> pd.DataFrame:
    """One row per sample of the run of `name` answered by `model`: answerable, correct,
    refused, the answer's seconds and the sample's group."""
    run_id = quality_run(store, settings, name, count, ["trivial"], model=model,
                         judge_model="self", data_dir=data_dir)
    samples = run_tables(store, run_id, grader=grader).samples.set_index("sample_id")
    with store.session() as session:
        traces = session.execute(select(AnswerRow.sample_id, AnswerRow.trace).where(
            AnswerRow.run_id == run_id, AnswerRow.role == "main")).all()
    seconds = [sum(call.get("seconds", 0.0) for call in trace) for _, trace in traces]
    groups = sample_groups(dataset_samples(data_dir, name))
    return pd.DataFrame({
        "sample": samples.index.astype(str), "set": name, "model": model,
        "answerable": samples["passages_support"].to_numpy(bool),
        "correct": samples["answer_correct"].to_numpy(bool),
        "refused": samples["refusal"].to_numpy(bool),
        "group": [groups[str(s)] for s in samples.index],
    }).assign(seconds=float(np.median(seconds)) if seconds else np.nan)


def bootstrap(values: np.ndarray, seed: int = 0) -> tuple[float, float]:
    """95% percentile interval of the mean of `values`."""
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), (RESAMPLES, len(values)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def per_model(frame: pd.DataFrame) -> list[dict]:
    rows = []
    for (name, model), part in frame.groupby(["set", "model"], sort=False):
        able = part[part["answerable"]]
        by_group = able.groupby("group")["correct"].mean()
        rows.append({
            "set": name, "model": model, "answerable": len(able),
            "correct": float(able["correct"].mean()),
            "interval": bootstrap(able["correct"].to_numpy(float)),
            "groups": [float(v) for v in by_group],
            "refused_unanswerable": float(part.loc[~part["answerable"], "refused"].mean()),
            "refused_answerable": float(able["refused"].mean()),
            "seconds": float(part["seconds"].iloc[0])})
    return rows


def paired_gap(frame: pd.DataFrame, first: str, second: str) -> list[dict]:
    """Per set: correct share of `second` minus `first` on the same answerable questions."""
    rows = []
    for name, part in frame[frame["answerable"]].groupby("set", sort=False):
        wide = part.pivot_table(index="sample", columns="model", values="correct").dropna()
        if first not in wide or second not in wide:
            continue
        gap = (wide[second] - wide[first]).to_numpy(float)
        rows.append({"set": name, "questions": len(gap), "gap": float(gap.mean()),
                     "interval": bootstrap(gap)})
    return rows


def main() -> None:
    parser = bench_parser(__doc__, "answerer.json", runs=1)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--samples", type=int, default=80, help="samples per set, half of them "
                                                                 "answerable")
    parser.add_argument("--models", default=f"{SMALLER_MODEL},{LARGER_MODEL}")
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--grader", default=LARGER_MODEL,
                        help="the packaged model grading the answers against the references")
    args = parser.parse_args()
    settings = bench_settings("bench_answerer.db")
    store = open_store(settings.database_url)
    started, load = time.time(), psutil.getloadavg()[0]
    models = args.models.split(",")
    grader = LLMGrader(make_llm(settings, store=store, packaged=args.grader))
    frame = pd.concat([answers(store, settings, name, args.samples, model, args.data_dir,
                               grader)
                       for name in args.datasets.split(",") for model in models],
                      ignore_index=True)
    rows = per_model(frame)
    lines = ["| set | answering model | answerable questions answered correctly [95%] | by "
             "group: median [lowest, highest] | unanswerable refused | answerable refused | "
             "seconds per answer (median) |", "|---|---|---|---|---|---|---|"]
    for row in rows:
        groups = row["groups"]
        lines.append(f"| {row['set']} ({row['answerable']}) | {row['model']} | "
                     f"{row['correct']:.0%} [{row['interval'][0]:.0%}, {row['interval'][1]:.0%}]"
                     f" | {np.median(groups):.0%} [{min(groups):.0%}, {max(groups):.0%}] | "
                     f"{row['refused_unanswerable']:.0%} | {row['refused_answerable']:.0%} | "
                     f"{row['seconds']:.1f} |")
    gaps = paired_gap(frame, models[0], models[-1]) if len(models) > 1 else []
    if gaps:
        lines += ["", f"| set | correct: {models[-1]} minus {models[0]}, same questions [95%] |",
                  "|---|---|"]
        lines += [f"| {g['set']} ({g['questions']}) | {g['gap']:+.0%} [{g['interval'][0]:+.0%}, "
                  f"{g['interval'][1]:+.0%}] |" for g in gaps]
    notes = (f"{args.samples} samples a set (half answerable), answered by the evidence "
             "answerer; correct = a reference answer matched (exact, contained, token F1 or "
             f"ROUGE-L) or the {args.grader} grading the answer accurate against the "
             "references (ClapNQ's references are whole sentences). Load average (1 min) "
             f"at start {load:.1f}, at end {psutil.getloadavg()[0]:.1f}; "
             f"{(time.time() - started) / 60:.0f} min.")
    command = "python scripts/bench_answerer.py " + " ".join(sys.argv[1:])
    publish("Which model answers", command, notes, "\n".join(lines),
            {"rows": rows, "gaps": gaps}, args.json_out, append=not args.no_append,
            show=True, markdown=QUALITY_MD)
    store.close()


if __name__ == "__main__":
    main()
