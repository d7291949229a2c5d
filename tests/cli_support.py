"""Helpers of the CLI tests: running `ragshield` in process and as a command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner, Result

from ragshield.cli import app
from ragshield.datasets.demo import DEMO_SAMPLES

ROOT = Path(__file__).resolve().parents[1]


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    """`python -m ragshield ARGS` run in this process, with `env` added to the environment;
    its stdout and stderr apart. An exception other than the command's exit is a bug: it
    propagates with its traceback."""
    return CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)


def run_cli(*args: str, env: dict[str, str] | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess:
    """`python -m ragshield ARGS` in a process of its own (ask for `python_processes`)."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "ragshield", *args], cwd=ROOT, env=full_env,
        capture_output=True, text=True, timeout=timeout,
    )


def first_demo_sample_id() -> str:
    return json.loads(DEMO_SAMPLES.open().readline())["id"]
