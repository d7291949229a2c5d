"""Where benchmark figures go: a JSON file and a section appended to docs/BENCHMARKS.md (or
QUALITY.md), both stamped with the machine and the date; and, at the top of each page, an
index of the newest section of every benchmark and a table of today's figures read from the
JSON records (current_figures.py), so today's figure is on the first screen.

    python scripts/bench_report.py --index   # write the two pages' indexes again"""

from __future__ import annotations

import argparse
import json
import platform
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import psutil

from current_figures import BENCHMARKS, QUALITY, current_table

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS_MD = ROOT / "docs" / "BENCHMARKS.md"
QUALITY_MD = ROOT / "docs" / "QUALITY.md"


def bench_parser(doc: str, json_name: str, runs: int = 5) -> argparse.ArgumentParser:
    """The options every benchmark takes: --runs, --json-out (docs/bench/<json_name>) and
    --no-append; the script adds its own sizes."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--runs", type=int, default=runs)
    parser.add_argument("--json-out", type=Path, default=ROOT / "docs" / "bench" / json_name)
    parser.add_argument("--no-append", action="store_true", help="do not write docs/BENCHMARKS.md")
    return parser


def bench_settings(database: str):
    """Settings for a benchmark whose runs are resumed from a store: RAGSHIELD_DATABASE_URL's,
    else the SQLite file `database` in the cache folder."""
    import os

    from ragshield.config import Settings

    settings = Settings()
    if "RAGSHIELD_DATABASE_URL" in os.environ:
        return settings
    return settings.model_copy(update={
        "database_url": f"sqlite:///{settings.cache_dir / database}"})


def machine() -> str:
    memory = psutil.virtual_memory().total / 2**30
    return f"{platform.machine()}, {psutil.cpu_count()} cores, {memory:.0f} GiB"


def stamp() -> str:
    """Now, as every record of a benchmark is dated."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def publish(title: str, command: str, notes: str, body: str, data: dict[str, Any],
            json_out: Path, append: bool = True, show: bool = False,
            markdown: Path = BENCHMARKS_MD) -> None:
    """Write `data` to `json_out` and, unless `append` is False, a dated section to
    `markdown` (docs/BENCHMARKS.md; docs/QUALITY.md for quality): the command, the notes
    (what the numbers are) and the body; with `show`, print the body and the notes first."""
    if show:
        print(f"{body}\n{notes}")
    when = stamp()
    json_out.parent.mkdir(parents=True, exist_ok=True)
    json_out.write_text(json.dumps({"date": when, "machine": machine(), "command": command,
                                    **data}, indent=2))
    if append:
        with open(markdown, "a") as out:
            out.write(f"\n## {title} ({when})\n\nMachine: {machine()}. Command: `{command}`. "
                      f"{notes}\n\n{body}\n")
        write_index(markdown)


INDEX_START = "<!-- newest: written by scripts/bench_report.py, do not edit -->"
INDEX_END = "<!-- /newest -->"
# A dated section, as publish writes it ("## Title (2026-12-03 12:48 UTC)") or by hand
# ("## Title (2026-12-02, issue 58)").
DATED = re.compile(r"^## (.+?) \((\d{4}-\d\d-\d\d[^)]*)\)[ \t]*$", re.M)


def anchor(heading: str) -> str:
    """The link target GitHub gives a heading: lower case, punctuation dropped, spaces to
    hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def newest_index(text: str) -> str:
    """A table of the newest dated section of each title in `text`, newest first."""
    newest: dict[str, str] = {}
    for title, stamp in DATED.findall(text):
        newest[title] = max(stamp, newest.get(title, stamp))
    rows = [f"| [{title}](#{anchor(f'{title} ({stamp})')}) | {stamp} |"
            for title, stamp in sorted(newest.items(), key=lambda item: item[1], reverse=True)]
    return "\n".join(["The newest section of each benchmark (the older ones stay below, in the "
                      "order they were written):", "", "| benchmark | newest |", "|---|---|",
                      *rows])


def with_index(text: str, current: str = "") -> str:
    """`text` with its index (and above it the `current` figures) written again: in place of
    the old one, else before its first section."""
    opening = f"{current}\n\n" if current else ""
    block = f"{INDEX_START}\n{opening}{newest_index(text)}\n{INDEX_END}"
    if INDEX_START in text and INDEX_END in text:
        before, rest = text.split(INDEX_START, 1)
        return before + block + rest.split(INDEX_END, 1)[1]
    first = re.search(r"^## ", text, re.M)
    at = first.start() if first else len(text)
    return text[:at] + block + "\n\n" + text[at:]


def current_for(markdown: Path) -> str:
    """The table of today's figures that opens the page (current_figures.py)."""
    rows = {QUALITY_MD: QUALITY, BENCHMARKS_MD: BENCHMARKS}.get(markdown)
    return current_table(rows) if rows else ""


def write_index(markdown: Path) -> None:
    markdown.write_text(with_index(markdown.read_text(encoding="utf-8"), current_for(markdown)),
                        encoding="utf-8")


if __name__ == "__main__":
    command = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    command.add_argument("--index", action="store_true", help="write the pages' indexes again")
    if command.parse_args().index:
        for page in (BENCHMARKS_MD, QUALITY_MD):
            write_index(page)
