"""Replicas of the guard API as a deployment runs them: several `python -m ragshield serve
--api-only` processes on one database, started at the same moment (as an orchestrator
starts them, so that they open, and migrate, a fresh database together), and a fresh
PostgreSQL database for them. tests/reliability/test_replicas.py and scripts/bench_guard.py
use them."""

from __future__ import annotations

import sys
import threading
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Callable, Iterator

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from ragshield.testing.servers import free_port, running_server

Starter = Callable[..., AbstractContextManager[object]]  # running_server's signature


@contextmanager
def fresh_postgres(admin_url: str, prefix: str = "ragshield_bench") -> Iterator[str]:
    """The URL of a new, empty database on the server of `admin_url`, dropped afterwards."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
        finally:
            with admin.connect() as connection:
                connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


@contextmanager
def api_replicas(count: int, database_url: str, log_dir: Path, *,
                 env: dict[str, str] | None = None, start: Starter = running_server,
                 timeout_s: float = 180) -> Iterator[list[str]]:
    """`count` API processes on `database_url`, each on a free port of 127.0.0.1, started at
    once; yields their base URLs when every one answers /v1/health, stops them afterwards.
    A replica that fails to start raises its error (with its log's tail). `start` is
    running_server, or the tests' `run_server` fixture (which marks the test `server`)."""
    stop, ready = threading.Event(), [threading.Event() for _ in range(count)]
    ports = [free_port() for _ in range(count)]
    environment = {"RAGSHIELD_DATABASE_URL": database_url, **(env or {})}

    def serve(index: int) -> None:
        port = ports[index]
        command = [sys.executable, "-m", "ragshield", "serve", "--api-only",
                   "--host", "127.0.0.1", "--port", str(port)]
        with start(command, f"http://127.0.0.1:{port}/v1/health",
                   log_dir / f"replica-{port}.log", env=environment, timeout_s=timeout_s):
            ready[index].set()
            stop.wait()

    with ThreadPoolExecutor(count, thread_name_prefix="replica") as pool:
        serving = [pool.submit(serve, index) for index in range(count)]
        try:
            for index, future in enumerate(serving):
                _wait_ready(ready[index], future)
            yield [f"http://127.0.0.1:{port}" for port in ports]
        finally:
            stop.set()
    for future in serving:
        future.result()  # a replica that failed to stop cleanly says so


def _wait_ready(ready: threading.Event, serving: Future[None]) -> None:
    while not ready.wait(0.2):
        if serving.done():
            serving.result()  # raises the start's error
            raise RuntimeError("a replica stopped before it answered")
