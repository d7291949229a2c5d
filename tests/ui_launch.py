"""The app launched for real (`python app.py`) on a free port, for gradio_client and
browser tests: a temp SQLite database prepared beforehand, optionally with --auth."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from tests.conftest import free_port, running_server

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def launched_app(folder: Path, database_url: str, *, auth_file: Path | None = None,
                 env: dict[str, str] | None = None) -> Iterator[str]:
    """Start app.py on `database_url`; yield its URL; stop it afterwards."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    args = [sys.executable, "app.py", "--host", "127.0.0.1", "--port", str(port)]
    if auth_file is not None:
        args += ["--auth", str(auth_file)]
    log = folder / f"app-{port}.log"
    with running_server(args, url, log, cwd=ROOT,
                        env={"RAGSHIELD_DATABASE_URL": database_url, **(env or {})}):
        yield url
