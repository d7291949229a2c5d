"""Does the policy promise hold on real runs? For each judge of a run: fit a policy on a random
half of the run's labelled samples (people's labels, reference answers and the unanswerable
flag), count the wrong answers it shows on the other half; 200 splits. Prints a table,
writes JSON, appends to docs/QUALITY.md.

    python scripts/bench_policy_promise.py [--store URL --run ID] [--alphas 0.2,0.3,0.4]
        [--delta 0.1] [--splits 200] [--starts 1,2,4]

Default run: the shipped demo run (ragshield/assets/demo/run.json.xz), loaded into a temporary
SQLite store. Any stored run: --store and --run (e.g. a SQuAD 2.0 run made with `ragshield run`).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_report import QUALITY_MD, bench_parser, publish  # noqa: E402
from ragshield.evaluation import run_tables  # noqa: E402
from ragshield.policies.promise_check import check_promise  # noqa: E402
from ragshield.services.data.demo_run import load_demo_run  # noqa: E402
from ragshield.services.learning.policies import TRUTH, judge_scores, labelled_scores  # noqa: E402
from ragshield.store.database import open_store  # noqa: E402
from ragshield.store.runs import get_run  # noqa: E402


def numbers(text: str, kind: type = float) -> list:
    return [kind(part) for part in text.split(",") if part.strip()]


def main() -> None:
    parser = bench_parser(__doc__, "policy_promise.json", runs=1)
    parser.add_argument("--store", help="a SQLAlchemy URL (default: the shipped demo run)")
    parser.add_argument("--run", type=int, help="the run's id in --store")
    parser.add_argument("--alphas", default="0.2,0.3,0.4")
    parser.add_argument("--delta", type=float, default=0.1)
    parser.add_argument("--splits", type=int, default=200)
    parser.add_argument("--starts", default="1,2,4")
    parser.add_argument("--judges", help="comma-separated (default: every judge with scores)")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]

    with tempfile.TemporaryDirectory() as folder:
        url = args.store or f"sqlite:///{folder}/promise.db"
        store = open_store(url)
        try:
            run_id = args.run if args.store else load_demo_run(store)
            dataset = get_run(store, run_id).dataset
            tables = run_tables(store, run_id, TRUTH)
        finally:
            store.close()
    scored = tables.verdicts.loc[tables.verdicts["score"].notna(), "judge"]
    judges = numbers(args.judges, str) if args.judges else sorted(set(scored))

    rows = []
    for judge in judges:
        data = labelled_scores(tables, judge_scores(tables, judge))
        for alpha in numbers(args.alphas):
            for starts in numbers(args.starts, int):
                check = check_promise(data.scores, data.good, alpha, args.delta,
                                      args.splits, starts=starts)
                rows.append({"judge": judge, "alpha": alpha, "starts": starts,
                             "labels": int(data.scores.size), "good": int(data.good.sum()),
                             "fitted": check.fitted, "breaches": check.breaches,
                             "breach_share": check.breach_share,
                             "allowance": check.allowance, "coverage": check.coverage,
                             "risk": check.risk,
                             "held": check.held})
    lines = ["| judge | alpha | starts | labels (good) | fitted / splits | breach share | "
             "held (<= delta + 3 SE) | median coverage | median risk |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(
            f"| {row['judge']} | {row['alpha']:g} | {row['starts']} | {row['labels']} "
            f"({row['good']}) | {row['fitted']} / {args.splits} | {row['breach_share']:.3f} | "
            f"{'yes' if row['held'] else 'NO'} | {row['coverage']:.3f} | {row['risk']:.3f} |")
    source = f"run {run_id} of {args.store}" if args.store else "the shipped demo run"
    command = ("python scripts/bench_policy_promise.py"
               + (f" --store URL --run {run_id}" if args.store else "")
               + f" --alphas {args.alphas} --delta {args.delta} --splits {args.splits} "
               f"--starts {args.starts}")
    notes = (f"{source} (dataset {dataset}): each judge's labelled samples split at random "
             f"{args.splits} times; a policy fitted on one half (delta {args.delta}, "
             "`starts` LTT sequences), its answers counted on the other. Breach share: the "
             "splits whose unseen half shows risk above alpha, over all splits (a refused fit "
             "shows nothing and cannot breach); it must be at most delta plus three Monte "
             "Carlo standard errors. Coverage and risk: medians over the fitted splits, on the "
             f"unseen half. Load average (1 min) at start {load_before:.1f}, at end "
             f"{os.getloadavg()[0]:.1f}.")
    publish(f"Policy promise on real labels: {dataset}", command, notes, "\n".join(lines),
            {"source": source, "dataset": dataset, "delta": args.delta,
             "splits": args.splits, "rows": rows},
            args.json_out, append=not args.no_append, show=True, markdown=QUALITY_MD)


if __name__ == "__main__":
    main()
