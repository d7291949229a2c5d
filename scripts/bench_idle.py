"""Benchmark the idle app: the CPU the app process uses with no client connected, right after
start and again after one Demo question. Prints a table, writes JSON, appends to
docs/BENCHMARKS.md.

    python scripts/bench_idle.py [--window 60] [--settle 10] [--judges trivial,token_prob]
                                 [--typed QUESTION]

The app runs as `python -m ragshield serve` on a temporary SQLite database holding the demo
dataset (ragshield/testing/servers.py). Each idle window measures the CPU time (user +
system) of the app process and its children with psutil, so the figure is the app's own use
even while the machine has other load; the load average is reported anyway. The Demo
question goes through gradio_client (`demo_ask`), on the stored demo sample with the least
text (its own passages, no retrieval) unless --typed asks a typed question (retrieved by
hybrid search from the demo corpus, which loads the embedding model; the corpus is ingested
on first use). The client is closed, and the window starts `--settle` seconds later. The
threads that used the most CPU in each window are printed too (the kernel's name, from
/proc, or "main thread").
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_report import publish  # noqa: E402
from gradio_client import Client  # noqa: E402

from ragshield.datasets.demo import DEMO_DATASET  # noqa: E402
from ragshield.services.data.datasets import ensure_demo_dataset  # noqa: E402
from ragshield.store.database import Store, open_store  # noqa: E402
from ragshield.store.samples import list_samples, load_sample  # noqa: E402
from ragshield.testing.servers import launched_app  # noqa: E402

TARGET_PERCENT = 1.0  # of one core, idle


@dataclass
class Window:
    phase: str
    seconds: float
    cpu_s: float
    threads: list[tuple[str, float]]  # (thread name [tid], CPU s), busiest first

    @property
    def percent(self) -> float:
        return 100 * self.cpu_s / self.seconds


def _processes(pid: int) -> list[psutil.Process]:
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of the process and its living children."""
    total = 0.0
    for process in _processes(pid):
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def _thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds of every thread of the process and its children, by 'name [tid]'."""
    ticks = os.sysconf("SC_CLK_TCK")
    result = {}
    for process in _processes(pid):
        for task in Path(f"/proc/{process.pid}/task").glob("*"):
            try:
                comm = (task / "comm").read_text().strip()
                fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            # after the name: state is field 3, utime and stime are fields 14 and 15
            name = "main thread" if task.name == str(process.pid) else comm
            result[f"{name} [{task.name}]"] = (int(fields[11]) + int(fields[12])) / ticks
    return result


def idle_window(pid: int, phase: str, seconds: float) -> Window:
    threads_before, cpu_before = _thread_cpu(pid), _cpu_s(pid)
    started = time.monotonic()
    time.sleep(seconds)
    cpu_after, threads_after = _cpu_s(pid), _thread_cpu(pid)
    elapsed = time.monotonic() - started
    deltas = sorted(((name, cpu - threads_before.get(name, 0.0))
                     for name, cpu in threads_after.items()), key=lambda t: -t[1])
    return Window(phase, elapsed, cpu_after - cpu_before, [d for d in deltas if d[1] > 0][:5])


def cheapest_sample(store: Store) -> str:
    """The answerable demo sample with the least text to read (question and passages)."""
    samples = [load_sample(store, DEMO_DATASET, s.id)
               for s in list_samples(store, DEMO_DATASET) if s.answerable]
    return min(samples, key=lambda s: len(s.question) + sum(len(p.text) for p in s.passages)).id


def ask_one_question(url: str, judges: str, typed: str | None, sample_id: str) -> float:
    """Ask one Demo question through gradio_client and close the client; its seconds."""
    client = Client(url, verbose=False)
    try:
        started = time.monotonic()
        judge_names = judges.split(",")
        source, question, sample = ("type a question", typed, None) if typed else \
            ("stored sample", "", sample_id)
        html = client.predict(source, question, DEMO_DATASET, sample, "demo", "hybrid", 3, 0,
                              "evidence", judge_names, "majority", "abstain message",
                              "configured", api_name="/demo_ask")
        seconds = time.monotonic() - started
    finally:
        client.close()
    if "Done in" not in html:
        raise RuntimeError(f"the Demo question did not finish: {html[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=float, default=60.0, help="seconds of each idle window")
    parser.add_argument("--settle", type=float, default=10.0,
                        help="seconds waited before each window")
    parser.add_argument("--judges", default="trivial,token_prob")
    parser.add_argument("--typed", default=None, metavar="QUESTION",
                        help="ask this typed question (hybrid retrieval), not a stored sample")
    parser.add_argument("--no-append", action="store_true",
                        help="print only: write neither BENCHMARKS.md nor the JSON")
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="bench_idle_"))
    database_url = f"sqlite:///{folder / 'idle.db'}"
    store = open_store(database_url)
    try:
        ensure_demo_dataset(store)
        sample_id = cheapest_sample(store)
    finally:
        store.close()
    load_before = os.getloadavg()[0]
    windows: list[Window] = []
    with launched_app(database_url, folder) as (url, process):
        time.sleep(args.settle)
        windows.append(idle_window(process.pid, "idle after start (no client)", args.window))
        question_s = ask_one_question(url, args.judges, args.typed, sample_id)
        time.sleep(args.settle)
        windows.append(idle_window(process.pid, "idle after one Demo question (client closed)",
                                   args.window))
        rss_mb = sum(p.memory_info().rss for p in _processes(process.pid)) / 2**20
    load_after = os.getloadavg()[0]

    header = "| phase | window s | CPU s | % of one core | busiest threads (CPU s) |\n" \
             "|---|---|---|---|---|"
    lines = [f"| {w.phase} | {w.seconds:.0f} | {w.cpu_s:.2f} | {w.percent:.2f} | "
             + ", ".join(f"{name} {cpu:.2f}" for name, cpu in w.threads[:3]) + " |"
             for w in windows]
    body = "\n".join([header, *lines])
    after = windows[-1].percent
    verdict = "met" if after < TARGET_PERCENT else "NOT MET"
    body += (f"\n\nTarget: the idle app, after a Demo question, uses < {TARGET_PERCENT:g}% of "
             f"one core: {after:.2f}% -> {verdict}")
    print(body)
    for w in windows:
        print(f"\n{w.phase}: " + ", ".join(f"{n} {c:.2f} s" for n, c in w.threads))
    command = f"python scripts/bench_idle.py --window {args.window:g} --settle {args.settle:g} " \
              f"--judges {args.judges}" + (f" --typed {args.typed!r}" if args.typed else "")
    question = (f"the typed question {args.typed!r} (hybrid retrieval, 3 passages)" if args.typed
                else f"stored demo sample {sample_id} with its own passages")
    notes = (f"App launched with `python -m ragshield serve` on a temporary SQLite database "
             f"with the demo dataset; CPU is user + system time of the app process and its "
             f"children (psutil) over each idle window, no client connected; the Demo "
             f"question ({question}, judges {args.judges}) took {question_s:.1f} s through "
             f"gradio_client, which was then closed; each window started {args.settle:g} s "
             f"after the previous step. RSS at the end: {rss_mb:.0f} MB. Load average (1 min) "
             f"at start {load_before:.1f}, at end {load_after:.1f}.")
    if args.no_append:
        return
    publish("Idle app", command, notes, body,
            {"question_s": question_s, "rss_mb": rss_mb, "load_before": load_before,
             "load_after": load_after,
             "windows": [{"phase": w.phase, "seconds": w.seconds, "cpu_s": w.cpu_s,
                          "percent_of_one_core": w.percent, "threads": w.threads}
                         for w in windows]},
            ROOT / "docs" / "bench" / "idle.json")


if __name__ == "__main__":
    main()
