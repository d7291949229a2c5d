"""Model server killed mid-run: a CLI run against a real `python -m llama_cpp.server` (the
packaged Qwen) whose server is SIGKILLed after the first saved sample, then restarted on the
same port; `run --resume` completes every sample exactly once. The run has the API key in
its environment, and the key is then looked for everywhere the run wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from ragshield.store.database import open_store
from tests.conftest import free_port
from tests.reliability.consistency import check_complete_exactly_once, check_sqlite_file
from tests.reliability.scale import sized
from tests.reliability.secrets_scan import check_no_secret
from tests.run_helpers import kill_when, llama_server_command, saved_answers
from tests.cli_support import ROOT

JUDGES = ["trivial", "p_true"]
KEY = "sk-llama-run-marker-0c41e7"


@dataclass(frozen=True)
class KilledRun:
    url: str
    db: Path
    logs: Path
    samples: int
    saved_before_kill: int
    first: dict  # `run --json` of the run whose server died
    first_exit: int
    seconds_to_fail: float  # from the server's death to the run's exit
    resumed: subprocess.CompletedProcess


def _cli(logs: Path, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "ragshield", *args], cwd=ROOT,
                            env={**os.environ, **env}, stdout=(logs / f"{name}.stdout").open("w"),
                            stderr=(logs / f"{name}.stderr").open("w"))


@pytest.fixture(scope="module")
def killed_run(qwen_path: Path, run_server, packaged_models,
               tmp_path_factory: pytest.TempPathFactory) -> KilledRun:
    folder = tmp_path_factory.mktemp("llama_kill")
    logs = folder / "logs"
    logs.mkdir()
    db, port, samples = folder / "run.db", free_port(), sized(3, 10)
    base_url = f"http://127.0.0.1:{port}/v1"
    env = {"RAGSHIELD_DATABASE_URL": f"sqlite:///{db}", "RAGSHIELD_OPENAI_API_KEY": KEY,
           "RAGSHIELD_MAX_RETRIES": "1", "RAGSHIELD_RETRY_BACKOFF_S": "0.2"}
    command = llama_server_command(qwen_path, port)
    with run_server(command, f"{base_url}/models", folder / "server-1.log") as server:
        run = _cli(logs, "run", ["run", "--dataset", "demo", "--limit", str(samples),
                                 "--answerer", "vanilla",
                                 "--judges", ",".join(JUDGES), "--rule", "p_true",
                                 "--backend", "openai", "--base-url", base_url,
                                 "--concurrency", "1", "--json", "--no-progress"], env)
        kill_when(server, lambda: len(saved_answers(db)) >= 1 or run.poll() is not None)
        killed_at = time.monotonic()
        saved = len(saved_answers(db))
        first_exit = run.wait(timeout=300)
        seconds_to_fail = time.monotonic() - killed_at
    with run_server(command, f"{base_url}/models", folder / "server-2.log"):
        resumed = subprocess.run([sys.executable, "-m", "ragshield", "run", "--resume", "1",
                                  "--json", "--no-progress"], cwd=ROOT,
                                 env={**os.environ, **env}, capture_output=True, text=True,
                                 timeout=600)
    (logs / "resume.stdout").write_text(resumed.stdout)
    (logs / "resume.stderr").write_text(resumed.stderr)
    first = json.loads((logs / "run.stdout").read_text() or "{}")
    return KilledRun(env["RAGSHIELD_DATABASE_URL"], db, logs, samples, saved, first,
                     first_exit, seconds_to_fail, resumed)


@pytest.mark.scenario("Model server (llama.cpp) killed mid-run, restarted, run resumed")
def test_the_resumed_run_completes_every_sample_exactly_once(killed_run, scenario):
    run = killed_run
    scenario.figure("samples", run.samples)
    scenario.figure("saved before the kill", run.saved_before_kill)
    scenario.figure("seconds from the kill to the run's exit", round(run.seconds_to_fail, 1))
    scenario.check("the server died mid-run", 1 <= run.saved_before_kill < run.samples,
                   run.saved_before_kill)
    scenario.check("the run without a server ends by itself, exit 1, status incomplete",
                   run.first_exit == 1 and run.first.get("status") == "incomplete", run.first)
    errors = [f["error"] for f in run.first.get("failures", [])]
    scenario.check("its failures name the connection error",
                   errors and all("Connection error" in e or "failed after" in e for e in errors),
                   errors)
    scenario.check("`run --resume` succeeds once the server is back",
                   run.resumed.returncode == 0 and json.loads(run.resumed.stdout)["done"] ==
                   run.samples, run.resumed.stdout + run.resumed.stderr)
    store = open_store(run.url)
    try:
        check_complete_exactly_once(scenario, store, 1, JUDGES)
    finally:
        store.close()
    check_sqlite_file(scenario, run.db)


@pytest.mark.scenario("Secrets never stored, logged or exported")
def test_the_key_of_the_killed_run_appears_nowhere(killed_run, scenario):
    check_no_secret(scenario, [KEY], killed_run.url, [killed_run.logs])
