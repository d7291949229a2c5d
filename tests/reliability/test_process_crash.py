"""Process crash: `python -m ragshield run` on a fresh SQLite file is SIGKILLed at a point
drawn from a seed (a moment of its life, or an exact database step: inside the migrations,
the demo import or a sample's transaction); after `run --resume` the database is whole:
nothing lost, nothing twice, no half-written sample, and SQLite's own checks pass. The
model is a real HTTP server answering in the OpenAI format, so each run is quick."""

from __future__ import annotations

import functools
import json
import os
import random
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from ragshield.services.data.datasets import ensure_demo_dataset
from ragshield.store.database import open_store
from ragshield.store.samples import count_samples
from tests.reliability.consistency import check_complete_exactly_once, check_sqlite_file
from tests.reliability.fake_openai import Fault, FakeOpenAIServer
from tests.reliability.scale import sized
from tests.reliability.scenario import Scenario
from tests.run_helpers import kill_when, saved_answers
from tests.cli_support import ROOT

JUDGES = ["trivial", "p_true"]
SAMPLES = sized(6, 20)
TIME_SEEDS = sized(3, 12)
STEP_SEEDS = sized(4, 16)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    """A model server that takes 50 ms a chat call, so a run's samples take a while."""
    slow = Fault(delay_s=0.05)
    with FakeOpenAIServer(lambda request: slow if request.is_chat else None) as fake:
        yield fake


def run_args(server: FakeOpenAIServer) -> list[str]:
    return ["run", "--dataset", "demo", "--limit", str(SAMPLES), "--judges", ",".join(JUDGES),
            "--rule", "p_true", "--backend", "openai", "--base-url", server.url,
            "--concurrency", "2", "--json", "--no-progress"]


def environment(db: Path) -> dict[str, str]:
    return {**os.environ, "RAGSHIELD_DATABASE_URL": f"sqlite:///{db}"}


def resume_and_check(scenario: Scenario, server: FakeOpenAIServer, db: Path) -> None:
    """Resume the killed run (or start it again if it died before creating it), then check
    the whole database."""
    args = ["run", "--resume", "1", "--json", "--no-progress"] if run_created(db) \
        else run_args(server)
    result = subprocess.run([sys.executable, "-m", "ragshield", *args], cwd=ROOT,
                            env=environment(db), capture_output=True, text=True, timeout=300)
    scenario.check("`run --resume` (or a new run, when none was created) exits 0",
                   result.returncode == 0, result.stdout + result.stderr)
    scenario.check("it reports every sample done",
                   json.loads(result.stdout)["done"] == SAMPLES, result.stdout)
    store = open_store(f"sqlite:///{db}")
    try:
        check_complete_exactly_once(scenario, store, 1, JUDGES)
        demo = count_samples(store, "demo")
        scenario.check("the demo dataset is whole (its import is all or nothing)",
                       demo == demo_size(), demo)
    finally:
        store.close()
    check_sqlite_file(scenario, db)


def run_created(db: Path) -> bool:
    """Whether the killed process got as far as recording its run (read without migrating:
    recovering the file is the resumed command's job)."""
    try:
        with sqlite3.connect(db) as connection:
            return connection.execute("SELECT COUNT(*) FROM runs").fetchone() != (0,)
    except sqlite3.OperationalError:  # no schema yet
        return False


@functools.cache
def demo_size() -> int:
    store = open_store("sqlite://")
    try:
        ensure_demo_dataset(store)
        return count_samples(store, "demo")
    finally:
        store.close()


@pytest.mark.parametrize("seed", range(TIME_SEEDS))
@pytest.mark.scenario("Run process killed (SIGKILL) at a random moment, then resumed")
def test_killed_at_a_random_moment(python_processes, seed, server, tmp_path, scenario):
    rng = random.Random(seed)
    wait_for = rng.randint(0, SAMPLES - 3)  # saved samples; 0: a moment of the start-up
    delay = rng.uniform(0.0, 3.0) if wait_for == 0 else 0.0
    db = tmp_path / "crash.db"
    process = subprocess.Popen([sys.executable, "-m", "ragshield", *run_args(server)], cwd=ROOT,
                               env=environment(db), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    time.sleep(delay)
    kill_when(process, lambda: len(saved_answers(db)) >= wait_for)
    scenario.figure(f"seed {seed}: samples saved when killed", len(saved_answers(db)))
    scenario.check("the process was killed, not finished", process.returncode == -9,
                   process.returncode)
    resume_and_check(scenario, server, db)


@pytest.fixture(scope="module")
def steps(python_processes, server: FakeOpenAIServer,
          tmp_path_factory: pytest.TempPathFactory) -> dict[str, int]:
    """The database steps of an uninterrupted run on a fresh file, and the step that
    creates the run (the steps before it are migrations and the demo import)."""
    folder = tmp_path_factory.mktemp("steps")
    report = folder / "steps.json"
    subprocess.run([sys.executable, "-m", "tests.reliability.kill_at_statement", "0",
                    str(report), *run_args(server)], cwd=ROOT, env=environment(folder / "r.db"),
                   check=True, capture_output=True, timeout=300)
    return json.loads(report.read_text())


@pytest.mark.parametrize("seed", range(STEP_SEEDS))
@pytest.mark.scenario("Run process killed (SIGKILL) at a random database step, then resumed")
def test_killed_at_a_random_database_step(
        python_processes, seed, server, steps, tmp_path, scenario):
    rng = random.Random(seed)
    # Even seeds crash while the file is being set up, odd ones while samples are saved.
    if seed % 2 == 0:
        step = rng.randint(1, steps["run_created"])
    else:
        step = rng.randint(steps["run_created"] + 1, steps["steps"])
    db = tmp_path / "crash.db"
    killed = subprocess.run([sys.executable, "-m", "tests.reliability.kill_at_statement",
                             str(step), str(tmp_path / "steps.json"), *run_args(server)],
                            cwd=ROOT, env=environment(db), capture_output=True, timeout=300)
    scenario.figure(f"seed {seed}: killed before step", f"{step} of {steps['steps']}")
    scenario.check("the process was killed at its step", killed.returncode == -9,
                   killed.returncode)
    resume_and_check(scenario, server, db)
