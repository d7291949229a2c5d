"""Server processes for a test or a benchmark: any server, waited for until it answers and
stopped afterwards, and the web app (`python -m ragshield serve`) on a free port of
127.0.0.1 with the given database."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence, cast


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def running_server(
    args: list[str], ready_url: str, log_path: Path, *, env: dict[str, str] | None = None,
    cwd: Path | None = None, timeout_s: float = 180,
) -> Iterator[subprocess.Popen]:
    """Start a server process, wait until `ready_url` answers, stop it afterwards.

    Its output goes to a file, not a pipe: a chatty server would block on a full pipe.
    """
    with open(log_path, "wb") as log:
        process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=cwd,
                                   env={**os.environ, **(env or {})})
        try:
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    urllib.request.urlopen(ready_url, timeout=2)
                    break
                except OSError:
                    if process.poll() is not None:
                        raise RuntimeError(f"{args[:3]} exited: {log_path.read_text()[-3000:]}")
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"{args[:3]} did not answer within {timeout_s} s")
                    time.sleep(0.3)
            yield process
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextmanager
def launched_app(database_url: str, log_dir: Path, *, args: Sequence[str] = (),
                 env: dict[str, str] | None = None,
                 timeout_s: float = 180) -> Iterator[tuple[str, subprocess.Popen]]:
    """Start the web app (`python -m ragshield serve ARGS`) on `database_url`, its output in
    `log_dir`/app-PORT.log; yield its URL and process once it answers."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    command = [sys.executable, "-m", "ragshield", "serve", "--host", "127.0.0.1",
               "--port", str(port), *args]
    with running_server(command, url, log_dir / f"app-{port}.log", timeout_s=timeout_s,
                        env={"RAGSHIELD_DATABASE_URL": database_url, **(env or {})}) as process:
        yield url, process


@contextmanager
def served_in_thread(app: object, timeout_s: float = 30) -> Iterator[str]:
    """An ASGI app served by uvicorn in a thread of this process on a free port of
    127.0.0.1 (a test client would gather a streamed reply before handing it over); yield
    its URL once it listens, stop it afterwards."""
    import threading

    import uvicorn

    server = uvicorn.Server(uvicorn.Config(cast(Any, app), host="127.0.0.1", port=free_port(),
                                           log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, name="served-in-thread", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{server.config.port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
