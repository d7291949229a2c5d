"""Background work done one way (services/jobs.py): results, errors, progress, one at a
time, and a bounded memory of finished jobs."""

from __future__ import annotations

import logging
import threading

import pytest

from ragshield.errors import UserError
from ragshield.services import jobs as jobs_module
from ragshield.services.jobs import JobBusy, Jobs


def test_a_job_keeps_its_result_progress_and_error(caplog):
    jobs = Jobs()

    def work(job):
        job.progress(3, 4)
        return "done"

    ok = jobs.start("chore", "a", work)
    assert ok.wait(10) and ok.result == "done" and (ok.done, ok.total) == (3, 4)
    assert ok.error is None and ok.error_text is None
    with caplog.at_level(logging.ERROR, logger="ragshield.services.jobs"):
        bug = jobs.start("chore", "b", lambda job: 1 / 0)
        bug.wait(10)
        told = jobs.start("chore", "c", lambda job: (_ for _ in ()).throw(UserError("no data")))
        told.wait(10)
    assert isinstance(bug.error, ZeroDivisionError) and "ZeroDivisionError" in bug.error_text
    assert told.error_text == "UserError: no data"
    assert "chore b stopped" in caplog.text and "chore c" not in caplog.text  # a bug is logged
    assert [job.key for job in jobs.of_kind("chore")] == ["a", "b", "c"]


def test_one_at_a_time_refuses_a_second_job_of_the_kind_while_the_first_runs():
    jobs, release = Jobs(), threading.Event()
    with jobs.one_at_a_time("run"):
        first = jobs.start("run", "1", lambda job: release.wait(10), background=True)
    with pytest.raises(JobBusy, match="run 1 is still going"):
        with jobs.one_at_a_time("run"):
            pytest.fail("the block must not run")
    other = jobs.start("training", "t", lambda job: None)  # another kind is not held up
    assert other.wait(10)
    release.set()
    assert first.wait(10)
    with jobs.one_at_a_time("run"):
        second = jobs.start("run", "2", lambda job: None)
    assert second.wait(10)


def test_finished_jobs_are_forgotten_beyond_a_bound(monkeypatch):
    monkeypatch.setattr(jobs_module, "KEPT_FINISHED", 3)
    jobs = Jobs()
    for number in range(6):
        jobs.start("question", str(number), lambda job: None).wait(10)
    kept = [job.key for job in jobs.of_kind("question")]
    assert kept[-3:] == ["3", "4", "5"] and len(kept) <= 4  # the newest start is never dropped
