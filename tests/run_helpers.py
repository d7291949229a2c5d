"""Helpers for tests that run, kill and resume real processes: the llama.cpp server command,
waiting for a condition before a SIGKILL, and reading a run's saved answers from SQLite."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable


def llama_server_command(model: Path, port: int) -> list[str]:
    """`python -m llama_cpp.server` with the embedded model on 127.0.0.1:`port`."""
    return [sys.executable, "-m", "llama_cpp.server", "--model", str(model),
            "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "2",
            "--logits_all", "true", "--model_alias", "qwen-embedded"]


def saved_answers(db: Path) -> list[tuple[int, int]]:
    """(sample row id, number of answers) for every sample with an answer; [] before the
    schema exists."""
    try:
        with sqlite3.connect(db, timeout=30) as connection:
            return connection.execute(
                "SELECT sample_id, COUNT(*) FROM answers GROUP BY sample_id").fetchall()
    except sqlite3.OperationalError:  # the schema is not there yet
        return []


def kill_when(process: subprocess.Popen, ready: Callable[[], bool], *,
              timeout_s: float = 300, poll_s: float = 0.05) -> None:
    """SIGKILL `process` as soon as `ready()` holds (or at the timeout, or once it has
    exited on its own), and reap it."""
    deadline = time.monotonic() + timeout_s
    while not ready() and time.monotonic() < deadline and process.poll() is None:
        time.sleep(poll_s)
    process.send_signal(signal.SIGKILL)
    process.wait()
