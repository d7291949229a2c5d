"""Where benchmark figures go: a JSON file and a section appended to docs/BENCHMARKS.md,
both stamped with the machine and the date."""

from __future__ import annotations

import argparse
import json
import platform
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import psutil

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


def publish(title: str, command: str, notes: str, body: str, data: dict[str, Any],
            json_out: Path, append: bool = True, show: bool = False,
            markdown: Path = BENCHMARKS_MD) -> None:
    """Write `data` to `json_out` and, unless `append` is False, a dated section to
    `markdown` (docs/BENCHMARKS.md; docs/QUALITY.md for quality): the command, the notes
    (what the numbers are) and the body; with `show`, print the body and the notes first."""
    if show:
        print(f"{body}\n{notes}")
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    json_out.parent.mkdir(parents=True, exist_ok=True)
    json_out.write_text(json.dumps({"date": stamp, "machine": machine(), "command": command,
                                    **data}, indent=2))
    if append:
        with open(markdown, "a") as out:
            out.write(f"\n## {title} ({stamp})\n\nMachine: {machine()}. Command: `{command}`. "
                      f"{notes}\n\n{body}\n")
