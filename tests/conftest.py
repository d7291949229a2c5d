"""Shared fixtures: settings in a temp folder, real SQLite and PostgreSQL stores, the embedded
models, and free ports for servers that tests start.

Test lanes: a fixture that loads a model, starts a server process, drives the browser, needs
PostgreSQL or starts Python processes is decorated with `@lane(...)`, and every test that uses
it (directly or through other fixtures) gets those markers at collection
(`pytest_collection_modifyitems` below), so no test is marked by hand. `make test-fast` leaves
out `model`, `server`, `browser`, `slow` and `postgres`. A test that loads a model, starts a
server or starts Python processes gets them from such a fixture, never inline: `qwen_path`,
`small_model_path`, `embedded_llm`, `embedder`, `recording_embedder`, `packaged_models`
(model); `launch_app`, `app_url`, `run_server` (server); `browser`, `page` (browser);
`postgres_admin`, `postgres_url`, `store_url`'s postgresql case (postgres);
`python_processes`, `long_computation` (slow).
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, TypeVar

import pytest
from sqlalchemy import Engine, create_engine

from ragshield import home
from ragshield.config import Settings
from ragshield.llm.packaged_models import SMALLER_MODEL
from ragshield.testing.replicas import fresh_postgres
from ragshield.testing.servers import free_port, running_server  # noqa: F401 (re-exported)
from ragshield.store.database import Store, open_store
from tests.sqlite_copies import copy_sqlite

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

    from tests.ui_launch import PreparedStore

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# What the tests write goes to a home of their own (RAGSHIELD_HOME, removed at exit), never
# to the user's; the packaged models stay in the user's cache, assembled once for all runs.
if not os.environ.get("RAGSHIELD_HOME"):
    os.environ.setdefault("RAGSHIELD_CACHE_DIR", str(home.cache_dir()))
    os.environ["RAGSHIELD_HOME"] = tempfile.mkdtemp(prefix="ragshield-test-home-")
    atexit.register(shutil.rmtree, os.environ["RAGSHIELD_HOME"], True)

TEST_DATA = Path(__file__).resolve().parent / "data"  # small licensed subsets (README.md)
POSTGRES_ADMIN_URL = os.environ.get(
    "RAGSHIELD_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)


LANE_MARKERS = ("model", "server", "browser", "postgres", "slow")
_LANES_ATTRIBUTE = "ragshield_lanes"
F = TypeVar("F", bound=Callable)


def lane(*markers: str) -> Callable[[F], F]:
    """Put under `@pytest.fixture`: every test that uses the fixture, directly or through
    other fixtures, is marked with `markers` (each one of LANE_MARKERS)."""
    unknown = set(markers) - set(LANE_MARKERS)
    if unknown:
        raise ValueError(f"unknown lane markers {sorted(unknown)}; known: {LANE_MARKERS}")

    def decorate(function: F) -> F:
        setattr(function, _LANES_ATTRIBUTE, (*getattr(function, _LANES_ATTRIBUTE, ()), *markers))
        return function

    return decorate


def lane_markers(item: pytest.Item) -> set[str]:
    """The markers of the fixtures `item` uses (the transitive closure, `item.fixturenames`).
    Of a fixture overridden in a module or conftest, the definition that applies counts (and
    the one it overrides, when it requests it by its own name)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return set()
    found: set[str] = set()
    for name in item.fixturenames:
        for fixturedef in reversed(info.name2fixturedefs.get(name, ())):
            found.update(getattr(fixturedef.func, _LANES_ATTRIBUTE, ()))
            if name not in fixturedef.argnames:
                break
    return found


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for marker in sorted(lane_markers(item)):
            item.add_marker(marker)


@pytest.fixture(scope="session")
def model_cache_dir() -> Path:
    """Where the packaged models are assembled (shared by the whole run, as in real use)."""
    return Settings().cache_dir


@pytest.fixture
def settings(tmp_path: Path, model_cache_dir: Path, migrated_sqlite: Path) -> Settings:
    """Settings on an empty SQLite store at the newest revision (a copy of a migrated one),
    answering with the packaged 0.5B, the fast model. Where nobody names a model the 1.5B
    answers (tests/test_default_answerer.py); a test that moves to the openai backend names no
    model (`"model": None`), as the served model's name is the backend's to tell."""
    copy_sqlite(migrated_sqlite, tmp_path / "test.db")
    return Settings(cache_dir=model_cache_dir, database_url=f"sqlite:///{tmp_path / 'test.db'}",
                    model=SMALLER_MODEL)


@pytest.fixture(scope="session")
@lane("postgres")
def postgres_admin() -> Iterator[Engine]:
    """An AUTOCOMMIT connection to the local PostgreSQL server, for creating test databases."""
    if os.environ.get("RAGSHIELD_SKIP_POSTGRES") == "1":
        pytest.skip("RAGSHIELD_SKIP_POSTGRES=1")
    admin = create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    yield admin
    admin.dispose()


@pytest.fixture
def postgres_url(postgres_admin: Engine) -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test, dropped afterwards (`postgres_admin`
    skips the test where no server answers)."""
    with fresh_postgres(POSTGRES_ADMIN_URL, prefix="ragshield_test") as url:
        yield url


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty SQLite store at the newest revision, migrated once per test process."""
    path = tmp_path_factory.mktemp("migrated") / "store.db"
    open_store(f"sqlite:///{path}").close()
    return path


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of an empty database at the newest revision: a SQLite file (a copy of one
    migrated store: tests/sqlite_copies.py) or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        copy_sqlite(request.getfixturevalue("migrated_sqlite"), tmp_path / "store.db")
        return f"sqlite:///{tmp_path / 'store.db'}"
    return request.getfixturevalue("postgres_url")


@pytest.fixture
def sqlite_store(tmp_path: Path, migrated_sqlite: Path) -> Iterator[Store]:
    """An empty SQLite store at the newest revision (the guard API's tests)."""
    copy_sqlite(migrated_sqlite, tmp_path / "api.db")
    opened = open_store(f"sqlite:///{tmp_path / 'api.db'}")
    yield opened
    opened.close()


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    opened = open_store(store_url)
    yield opened
    opened.close()


@pytest.fixture(scope="session")
@lane("model")
def qwen_path(model_cache_dir: Path) -> Path:
    """The packaged Qwen GGUF, assembled in the cache."""
    from ragshield.llm.packaged_models import QWEN_05B, ensure_model

    return ensure_model(QWEN_05B, model_cache_dir)


@pytest.fixture(scope="session")
@lane("model")
def small_model_path(model_cache_dir: Path) -> Path:
    """The packaged SmolLM2 GGUF, assembled in the cache."""
    from ragshield.llm.packaged_models import SMOLLM2_135M, ensure_model

    return ensure_model(SMOLLM2_135M, model_cache_dir)


@pytest.fixture(scope="session")
@lane("model")
def larger_model_path(model_cache_dir: Path) -> Path:
    """The packaged Qwen2.5-Coder-1.5B GGUF (the larger model), assembled in the cache."""
    from ragshield.llm.packaged_models import QWEN_15B, ensure_model

    return ensure_model(QWEN_15B, model_cache_dir)


@pytest.fixture(scope="session")
@lane("model")
def embedded_llm(qwen_path: Path):
    from ragshield.llm.llama_cpp_backend import LlamaCppLLM

    return LlamaCppLLM(qwen_path, n_ctx=4096, n_threads=2)


@pytest.fixture(scope="session")
@lane("model")
def embedder():
    """The packaged MiniLM sentence embedder, loaded once per run."""
    from ragshield.retrieval.encoding import default_embedder

    return default_embedder(Settings())


@pytest.fixture
def recording_embedder(embedder):
    """(an embedder on the real MiniLM, the RecordingEncoder that keeps what it embedded)."""
    from ragshield.retrieval.encoding import Embedder
    from tests.retrieval_fixtures import RecordingEncoder

    recorder = RecordingEncoder(embedder.model)
    return Embedder(embedder.name, recorder), recorder


@pytest.fixture(scope="session")
@lane("model")
def packaged_models(qwen_path: Path, small_model_path: Path,
                    larger_model_path: Path) -> dict[str, Path]:
    """Every packaged model, ready, for tests whose subprocesses (the CLI, the server) load them:
    the three GGUF files assembled in the cache, and the MiniLM folder."""
    from ragshield.retrieval.embeddings import packaged_embedding_path

    return {"qwen": qwen_path, "smollm2": small_model_path, "qwen-1.5b": larger_model_path,
            "embeddings": packaged_embedding_path()}


@pytest.fixture(scope="session")
@lane("slow")
def long_computation() -> None:
    """Asked for by a test that computes for many seconds with no model or server (a
    simulation of thousands of draws, a replay of every shipped example): `make test` runs
    it, `make test-fast` leaves it out."""


@pytest.fixture(scope="session")
@lane("slow")
def python_processes() -> str:
    """Asked for by every test that starts Python interpreters of its own: `python -m
    ragshield` as a user runs it, a script, multiprocessing workers. Each start costs about
    2 s of imports on a 2-core machine, so these tests are `slow` (`make test-fast` leaves them
    out). Returns the interpreter to start."""
    return sys.executable


@pytest.fixture(scope="session")
@lane("server")
def run_server() -> Callable[..., AbstractContextManager[subprocess.Popen]]:
    """`running_server`, for fixtures that start a server process of their own."""
    return running_server


@pytest.fixture(scope="session")
@lane("server")
def launch_app() -> Callable[..., AbstractContextManager[str]]:
    """`tests.ui_launch.launched_app` (`python -m ragshield serve` on a free port), for fixtures and
    tests that launch the app themselves (their own database, --auth or environment)."""
    from tests.ui_launch import launched_app

    return launched_app


@pytest.fixture(scope="module")
@lane("browser")
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
def app_url(prepared: "PreparedStore", tmp_path_factory: pytest.TempPathFactory,
            launch_app) -> Iterator[str]:
    """`python -m ragshield serve` on the `prepared` database, one per test module."""
    with launch_app(tmp_path_factory.mktemp("app"), prepared.database_url) as url:
        yield url
