"""The package version (`ragshield.__version__`, also pyproject.toml's), and the code version
a run records: the package version and, in a git checkout, the commit."""

from __future__ import annotations

import subprocess
from pathlib import Path

__version__ = "0.1.0"
ROOT = Path(__file__).resolve().parent.parent


def code_version() -> str:
    if not (ROOT / ".git").exists():  # an installed package: its version is all there is
        return __version__
    try:
        commit = subprocess.run(
            ["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
            capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return __version__
    return f"{__version__}+{commit}" if commit else __version__
