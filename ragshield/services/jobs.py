"""Background work, done one way in every face: a job runs a function in a daemon thread,
keeps its progress, its result and the exception that ended it, and a kind of job can be
limited to one at a time (a run or a training competes for the cores with everything else).

Runs (services/runs/runs.RunLauncher), judge trainings
(services/learning/judge_training.JudgeTrainer) and the Demo's questions are jobs. The guard API's
calls are not: each answers its request within a deadline (api/limits.Deadlines), and nothing of it
lives on after the answer.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from ragshield.errors import UserError

log = logging.getLogger(__name__)

# How much lower long background work (runs, trainings) runs than the pages: a page answers
# at once while a run takes the cores it leaves.
BACKGROUND_NICENESS = 10
KEPT_FINISHED = 50  # finished jobs of a kind kept for the pages that show them


class JobBusy(UserError, ValueError):
    """A job of a kind that runs one at a time is still going."""


@dataclass(eq=False)
class Job:
    kind: str
    key: str  # what the job works on: a run id, a judge name
    about: str = ""  # more of it, in words, for a page (e.g. the training's dataset)
    done: int = 0
    total: int = 0
    result: Any = None
    error: BaseException | None = None
    thread: threading.Thread | None = field(default=None, repr=False)

    @property
    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    @property
    def error_text(self) -> str | None:
        """Why the job stopped early, for a page: the error's type and message."""
        return None if self.error is None else f"{type(self.error).__name__}: {self.error}"

    def progress(self, done: int, total: int) -> None:
        self.done, self.total = done, total

    def wait(self, timeout: float | None = None) -> bool:
        """True once the job has ended."""
        if self.thread is not None:
            self.thread.join(timeout)
        return not self.running


class Jobs:
    """The background jobs of one process."""

    def __init__(self) -> None:
        self._jobs: list[Job] = []
        self._lock = threading.RLock()

    @contextmanager
    def one_at_a_time(self, kind: str) -> Iterator[None]:
        """JobBusy while a job of `kind` runs; else no other job starts until the block ends
        (the block records what the job will work on, then starts it)."""
        with self._lock:
            going = next((job for job in self._jobs if job.kind == kind and job.running), None)
            if going is not None:
                raise JobBusy(f"{kind} {going.key} is still going: start the next one when it "
                              "is done")
            yield

    def start(self, kind: str, key: str, work: Callable[[Job], Any], *,
              background: bool = False, about: str = "") -> Job:
        """Run `work(job)` in a daemon thread; its return value becomes `job.result`, its
        exception `job.error` (logged unless a UserError). `background`: at a lower CPU
        priority."""
        job = Job(kind, key, about)
        job.thread = threading.Thread(target=self._run, args=(job, work, background),
                                      daemon=True, name=f"ragshield-{kind}-{key}")
        with self._lock:
            self._jobs.append(job)
            self._forget_finished(kind)
        job.thread.start()
        return job

    def _run(self, job: Job, work: Callable[[Job], Any], background: bool) -> None:
        if background:
            lower_thread_priority()
        try:
            job.result = work(job)
        except BaseException as error:  # the thread's end: keep it for the page
            if not isinstance(error, UserError):
                log.exception("%s %s stopped", job.kind, job.key)
            job.error = error

    def _forget_finished(self, kind: str) -> None:
        finished = [job for job in self._jobs if job.kind == kind and not job.running]
        for job in finished[:-KEPT_FINISHED]:
            self._jobs.remove(job)

    def of_kind(self, kind: str) -> list[Job]:
        """Oldest first."""
        with self._lock:
            return [job for job in self._jobs if job.kind == kind]


def lower_thread_priority(niceness: int = BACKGROUND_NICENESS) -> None:
    """Lower the calling thread's CPU priority by `niceness`. On Linux priority is per
    thread and the threads it starts inherit it (llama.cpp's workers among them); elsewhere
    it would apply to the whole process, so it does nothing there."""
    if not sys.platform.startswith("linux"):
        return
    thread = threading.get_native_id()
    try:
        current = os.getpriority(os.PRIO_PROCESS, thread)
        os.setpriority(os.PRIO_PROCESS, thread, min(19, current + niceness))
    except OSError as error:  # e.g. a sandbox that forbids it: run at the usual priority
        log.warning("could not lower a background job's CPU priority: %s", error)
