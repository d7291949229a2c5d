"""Who executes a run: one process at a time holds it, recorded on the run as host, pid and
the process's start time (a later process reusing the pid is not mistaken for it).

A resumer claims the run with one conditional UPDATE that only succeeds while nobody holds
it or its holder is gone, so of two processes resuming at once one gets the run and the
other a clear refusal (SQLite and PostgreSQL alike). Whether a holder is gone is decided:
- on the same host, by its pid: the process no longer exists (or is another one);
- on another host, where pids mean nothing, by its heartbeat: the holder refreshes
  `heartbeat_at` every HEARTBEAT_EVERY, and one silent for STALE_AFTER counts as gone.
A run still marked running whose holder is gone (SIGKILL, a crash, a power cut) is shown as
interrupted and can be resumed.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Iterator

import psutil
from sqlalchemy import ColumnElement, update
from sqlalchemy.exc import SQLAlchemyError

from ragshield.errors import UserError
from ragshield.store.database import Store, changed_rows
from ragshield.store.models import Run, as_utc, utcnow
from ragshield.store.run_errors import UnknownRunError

log = logging.getLogger(__name__)

HEARTBEAT_EVERY = timedelta(seconds=30)
STALE_AFTER = timedelta(minutes=5)


class RunHeldError(UserError, ValueError):
    """Another live process executes the run."""


@dataclass(frozen=True)
class Owner:
    host: str
    pid: int
    token: str  # the process's start time: tells it from a later process with the same pid

    @classmethod
    def current(cls) -> Owner:
        return cls(host=socket.gethostname(), pid=os.getpid(), token=_start_token(os.getpid()))


@dataclass(frozen=True)
class Holder:
    """A run's recorded owner, as read from its row."""

    owner: Owner
    since: datetime
    heartbeat_at: datetime

    @property
    def local(self) -> bool:
        return self.owner.host == socket.gethostname()

    def alive(self, now: datetime | None = None) -> bool:
        if self.local:
            return _process_alive(self.owner.pid, self.owner.token)
        return as_utc(self.heartbeat_at) > (now or utcnow()) - STALE_AFTER

    def describe(self, run_id: int) -> str:
        message = (f"run {run_id} is being run by pid {self.owner.pid} on host "
                   f"{self.owner.host} since {as_utc(self.since):%Y-%m-%d %H:%M:%S} UTC; "
                   "stop it first")
        if self.local:
            return message
        minutes = int(STALE_AFTER.total_seconds() // 60)
        return f"{message} (if it died, it counts as gone {minutes} minutes after its heartbeat)"


def _start_token(pid: int) -> str:
    return f"{psutil.Process(pid).create_time():.2f}"


def _process_alive(pid: int, token: str) -> bool:
    try:
        process = psutil.Process(pid)
        return process.status() != psutil.STATUS_ZOMBIE and _start_token(pid) == token
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:  # it exists, under another user: assume it is the holder
        return True


def holder_of(run: Run) -> Holder | None:
    if run.owner_host is None or run.owner_pid is None or run.owner_token is None:
        return None
    return Holder(Owner(run.owner_host, run.owner_pid, run.owner_token),
                  since=run.owner_since or run.created_at,
                  heartbeat_at=run.heartbeat_at or run.created_at)


def shown_status(run: Run) -> str:
    """The run's status, with "running" read as "interrupted" once its holder is gone."""
    if run.status != "running":
        return run.status
    holder = holder_of(run)
    return "running" if holder is not None and holder.alive() else "interrupted"


def _is(owner: Owner | None) -> ColumnElement[bool]:
    if owner is None:
        return Run.owner_pid.is_(None)
    return (Run.owner_host == owner.host) & (Run.owner_pid == owner.pid) & \
        (Run.owner_token == owner.token)


def _still_gone(holder: Holder | None, now: datetime) -> ColumnElement[bool]:
    """The condition, checked again by the UPDATE itself, under which the holder read
    before is still the holder and still gone."""
    if holder is None or holder.local:
        return _is(holder.owner if holder else None)
    return _is(holder.owner) & (Run.heartbeat_at < now - STALE_AFTER)


def claim_run(store: Store, run_id: int, me: Owner) -> None:
    """Make `me` the run's holder; RunHeldError when a live process holds it (or wins the
    race for it). The read and the conditional UPDATE are separate transactions: SQLite
    cannot turn a read transaction into a write after another process wrote."""
    with store.session() as session:
        run = session.get(Run, run_id)
        if run is None:
            raise UnknownRunError(f"no run with id {run_id}")
        holder = holder_of(run)
    now = utcnow()
    if holder is not None and holder.alive(now):
        raise RunHeldError(holder.describe(run_id))
    with store.session() as session:
        claimed = session.execute(
            update(Run).where(Run.id == run_id, _still_gone(holder, now)).values(
                owner_host=me.host, owner_pid=me.pid, owner_token=me.token,
                owner_since=now, heartbeat_at=now))
    if changed_rows(claimed) != 1:
        raise RunHeldError(_refusal(store, run_id))


def _refusal(store: Store, run_id: int) -> str:
    with store.session() as session:
        holder = holder_of(session.get_one(Run, run_id))
    return holder.describe(run_id) if holder else f"run {run_id} was just claimed by another " \
        "process"


def _touch(store: Store, run_id: int, me: Owner, **values: object) -> None:
    with store.session() as session:
        session.execute(update(Run).where(Run.id == run_id, _is(me)).values(**values))


def release_run(store: Store, run_id: int, me: Owner) -> None:
    _touch(store, run_id, me, owner_host=None, owner_pid=None, owner_token=None,
           owner_since=None, heartbeat_at=None)


def _heartbeat(store: Store, run_id: int, me: Owner, stop: threading.Event) -> None:
    while not stop.wait(HEARTBEAT_EVERY.total_seconds()):
        try:
            _touch(store, run_id, me, heartbeat_at=utcnow())
        except SQLAlchemyError as exc:  # a busy database: the next beat comes soon enough
            log.warning("run %s: heartbeat failed: %s", run_id, exc)


@contextmanager
def held_run(store: Store, run_id: int) -> Iterator[None]:
    """Hold the run for the block (claimed on entry, heartbeat meanwhile, released on exit
    however the block ends)."""
    me = Owner.current()
    claim_run(store, run_id, me)
    stop = threading.Event()
    beat = threading.Thread(target=_heartbeat, args=(store, run_id, me, stop), daemon=True,
                            name=f"ragshield-heartbeat-{run_id}")
    beat.start()
    try:
        yield
    finally:
        stop.set()
        beat.join()
        release_run(store, run_id, me)

