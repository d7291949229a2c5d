"""The package's type hints hold (mypy, configured in pyproject.toml [tool.mypy]): a wrong
call, a None where a value is needed or a changed signature shows up here, not in use."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_finds_no_type_error_in_the_package(long_computation: None) -> None:
    checked = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True,
                             text=True, timeout=600)
    assert checked.returncode == 0, checked.stdout[-4000:] + checked.stderr[-2000:]
    assert "Success: no issues found" in checked.stdout
