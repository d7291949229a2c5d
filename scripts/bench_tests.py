"""Benchmark the test lanes: the wall time of `make test-fast` (the daily lane, median of
--runs) and, with --full, of `make test` once (every lane, the set-up already done). Prints a
table, writes JSON, appends to docs/BENCHMARKS.md.

    python scripts/bench_tests.py [--runs 3] [--full]

Targets (issue 29): the fast lane at most 90 s; `make test` at most 20 minutes with its
install. The install is not timed here (its cost is the package caches' state: a first
llama.cpp build is about 6 minutes); CI's own time is the figure for the whole. Run it on a
quiet machine: another busy process slows every lane.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from bench_report import bench_parser, publish  # noqa: E402

FAST_TARGET_S = 90.0
FULL_TARGET_S = 20 * 60.0


def timed_make(target: str) -> float:
    """Seconds `make TARGET` took; a failing lane stops the benchmark with its output."""
    started = time.perf_counter()
    done = subprocess.run(["make", target], cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"make {target} failed (exit {done.returncode}):\n{done.stdout[-3000:]}"
                 f"\n{done.stderr[-3000:]}")
    return seconds


def main() -> None:
    parser = bench_parser(__doc__, "tests.json", runs=3)
    parser.add_argument("--full", action="store_true", help="also time `make test` once")
    args = parser.parse_args()
    timed_make("setup")  # nothing to do when the set-up is done; never timed
    load_start = os.getloadavg()[0]
    fast = [timed_make("test-fast") for _ in range(args.runs)]
    full = timed_make("test") if args.full else None
    load_end = os.getloadavg()[0]
    fast_median = statistics.median(fast)
    rows = [("make test-fast (median of %d)" % len(fast), f"{fast_median:.0f} s",
             f"<= {FAST_TARGET_S:.0f} s", "met" if fast_median <= FAST_TARGET_S else "not met")]
    if full is not None:
        rows.append(("make test (once, set-up done)", f"{full / 60:.1f} min",
                     f"<= {FULL_TARGET_S / 60:.0f} min with the install",
                     "met" if full <= FULL_TARGET_S else "not met"))
    body = "| lane | wall time | target | |\n|---|---|---|---|\n" + "\n".join(
        f"| {' | '.join(row)} |" for row in rows)
    notes = (f"Each fast-lane run: {', '.join(f'{s:.0f} s' for s in fast)}. Load average "
             f"(1 min) at start {load_start:.1f}, at end {load_end:.1f}.")
    command = "python scripts/bench_tests.py" + (" --full" if args.full else "") + (
        f" --runs {args.runs}" if args.runs != 3 else "")
    publish("Test lanes", command, notes, body,
            {"fast_s": fast, "full_s": full, "load": [load_start, load_end]},
            args.json_out, append=not args.no_append, show=True)


if __name__ == "__main__":
    main()
