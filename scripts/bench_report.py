"""Where benchmark figures go: a JSON file and a section appended to docs/BENCHMARKS.md,
both stamped with the machine and the date."""

from __future__ import annotations

import json
import platform
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS_MD = ROOT / "docs" / "BENCHMARKS.md"


def machine() -> str:
    memory = psutil.virtual_memory().total / 2**30
    return f"{platform.machine()}, {psutil.cpu_count()} cores, {memory:.0f} GiB"


def publish(title: str, command: str, notes: str, body: str, data: dict[str, Any],
            json_out: Path, append: bool = True) -> None:
    """Write `data` to `json_out` and, unless `append` is False, a dated section to
    docs/BENCHMARKS.md: the command, the notes (what the numbers are) and the body."""
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    json_out.parent.mkdir(parents=True, exist_ok=True)
    json_out.write_text(json.dumps({"date": stamp, "machine": machine(), "command": command,
                                    **data}, indent=2))
    if append:
        with open(BENCHMARKS_MD, "a") as out:
            out.write(f"\n## {title} ({stamp})\n\nMachine: {machine()}. Command: `{command}`. "
                      f"{notes}\n\n{body}\n")
