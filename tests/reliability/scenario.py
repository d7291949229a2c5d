"""What each reliability test records: its scenario, the checks it made and the figures it
measured, written as one JSON line per test when RAGSHIELD_RELIABILITY_RECORD names a file.

A line: {"scenario", "test", "outcome" (passed|failed|skipped), "seconds", "long",
"checks": [{"what", "ok"}], "figures": {name: value}}. scripts/reliability.py groups the
lines by scenario into docs/RELIABILITY.md; a test names its scenario with
@pytest.mark.scenario("...") (else its module's first docstring line is used), so new
scenarios appear in the table without changing the script.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RECORD_ENV = "RAGSHIELD_RELIABILITY_RECORD"


@dataclass
class Scenario:
    """A test's record: `check` asserts and notes a property, `figure` notes a measurement."""

    name: str
    test: str
    checks: list[dict[str, Any]] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)

    def check(self, what: str, condition: object, detail: object = "") -> None:
        self.checks.append({"what": what, "ok": bool(condition)})
        assert condition, f"{what}: {detail}" if detail != "" else what

    def figure(self, name: str, value: Any) -> None:
        self.figures[name] = value

    def write(self, outcome: str, seconds: float, long: bool) -> None:
        """Append this record to the file named by RAGSHIELD_RELIABILITY_RECORD, if any."""
        target = os.environ.get(RECORD_ENV)
        if not target:
            return
        line = {"scenario": self.name, "test": self.test, "outcome": outcome,
                "seconds": round(seconds, 2), "long": long, "checks": self.checks,
                "figures": self.figures}
        with Path(target).open("a", encoding="utf-8") as out:
            out.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")
