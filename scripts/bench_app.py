"""Servers started for a benchmark or a test: any server process, waited for until it
answers and stopped afterwards, and the web app (`python app.py` on a free port of
127.0.0.1 with the given database). The test suite takes `free_port` and `running_server`
from here (tests/conftest.py); scripts do not import the tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:
    import httpx

ROOT = Path(__file__).resolve().parents[1]


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
def launched_app(database_url: str, log_path: Path, *, env: dict[str, str] | None = None,
                 timeout_s: float = 180) -> Iterator[tuple[str, subprocess.Popen]]:
    """Start app.py on `database_url`; yield its URL and process once it answers."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    args = [sys.executable, "app.py", "--host", "127.0.0.1", "--port", str(port)]
    with running_server(args, url, log_path, cwd=ROOT, timeout_s=timeout_s,
                        env={"RAGSHIELD_DATABASE_URL": database_url, **(env or {})}) as process:
        yield url, process


# uvicorn (under Gradio) closes a connection idle for 5 s, and httpx's pool reuses one idle
# for up to 5 s: a request sent on a connection the server is closing at that moment is
# reset (ReadError). A browser-like client lets its idle connections go well before the
# server does, so that no request races the server's close.
KEEPALIVE_EXPIRY_S = 2.0


def browser_like_client(base_url: str, timeout: float) -> "httpx.Client":
    """An HTTP client for one tab of the app: its idle connections expire before the
    server's keep-alive timeout, so a request never goes out on a connection being closed."""
    import httpx

    return httpx.Client(base_url=base_url, timeout=timeout,
                        limits=httpx.Limits(keepalive_expiry=KEEPALIVE_EXPIRY_S))


def call_like_browser(http: httpx.Client, api_name: str, data: list[Any],
                      session: str) -> Any:
    """Call an event of the app the way its page does for an event that skips Gradio's
    queue (the label, skip, undo and next-item events): one POST to /gradio_api/run/<api
    name> with the page's session hash. Returns the event's outputs (one value, or a list);
    raises httpx.HTTPStatusError on an error answer.

    gradio_client goes through the queue's server-sent events instead and polls for them
    (50 ms sleeps), which adds 100-300 ms to every call that a browser never waits for."""
    response = http.post(f"gradio_api/run/{api_name}",
                         json={"data": data, "session_hash": session})
    response.raise_for_status()
    outputs = response.json()["data"]
    return outputs[0] if len(outputs) == 1 else outputs
