"""Opening the store: engine, SQLite pragmas, migrations to the newest revision, sessions."""

from __future__ import annotations

import hashlib
import re
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Hashable, Iterator, TypeVar, cast

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, CursorResult, Engine, Result, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import StaticPool

from ragshield import strict_json
from ragshield.errors import UserError
from ragshield.store.storable_text import refuse_nul

# The database driver's own errors (a lost connection, a full disk), for the faces that
# report them to users.
DatabaseError = SQLAlchemyError
T = TypeVar("T")

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
MIGRATION_LOCK = "migrate the schema"  # Store.exclusive's names share its key space
# Alembic keeps the migration it runs in module globals (alembic.context, the loaded scripts):
# two threads migrating at once, even two different databases, each broke the other's.
_MIGRATING = threading.Lock()


class StoreError(UserError, RuntimeError):
    """The database cannot be opened or migrated."""


# user:password@ in a URL SQLAlchemy cannot parse: after "://", else at the start (a URL that
# lost its scheme or a slash); greedy up to the last "@": a password may itself hold one.
_CREDENTIALS = re.compile(r"(://[^:/@]*):.*@")
_BARE_CREDENTIALS = re.compile(r"^([^:/@]*):.*@")


def changed_rows(result: Result[Any]) -> int:
    """How many rows an UPDATE or DELETE changed: its cursor's row count."""
    return cast(CursorResult[Any], result).rowcount


def masked(url: str) -> str:
    """The URL with its password hidden, safe for messages and logs, even when it does not
    parse (a message about a bad URL must show which one)."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):  # ValueError: a port that is not a number
        pattern = _CREDENTIALS if "://" in url else _BARE_CREDENTIALS
        return pattern.sub(r"\1:***@", url)


def lock_key(name: str) -> int:
    """A lock name as the signed 64-bit number PostgreSQL's advisory locks take."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def alembic_config(connection=None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


@dataclass
class Store:
    engine: Engine
    sessions: sessionmaker[Session]
    # Annotator ids by name, as found or added through this store. Annotators are never
    # deleted, so a name seen once needs no lookup again (every label signs its person in).
    annotator_ids: dict[str, int] = field(default_factory=dict)
    # The session of this thread's `one_transaction` block, when one is open.
    _joined: threading.local = field(default_factory=threading.local, repr=False)

    @property
    def url(self) -> str:
        return self.engine.url.render_as_string(hide_password=True)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A transaction: committed when the block ends, rolled back if it raises. Inside
        `one_transaction`, the block's own session and transaction instead."""
        joined = getattr(self._joined, "session", None)
        if joined is not None:
            yield joined
            return
        with self.sessions() as session, session.begin():
            yield session

    @contextmanager
    def one_transaction(self) -> Iterator[None]:
        """Every store call in the block (in this thread) runs in one session and
        transaction. On a database server each session costs round trips of its own (a
        connection check, the commit), which add up for a use case made of several store
        calls; a failure anywhere in the block rolls all of it back."""
        with self.session() as session:  # the outer block's, when one is open
            outer = getattr(self._joined, "session", None)
            self._joined.session = session
            try:
                yield
            finally:
                self._joined.session = outer

    @contextmanager
    def writing(self) -> Iterator[None]:
        """`one_transaction` for a check followed by a write. SQLite: the transaction takes
        the database's write lock at once (BEGIN IMMEDIATE): a transaction that reads first
        and writes later cannot take it once another writer holds it, and fails at once
        instead of waiting its turn. Other databases: the transaction only. Not inside
        another transaction of this thread (on SQLite it would wait for itself)."""
        if getattr(self._joined, "session", None) is not None:
            raise RuntimeError("writing() opens its own transaction: not inside another")
        with self.one_transaction():
            if self.is_sqlite:
                self._joined.session.connection().exec_driver_sql("BEGIN IMMEDIATE")
            yield

    @contextmanager
    def exclusive(self, name: str) -> Iterator[None]:
        """`writing` that one process at a time is in, per `name` (`lock`): for a check
        followed by a write that two processes must not both do (two apps starting together
        on a new database must not both load the demo run)."""
        with self.writing():
            self.lock(name)
            yield

    def lock(self, name: str) -> None:
        """Inside `writing`: wait until no other transaction holds `name`, and hold it to the
        end of this one. PostgreSQL: an advisory lock on the name; SQLite: its write lock,
        which `writing` took, is already one at a time; other databases: nothing. A check
        after it sees the other transaction's commit because each statement reads the newest
        committed rows (READ COMMITTED, PostgreSQL's default)."""
        connection = self._joined.session.connection()
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"),
                               {"key": lock_key(name)})

    @property
    def is_sqlite(self) -> bool:
        return self.engine.dialect.name == "sqlite"

    def revision(self) -> str | None:
        with self.engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()

    def close(self) -> None:
        self.engine.dispose()


def remembered(session: Session, kind: str, key: Hashable, look_up: Callable[[], T]) -> T:
    """`look_up()`'s value for `key`, found once per session and kept in `session.info`
    under `kind`: a use case in `Store.one_transaction` asks for the same ids in each of its
    store calls. A lookup that raises is not kept."""
    known = session.info.setdefault(kind, {})
    if key not in known:
        known[key] = look_up()
    return known[key]


def forget(session: Session, kind: str, key: Hashable) -> None:
    """Drop what `remembered` kept for `key` (its row is gone)."""
    session.info.get(kind, {}).pop(key, None)


def create_store_engine(url: str) -> Engine:
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError) as exc:
        raise StoreError(f"bad database URL {masked(url)}: {exc}") from exc
    is_sqlite = parsed.get_backend_name() == "sqlite"
    if is_sqlite and parsed.database and parsed.database != ":memory:":
        folder = Path(parsed.database).expanduser().parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the folder {folder} for {masked(url)}: {exc}") from exc
    in_memory = is_sqlite and parsed.database in (None, "", ":memory:")
    # Room for the app's worker threads (8 annotators and a run at once): a connection made
    # and dropped per request costs more than the request (SQLite runs its pragmas each time).
    # An in-memory database lives in its connection: every thread shares that one.
    pool: dict[str, Any] = ({"poolclass": StaticPool} if in_memory
                            else {"pool_size": 16, "max_overflow": 16})
    try:
        engine = create_engine(
            parsed,
            # A server's connection can drop between requests; a local SQLite file's cannot,
            # and the ping would cost a round trip on every session (about ten per label).
            pool_pre_ping=not is_sqlite,
            connect_args={"timeout": 30, "check_same_thread": False} if is_sqlite else {},
            # JSON columns hold strict JSON: a NaN or Infinity (from a judge, an upstream, a
            # caller of the Python front door) is stored as null; PostgreSQL refuses it.
            json_serializer=strict_json.dumps,
            **pool,
        )
    except (ArgumentError, ImportError, SQLAlchemyError) as exc:
        raise StoreError(f"cannot use database URL {masked(url)}: {exc}") from exc
    if is_sqlite:
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def _migrate(connection: Connection) -> None:
    """Bring the schema to the newest revision, all of it or nothing, keeping every row.

    On SQLite, two things need saying explicitly. pysqlite runs DDL outside any transaction
    unless one is begun: without BEGIN, a process killed mid-migration leaves half a schema
    that no later open can repair. And Alembic changes a table by copying it and dropping
    the old one: with foreign keys on, that DROP deletes every row referencing the table
    (a rebuilt `runs` took all answers and verdicts with it), so they are off meanwhile
    (the pragma only works outside a transaction).

    Processes that open one database at once (replicas of the API started together) take
    turns: on PostgreSQL an advisory lock held to the commit, after which the next one
    finds the schema at the newest revision (without it, all but one failed on a fresh
    database); on SQLite the write lock of BEGIN IMMEDIATE. Threads of one process take
    turns first (_MIGRATING).
    """
    with _MIGRATING:
        _migrate_in_turn(connection)


def _migrate_in_turn(connection: Connection) -> None:
    sqlite = connection.dialect.name == "sqlite"
    if sqlite:
        connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
        connection.commit()
    try:
        with connection.begin():
            if sqlite:
                connection.exec_driver_sql("BEGIN IMMEDIATE")
            elif connection.dialect.name == "postgresql":
                connection.execute(text("SELECT pg_advisory_xact_lock(:key)"),
                                   {"key": lock_key(MIGRATION_LOCK)})
            command.upgrade(alembic_config(connection), "head")
    finally:
        if sqlite:
            connection.exec_driver_sql("PRAGMA foreign_keys=ON")
            connection.commit()


def open_store(url: str, *, migrate: bool = True) -> Store:
    """Connect to `url`, check the connection and bring the schema to the newest revision."""
    engine = create_store_engine(url)
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
            connection.commit()
            if migrate:
                _migrate(connection)
    except SQLAlchemyError as exc:
        engine.dispose()
        reason = getattr(exc, "orig", None) or exc
        raise StoreError(f"cannot open database {masked(url)}: {reason}") from exc
    sessions = sessionmaker(engine, expire_on_commit=False)
    event.listen(sessions, "before_flush", refuse_nul)
    return Store(engine=engine, sessions=sessions)
