"""Runs, round 2 (faults a hostile black-box probe found): a run stopped by SIGTERM or killed
shows as interrupted and resumes; two resumers of one run end with one running it and the
other refused in one line; a dead holder does not block a resume; the default decision rule
gives way to the chosen judges; `doctor` times generation alone; `report --out` onto a file
and a database URL with a bad port are one-line errors. Real `python -m ragshield`
processes against a fake OpenAI-compatible server, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Callable, Iterator, Sequence

import pytest
from sqlalchemy import func, select, update

from ragshield.doctor import DOCTOR_QUESTION, SPEED_TOKENS, generation_speed
from ragshield.llm.base import BackendBase
from ragshield.pipeline import RunModels, execute_run, start_run
from ragshield.run_config import RunConfig
from ragshield.services.data.datasets import ensure_demo_dataset
from ragshield.services.runs.runs import RunLauncher
from ragshield.store.database import Store
from ragshield.store.models import AnswerRow, Run, utcnow
from ragshield.store.run_owner import STALE_AFTER, Owner, RunHeldError, claim_run
from ragshield.store.runs import get_run, list_runs
from ragshield.types import Completion
from tests.fakes import ScriptedLLM, ScriptedReply
from tests.reliability.consistency import check_complete_exactly_once
from tests.reliability.fake_openai import Fault, FakeOpenAIServer
from tests.reliability.scenario import Scenario
from tests.cli_support import ROOT, first_demo_sample_id

SIGNALS = "Runs, round 2: SIGTERM, a killed holder, two resumers"
RULE = "Runs, round 2: the default rule and the chosen judges"
ERRORS = "Runs, round 2: doctor speed, report --out, database URL"
JUDGES = ["trivial", "p_true"]
SAMPLES = 8


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    """A model server taking 0.2 s a chat call: a run of SAMPLES lasts a few seconds."""
    slow = Fault(delay_s=0.2)
    with FakeOpenAIServer(lambda request: slow if request.is_chat else None) as fake:
        yield fake


def cli(args: Sequence[str], url: str, **popen: object) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "ragshield", *args], cwd=ROOT,
                            env={**os.environ, "RAGSHIELD_DATABASE_URL": url},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def cli_run(args: Sequence[str], url: str) -> subprocess.CompletedProcess:
    process = cli(args, url)
    out, err = process.communicate(timeout=300)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def run_args(server: FakeOpenAIServer, *extra: str) -> list[str]:
    return ["run", "--dataset", "demo", "--limit", str(SAMPLES), "--judges", ",".join(JUDGES),
            "--rule", "p_true", "--backend", "openai", "--base-url", server.url,
            "--concurrency", "1", "--json", "--no-progress", *extra]


def saved(store: Store) -> int:
    with store.session() as session:
        return session.scalar(select(func.count()).select_from(AnswerRow)) or 0


def wait_for(condition: Callable[[], bool], timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def listed_status(url: str) -> str:
    result = cli_run(["runs", "list", "--json"], url)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)[0]["status"]


def resume_completes(scenario: Scenario, store: Store, url: str) -> None:
    result = cli_run(["run", "--resume", "1", "--json", "--no-progress"], url)
    scenario.check("`run --resume 1` exits 0", result.returncode == 0, result.stderr)
    check_complete_exactly_once(scenario, store, 1, JUDGES)


@pytest.mark.scenario(SIGNALS)
def test_sigterm_marks_the_run_interrupted_and_it_resumes(
        python_processes, store, store_url, server, scenario):
    process = cli(run_args(server), store_url)
    wait_for(lambda: saved(store) >= 2)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    scenario.figure("samples saved when stopped", saved(store))
    scenario.check("SIGTERM ends `run` with status 143", process.returncode == 143,
                   (process.returncode, err))
    scenario.check("it says the run is interrupted and how to resume it",
                   "run 1 is marked interrupted" in err and "--resume 1" in err, err)
    scenario.check("no traceback", "Traceback" not in err, err)
    with store.session() as session:
        run = session.get_one(Run, 1)
        scenario.check("the run is stored as interrupted, held by nobody",
                       (run.status, run.owner_pid) == ("interrupted", None),
                       (run.status, run.owner_pid))
    scenario.check("`runs list` shows it interrupted", listed_status(store_url) == "interrupted")
    resume_completes(scenario, store, store_url)


@pytest.mark.scenario(SIGNALS)
def test_a_killed_holder_shows_interrupted_and_does_not_block_resume(
        python_processes, store, store_url, server, scenario):
    process = cli(run_args(server), store_url)
    wait_for(lambda: saved(store) >= 2)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)
    with store.session() as session:
        stored = session.get_one(Run, 1).status
    scenario.check("the killed process could not update its run (still 'running')",
                   stored == "running", stored)
    scenario.check("`runs list` shows it interrupted: its process is gone",
                   listed_status(store_url) == "interrupted")
    resume_completes(scenario, store, store_url)


@pytest.mark.scenario(SIGNALS)
def test_two_resumers_at_once_one_runs_the_other_is_refused(
        python_processes, store, store_url, server, scenario):
    ensure_demo_dataset(store)
    start_run(store, RunConfig(dataset="demo", limit=SAMPLES, judges=JUDGES, rule="p_true",
                               backend="openai", base_url=server.url))
    resume = ["run", "--resume", "1", "--json", "--no-progress"]
    processes = [cli(resume, store_url) for _ in range(2)]
    results = [(p, *p.communicate(timeout=300)) for p in processes]
    codes = sorted(p.returncode for p, _, _ in results)
    scenario.check("one resumer finishes (0), the other is refused (1)", codes == [0, 1],
                   [(p.returncode, err) for p, _, err in results])
    winner, loser = sorted(results, key=lambda r: r[0].returncode)
    lines = loser[2].strip().splitlines()
    scenario.check("the refusal is one line naming the holder's pid and host",
                   len(lines) == 1 and lines[0].startswith("error: run 1 is being run by pid "
                                                           f"{winner[0].pid} on host "
                                                           f"{socket.gethostname()} since"),
                   loser[2])
    scenario.check("it says to stop the holder first", "stop it first" in loser[2], loser[2])
    scenario.check("no constraint error anywhere", all(
        "UNIQUE" not in err and "unique" not in err and "Traceback" not in err
        for _, _, err in results), [err for _, _, err in results])
    check_complete_exactly_once(scenario, store, 1, JUDGES)


def toy_run(store: Store, judges: Sequence[str] = ("trivial",), rule: str | None = "trivial"
            ) -> int:
    ensure_demo_dataset(store)
    return start_run(store, RunConfig(dataset="demo", limit=2, judges=list(judges), rule=rule))


def scripted() -> RunModels:
    return RunModels(main=ScriptedLLM(respond=lambda _: ScriptedReply(
        "yes", top={"yes": -0.2, "no": -1.8})))


def claimers(store: Store, run_id: int, owners: list[Owner]) -> list[str]:
    """Every owner claims the run at once; 'won' or the refusal of each."""
    barrier, results = threading.Barrier(len(owners)), [""] * len(owners)

    def claim(index: int) -> None:
        barrier.wait()
        try:
            claim_run(store, run_id, owners[index])
            results[index] = "won"
        except RunHeldError as refused:
            results[index] = str(refused)
    threads = [threading.Thread(target=claim, args=(i,)) for i in range(len(owners))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


@pytest.mark.scenario(SIGNALS)
def test_claiming_a_run_is_atomic(store, scenario):
    run_id = toy_run(store)
    owners = [Owner(host=f"probe-host-{i}", pid=100 + i, token="t") for i in range(6)]
    results = claimers(store, run_id, owners)
    scenario.check("of 6 processes claiming at once exactly one holds the run",
                   results.count("won") == 1, results)
    scenario.check("the others are told who holds it", all(
        "is being run by pid" in r for r in results if r != "won"), results)


def set_holder(store: Store, run_id: int, owner: Owner, heartbeat_age: timedelta) -> None:
    beat = utcnow() - heartbeat_age
    with store.session() as session:
        session.execute(update(Run).where(Run.id == run_id).values(
            status="running", owner_host=owner.host, owner_pid=owner.pid,
            owner_token=owner.token, owner_since=beat, heartbeat_at=beat))


def exited_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


GONE = {
    "a process that exited on this host": lambda: Owner(socket.gethostname(), exited_pid(), "1"),
    "a later process reusing the holder's pid": lambda: Owner(socket.gethostname(),
                                                              os.getpid(), "0.00"),
    "a process on another host silent for longer than STALE_AFTER":
        lambda: Owner("another-host", 4242, "1"),
}


@pytest.mark.parametrize("holder", list(GONE))
@pytest.mark.scenario(SIGNALS)
def test_a_gone_holder_shows_interrupted_and_the_run_resumes(store, settings, scenario, holder):
    run_id = toy_run(store)
    set_holder(store, run_id, GONE[holder](), STALE_AFTER + timedelta(minutes=1))
    scenario.check(f"{holder}: the run is listed as interrupted",
                   [r.status for r in list_runs(store)] == ["interrupted"])
    outcome = execute_run(store, run_id, settings, models=scripted(), progress=False)
    scenario.check(f"{holder}: the run resumes and completes", outcome.status == "done", outcome)


@pytest.mark.scenario(SIGNALS)
def test_a_live_holder_on_another_host_blocks_until_its_heartbeat_is_stale(store, settings,
                                                                           scenario):
    run_id = toy_run(store)
    elsewhere = Owner("another-host", 4242, "1")
    set_holder(store, run_id, elsewhere, timedelta(seconds=10))
    scenario.check("a holder on another host with a fresh heartbeat shows as running",
                   get_run(store, run_id).status == "running")
    with pytest.raises(RunHeldError) as refused:
        execute_run(store, run_id, settings, models=scripted(), progress=False)
    scenario.check("a resume is refused, naming the host",
                   "pid 4242 on host another-host" in str(refused.value), refused.value)
    set_holder(store, run_id, elsewhere, STALE_AFTER + timedelta(seconds=5))
    outcome = execute_run(store, run_id, settings, models=scripted(), progress=False)
    scenario.check("once its heartbeat is STALE_AFTER old, the resume proceeds",
                   outcome.status == "done", outcome)


# -- the default rule --------------------------------------------------------------------

def rule_env(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'rule.db'}"


@pytest.mark.scenario(RULE)
def test_run_without_rule_decides_by_majority_when_the_default_judge_is_not_chosen(
        python_processes, tmp_path, server, scenario):
    args = ["run", "--dataset", "demo", "--limit", "2", "--judges", "trivial,p_true",
            "--backend", "openai", "--base-url", server.url, "--json", "--no-progress"]
    result = cli_run(args, rule_env(tmp_path))
    scenario.check("`run --judges trivial,p_true` without --rule succeeds",
                   result.returncode == 0, result.stderr)
    scenario.check("its output and stored config name the rule chosen: majority",
                   json.loads(result.stdout)["rule"] == "majority", result.stdout)
    scenario.check("a note says why", "not among the chosen judges; deciding by majority"
                   in result.stderr, result.stderr)
    explicit = cli_run([*args, "--rule", "counterfactual"], rule_env(tmp_path))
    scenario.check("an explicit --rule that fits no chosen judge stays an error (exit 1)",
                   explicit.returncode == 1 and explicit.stderr.startswith(
                       "error: rule 'counterfactual' must be"), explicit.stderr)


@pytest.mark.scenario(RULE)
def test_ask_chooses_the_rule_as_run_does(python_processes, tmp_path, server, scenario):
    args = ["ask", "--sample", first_demo_sample_id(), "--judges", "trivial,p_true",
            "--backend", "openai", "--base-url", server.url, "--json"]
    result = cli_run(args, rule_env(tmp_path))
    payload = json.loads(result.stdout or "{}")
    scenario.check("`ask` without --rule decides by majority",
                   result.returncode == 0 and payload.get("rule") == "majority",
                   result.stdout + result.stderr)
    scenario.check("and reaches a decision", payload.get("decision") is not None, payload)
    explicit = cli_run([*args, "--rule", "counterfactual"], rule_env(tmp_path))
    scenario.check("`ask` with a --rule that fits no chosen judge is an error",
                   explicit.returncode == 1 and "rule 'counterfactual'" in explicit.stderr,
                   explicit.stderr)


@pytest.mark.scenario(RULE)
def test_the_dashboard_launcher_chooses_the_rule_as_run_does(store, settings, scenario):
    ensure_demo_dataset(store)
    launcher = RunLauncher(store, settings, open_models=lambda _: scripted())
    # The scripted model reads for every judge ("self"), as the run's config then says.
    run_id = launcher.start(RunConfig(dataset="demo", limit=2, judges=["trivial", "p_true"],
                                      judge_model="self"))
    scenario.check("the launcher's run finishes", launcher.wait(run_id, 60))
    run = get_run(store, run_id)
    scenario.check("its stored rule is majority", run.config["rule"] == "majority", run.config)
    scenario.check("it is done", run.status == "done", run.status)


# -- doctor, report --out, database URL ----------------------------------------------------

class TimedLLM(BackendBase):
    """Takes `prompt_s` per prompt token it reads and `token_s` per token it generates; with
    `caches`, a prompt equal to the previous one is not read again."""

    backend, model = "timed", "fake"

    def __init__(self, prompt_s: float, token_s: float, caches: bool) -> None:
        self.prompt_s, self.token_s, self.caches = prompt_s, token_s, caches
        self.last: str | None = None

    def chat(self, messages, *, max_tokens=256, **_options) -> Completion:
        prompt = " ".join(m["content"] for m in messages)
        read = 1 if self.caches and prompt == self.last else len(prompt.split()) + 20
        self.last = prompt
        generated = min(max_tokens, 100)
        return Completion(text="1, 2, 3", backend=self.backend, model=self.model,
                          prompt_tokens=read, completion_tokens=generated,
                          seconds=read * self.prompt_s + generated * self.token_s,
                          finish_reason="length")


@pytest.mark.parametrize("caches", [True, False], ids=["prompt cache", "no prompt cache"])
@pytest.mark.scenario(ERRORS)
def test_doctor_times_generation_without_the_prompt(scenario, caches):
    llm = TimedLLM(prompt_s=0.05, token_s=1 / 47, caches=caches)
    one_word = llm.chat([{"role": "user", "content": "What is the capital of France? " * 20}],
                        max_tokens=1)
    scenario.figure("old measure: a 1-token answer over its whole call (tok/s)",
                    round(one_word.completion_tokens / one_word.seconds, 2))
    speed = generation_speed(llm)
    scenario.figure("generation_speed (tok/s), true speed 47", speed)
    scenario.check(f"doctor's tokens_per_s is the generation speed ({SPEED_TOKENS}-token reply)",
                   speed == pytest.approx(47, rel=0.01), speed)


@pytest.mark.scenario(ERRORS)
def test_doctor_speed_of_the_embedded_model(embedded_llm, scenario):
    reply = embedded_llm.chat([{"role": "user", "content": DOCTOR_QUESTION}], max_tokens=16)
    whole_call = reply.completion_tokens / reply.seconds
    speed = generation_speed(embedded_llm)
    scenario.figure("embedded model: old measure, the doctor's answer over its call (tok/s)",
                    round(whole_call, 2))
    scenario.figure("embedded model: generation speed (tok/s)", speed)
    scenario.check("generation is timed without the prompt: several times the old measure "
                   "(both slow down alike on a loaded machine)",
                   speed is not None and speed > 3 * whole_call, (speed, whole_call))


@pytest.mark.scenario(ERRORS)
def test_report_out_onto_a_file_is_a_one_line_error(
        python_processes, store, store_url, settings, tmp_path, scenario):
    run_id = toy_run(store)
    execute_run(store, run_id, settings, models=scripted(), progress=False)
    existing = tmp_path / "report.html"
    existing.write_text("keep me")
    result = cli_run(["report", str(run_id), "--out", str(existing), "--resamples", "10"],
                     store_url)
    scenario.check("`report --out FILE` exits 1", result.returncode == 1, result.stderr)
    scenario.check("with one error line naming the path", result.stderr.strip() ==
                   f"error: cannot write the report to {existing}: it is a file, not a folder",
                   result.stderr)
    scenario.check("the file is untouched", existing.read_text() == "keep me")


@pytest.mark.scenario(ERRORS)
def test_a_database_url_with_a_bad_port_is_named_in_one_line(python_processes, scenario):
    url = "postgresql+psycopg://u:hunter2@127.0.0.1:abc/db"
    result = cli_run(["runs", "list"], url)
    lines = result.stderr.strip().splitlines()
    scenario.check("`runs list` exits 1", result.returncode == 1, result.stderr)
    scenario.check("one `error:` line naming the URL without its password",
                   len(lines) == 1 and lines[0].startswith("error: ") and
                   "postgresql+psycopg://u:***@127.0.0.1:abc/db" in lines[0], result.stderr)
    scenario.check("the password is not shown", "hunter2" not in result.stderr + result.stdout)
