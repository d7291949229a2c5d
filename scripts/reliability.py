"""Run the reliability suite (tests/reliability) and write docs/RELIABILITY.md from its own
records: each scenario, how many times it ran, what it checked, the result and its figures.

    python scripts/reliability.py [--long] [--repeat N] [--out docs/RELIABILITY.md] [-- PYTEST ARGS]

--long sets RAGSHIELD_RELIABILITY_LONG=1 (more seeds, samples, examples and lines);
--repeat runs the whole suite N times. Every test records itself (tests/reliability/
scenario.py), so a new scenario appears in the table without a change here. Exits 1 when any
run failed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "RELIABILITY.md"
RERUN = """\
```bash
make setup && bash scripts/start_services.sh         # the venv, the models, PostgreSQL
.venv/bin/python -m pytest tests/reliability          # the short suite, as CI runs it
.venv/bin/python -m pytest tests/reliability -m "not model"      # without the real models
.venv/bin/python -m pytest tests/reliability -k process_crash    # one scenario's tests
.venv/bin/python scripts/reliability.py               # the short suite, then this file
.venv/bin/python scripts/reliability.py --long --repeat 3        # the long version, 3 times
RAGSHIELD_SKIP_POSTGRES=1 .venv/bin/python scripts/reliability.py  # SQLite only
```"""


@dataclass
class Summary:
    """One scenario over every run of its tests."""

    name: str
    outcomes: Counter[str] = field(default_factory=Counter)
    checks: dict[str, list[bool]] = field(default_factory=dict)  # in order of first use
    figures: dict[str, list[Any]] = field(default_factory=dict)
    seconds: float = 0.0

    def add(self, record: dict[str, Any]) -> None:
        self.outcomes[record["outcome"]] += 1
        self.seconds += record["seconds"]
        for check in record["checks"]:
            self.checks.setdefault(check["what"], []).append(check["ok"])
        for name, value in record["figures"].items():
            self.figures.setdefault(name, []).append(value)

    @property
    def runs(self) -> int:
        return sum(self.outcomes.values())

    @property
    def result(self) -> str:
        if self.outcomes["failed"]:
            return f"FAILED {self.outcomes['failed']} of {self.runs}"
        if self.outcomes["passed"] == 0:
            return "skipped"
        skipped = f", {self.outcomes['skipped']} skipped" if self.outcomes["skipped"] else ""
        return f"passed {self.outcomes['passed']}{skipped}"

    def checked(self) -> list[str]:
        return [what if all(oks) else f"{what} (**failed {oks.count(False)} of {len(oks)}**)"
                for what, oks in self.checks.items()]

    def figure_lines(self) -> list[str]:
        lines = []
        for name, values in self.figures.items():
            numbers = [v for v in values if isinstance(v, (int, float))]
            if len(numbers) == len(values) and len(set(values)) > 1:
                shown = f"{min(numbers):g} to {max(numbers):g} over {len(values)} runs"
            else:
                shown = ", ".join(dict.fromkeys(str(v) for v in values))
            lines.append(f"{name}: {shown}")
        return lines


def run_suite(records: Path, long: bool, pytest_args: list[str]) -> int:
    env = {**os.environ, "RAGSHIELD_RELIABILITY_RECORD": str(records),
           "RAGSHIELD_RELIABILITY_LONG": "1" if long else "0"}
    command = [sys.executable, "-m", "pytest", "tests/reliability", "-q", "-p",
               "no:cacheprovider", *pytest_args]
    return subprocess.run(command, cwd=ROOT, env=env).returncode


def summarise(records: Path) -> list[Summary]:
    summaries: dict[str, Summary] = {}
    for line in records.read_text().splitlines() if records.exists() else []:
        record = json.loads(line)
        summaries.setdefault(record["scenario"], Summary(record["scenario"])).add(record)
    return sorted(summaries.values(), key=lambda summary: summary.name.lower())


def print_table(summaries: list[Summary]) -> None:
    width = max([len(s.name) for s in summaries] + [8])
    print(f"\n{'scenario':<{width}}  {'runs':>4}  {'checks':>6}  {'seconds':>7}  result")
    for s in summaries:
        print(f"{s.name:<{width}}  {s.runs:>4}  {len(s.checks):>6}  {s.seconds:>7.1f}  {s.result}")


def cell(lines: list[str]) -> str:
    return "<br>".join(line.replace("|", "\\|") for line in lines) or "-"


def markdown(summaries: list[Summary], *, long: bool, repeat: int, codes: list[int],
             seconds: float, pytest_args: list[str]) -> str:
    mode = "long (RAGSHIELD_RELIABILITY_LONG=1)" if long else "short (the CI default)"
    args = f" `{' '.join(pytest_args)}`" if pytest_args else ""
    rows = "\n".join(
        f"| {s.name} | {s.runs} | {cell(s.checked())} | {s.result} | {cell(s.figure_lines())} |"
        for s in summaries)
    return f"""# Reliability

What ragshield does under faults, crashes, hostile input and secret handling (issue 8), as
recorded by the suite in `tests/reliability` itself: each test notes the checks it made and
the figures it measured, and `scripts/reliability.py` collects them into this file.

Generated {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC} by `scripts/reliability.py`: {mode}
suite, {repeat} time(s){args}, {seconds / 60:.1f} min in all on {os.cpu_count()} CPU cores
({platform.machine()}, Python {platform.python_version()}); pytest exit status
{", ".join(map(str, codes))}. "Runs" counts test executions (a seed or a database is a run).

| Scenario | Runs | What was checked | Result | Figures |
|---|---|---|---|---|
{rows}

## Rerunning

{RERUN}
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--long", action="store_true", help="more seeds, samples and examples")
    parser.add_argument("--repeat", type=int, default=1, help="run the whole suite N times")
    parser.add_argument("--out", type=Path, default=DOC, help="the Markdown file to write")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    options = parser.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as folder:
        records = Path(folder) / "records.jsonl"
        codes = [run_suite(records, options.long, options.pytest_args)
                 for _ in range(options.repeat)]
        summaries = summarise(records)
    print_table(summaries)
    options.out.write_text(markdown(summaries, long=options.long, repeat=options.repeat,
                                    codes=codes, seconds=time.monotonic() - started,
                                    pytest_args=options.pytest_args))
    print(f"\nwrote {options.out}")
    return 0 if all(code == 0 for code in codes) and summaries else 1


if __name__ == "__main__":
    sys.exit(main())
