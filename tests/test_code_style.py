"""The code's own rules, kept by ruff (pyproject.toml [tool.ruff]): no unused or undefined
names (F) and no line over the configured length (E501)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_no_unused_name_and_no_overlong_line() -> None:
    checked = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--select", "F,E501",
         "ragshield", "scripts", "tests", "app.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stdout + checked.stderr
