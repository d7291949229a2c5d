"""The web app launched for a benchmark: `python app.py` on a free port of 127.0.0.1 with
the given database, its output in a log file, stopped afterwards. (Scripts do not import
the tests; tests/ui_launch.py does the same for the test suite.)"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def launched_app(database_url: str, log_path: Path, *, env: dict[str, str] | None = None,
                 timeout_s: float = 180) -> Iterator[tuple[str, subprocess.Popen]]:
    """Start app.py on `database_url`; yield its URL and process once it answers."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    args = [sys.executable, "app.py", "--host", "127.0.0.1", "--port", str(port)]
    with open(log_path, "wb") as log:  # a file, not a pipe: a full pipe would block the app
        process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
                                   env={**os.environ, "RAGSHIELD_DATABASE_URL": database_url,
                                        **(env or {})})
        try:
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    urllib.request.urlopen(url, timeout=2)
                    break
                except OSError:
                    if process.poll() is not None:
                        raise RuntimeError(f"app.py exited: {log_path.read_text()[-3000:]}")
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"app.py did not answer within {timeout_s} s")
                    time.sleep(0.3)
            yield url, process
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
