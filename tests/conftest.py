"""Shared fixtures: settings in a temp folder, real SQLite and PostgreSQL stores, the embedded
models, and free ports for servers that tests start."""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from ragshield.config import Settings
from ragshield.store.database import Store, open_store

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

    from tests.ui_launch import PreparedStore

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
POSTGRES_ADMIN_URL = os.environ.get(
    "RAGSHIELD_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def model_cache_dir() -> Path:
    """Where the packaged models are assembled (shared by the whole run, as in real use)."""
    return Settings().cache_dir


@pytest.fixture
def settings(tmp_path: Path, model_cache_dir: Path) -> Settings:
    return Settings(cache_dir=model_cache_dir, database_url=f"sqlite:///{tmp_path / 'test.db'}")


@pytest.fixture(scope="session")
def postgres_admin() -> Iterator[Engine]:
    """An AUTOCOMMIT connection to the local PostgreSQL server, for creating test databases."""
    if os.environ.get("RAGSHIELD_SKIP_POSTGRES") == "1":
        pytest.skip("RAGSHIELD_SKIP_POSTGRES=1")
    admin = create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    yield admin
    admin.dispose()


@pytest.fixture
def postgres_url(postgres_admin: Engine) -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test, dropped afterwards."""
    name = f"ragshield_test_{uuid.uuid4().hex[:12]}"
    with postgres_admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(POSTGRES_ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with postgres_admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of an empty database: a SQLite file or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return request.getfixturevalue("postgres_url")


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    opened = open_store(store_url)
    yield opened
    opened.close()


@pytest.fixture(scope="session")
def qwen_path(model_cache_dir: Path) -> Path:
    from ragshield.llm.packaged_models import QWEN_05B, ensure_model

    return ensure_model(QWEN_05B, model_cache_dir)


@pytest.fixture(scope="session")
def embedded_llm(qwen_path: Path):
    from ragshield.llm.llama_cpp_backend import LlamaCppLLM

    return LlamaCppLLM(qwen_path, n_ctx=4096, n_threads=2)


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


@pytest.fixture(scope="module")
def browser() -> Iterator["Browser"]:
    """Debian's chromium through Playwright, one per test module."""
    from playwright.sync_api import sync_playwright

    from tests.browser_support import CHROMIUM

    if not Path(CHROMIUM).exists():
        pytest.fail(f"chromium not found at {CHROMIUM}: install Debian's chromium "
                    "(or set RAGSHIELD_SKIP_BROWSER=1 to skip the browser tests)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def page(browser: "Browser", app_url: str) -> Iterator["Page"]:
    """The module's app (`app_url`) in a fresh browser context (its own storage: no
    remembered annotator). A page that opens a dialog (alert, confirm: a sign of injected
    script) fails its test."""
    from playwright.sync_api import expect

    from tests.browser_support import VIEWPORT, WAIT_MS

    context = browser.new_context(viewport=VIEWPORT)
    opened = context.new_page()
    opened.set_default_timeout(WAIT_MS)
    dialogs: list[str] = []
    opened.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    opened.goto(app_url)
    expect(opened.locator("#demo-result")).to_be_visible()
    yield opened
    context.close()
    assert not dialogs, f"the page opened dialogs: {dialogs}"


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> "PreparedStore":
    """A SQLite database for the launched app: demo set, a synthetic run, hostile text."""
    from tests.ui_launch import prepare_store

    return prepare_store(tmp_path_factory.mktemp("app-db"))


@pytest.fixture(scope="module")
def app_url(prepared: "PreparedStore", tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`python app.py` on the `prepared` database, one per test module."""
    from tests.ui_launch import launched_app

    with launched_app(tmp_path_factory.mktemp("app"), prepared.database_url) as url:
        yield url
