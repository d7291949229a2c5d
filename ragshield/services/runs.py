"""Runs, started, resumed and re-judged the same way from every face. `record_run` checks
and records a run (a bad configuration fails there, before any model is opened), `execute`
answers and judges the samples not saved yet (of a new run and of a resumed one alike) and
`add_judges` judges saved answers again. The app starts runs in the background with a
`RunLauncher`; the progress of every run is read back from the store, so runs started from
the CLI show the same way."""

from __future__ import annotations

import logging
import os
import sys
import threading
from dataclasses import dataclass
from typing import Any, Callable

from ragshield.answerers.registry import GIVEN, make_answerer
from ragshield.config import Settings
from ragshield.errors import OptionError, UserError
from ragshield.judges.registry import JUDGES
from ragshield.judging import POOLED_RULES, choose_rule
from ragshield.pipeline import (RejudgeOutcome, RunModels, RunOutcome, execute_run, rejudge_run,
                                start_run)
from ragshield.run_config import RunConfig, check_config, with_default_rule
from ragshield.services.ask_choices import packaged_choice
from ragshield.services.datasets import ensure_demo_dataset
from ragshield.services.form_values import whole_number
from ragshield.policies.rules import policy_rule
from ragshield.services.policies import policy_sources, with_policy
from ragshield.services.run_choices import newest_runs
from ragshield.store.database import Store
from ragshield.store.runs import RunSummary, failures, get_run, list_runs, set_run_status
from ragshield.store.samples import count_given_answers

__all__ = ["ANSWER_SOURCES", "RULES", "GivenAnswers", "ModelOpener", "NewRun",
           "NoGivenAnswersError", "RunBusyError", "RunForm", "RunLauncher", "RunProgress",
           "RunResult", "add_judges", "check_given_answers", "execute", "form_config",
           "form_defaults", "given_answers", "list_runs", "record_run", "run_answerer"]

log = logging.getLogger(__name__)

RULES = (*POOLED_RULES, *JUDGES)  # every decision rule a run can be started with
ModelOpener = Callable[[RunConfig], RunModels]


ANSWER_SOURCES = ("generated", "given")  # a run's answers: by its answerer, or the dataset's


def run_answerer(answers: str, answerer: str | None, default: str) -> str:
    """The answerer of a run whose answers are `answers`: "generated" by `answerer` (the
    configured `default` when None), or "given" in the dataset (the `given` answerer, which
    no other answerer can stand in for: OptionError)."""
    if answers not in ANSWER_SOURCES:
        raise OptionError(f"answers must be {' or '.join(ANSWER_SOURCES)}, got {answers!r}")
    if answers == "generated":
        return answerer or default
    if answerer is not None and answerer.strip().lower() != GIVEN:
        raise OptionError(f"given answers are read from the dataset, not written by the "
                          f"answerer {answerer!r}: leave the answerer out")
    return GIVEN


class NoGivenAnswersError(OptionError):
    """A run of given answers on samples that carry none (every sample would fail)."""


@dataclass(frozen=True)
class GivenAnswers:
    """How many of a dataset's samples (the first `limit` a run takes) carry a given answer."""

    dataset: str
    samples: int
    given: int


def given_answers(store: Store, dataset: str, limit: int | None = None) -> GivenAnswers:
    """Count the given answers among the dataset's first `limit` samples in import order (the
    samples a run with that limit answers; all without one). UnknownDatasetError, naming the
    datasets, for an unknown name."""
    samples, given = count_given_answers(store, dataset, limit)
    return GivenAnswers(dataset, samples, given)


def check_given_answers(store: Store, config: RunConfig) -> None:
    """A run of given answers needs samples that carry them: NoGivenAnswersError, naming the
    dataset, when none of the samples it takes does (some missing is allowed: those samples
    fail alone and the run resumes once they are imported). Other runs pass."""
    if make_answerer(config.answerer).name != GIVEN:
        return
    taken = given_answers(store, config.dataset, config.limit)
    if not taken.samples or taken.given:
        return  # an empty dataset: start_run says so
    if config.limit is not None and given_answers(store, config.dataset).given:
        raise NoGivenAnswersError(
            f"the first {taken.samples} samples of dataset {config.dataset!r} carry no given "
            "answers to judge: take more samples, or import theirs")
    raise NoGivenAnswersError(
        f"dataset {config.dataset!r} carries no given answers to judge: import them with an "
        "answer per sample (an `answer` column), or generate the answers with an answerer")


@dataclass(frozen=True)
class NewRun:
    run_id: int
    note: str | None = None  # set when the configured default rule did not fit the judges


def record_run(store: Store, settings: Settings, config: RunConfig, *,
               name: str | None = None) -> NewRun:
    """Check and record a new run; nothing is generated yet. Without a rule, the run decides
    by the configured one where it fits the judges, else by majority (choose_rule). The demo
    set is imported first into a store without it, so that a run on `demo` works on a new
    database. A run of given answers on samples that carry none is refused
    (check_given_answers), after the configuration's own checks."""
    ensure_demo_dataset(store)
    config, note = with_default_rule(config, settings.decision_rule)
    checked = check_config(config)
    check_given_answers(store, checked)
    return NewRun(start_run(store, with_policy(store, checked), name=name), note)


@dataclass(frozen=True)
class RunResult:
    outcome: RunOutcome
    rule: str  # the decision rule stored with the run
    failures: dict[str, str]  # the dataset's sample id -> the error of its latest attempt


def execute(store: Store, settings: Settings, run_id: int, *, models: RunModels | None = None,
            progress: bool = False) -> RunResult:
    """Answer and judge every sample of the run not saved yet. Ctrl-C (a KeyboardInterrupt,
    which the CLI also raises on SIGTERM) marks the run interrupted and goes through."""
    outcome = execute_run(store, run_id, settings, models=models, progress=progress)
    return RunResult(outcome, get_run(store, run_id).config["rule"], failures(store, run_id))


def add_judges(store: Store, settings: Settings, run_id: int, judges: str, *,
               progress: bool = False) -> RejudgeOutcome:
    """Run `judges` ("all" or names separated by commas) on the run's saved answers, skipping
    the pairs already judged; no answer is generated again."""
    return rejudge_run(store, run_id, judges, settings, progress=progress)


# -- the app's start form ------------------------------------------------------------------

@dataclass(frozen=True)
class RunForm:
    """What the start form offers first."""

    judges: list[str]
    rule: str


def form_defaults(settings: Settings) -> RunForm:
    """The trivial judge, plus the configured rule when it names a judge, and the rule a run
    of those judges decides by (choose_rule, as for every run)."""
    default = settings.decision_rule
    judges = ["trivial", default] if default in JUDGES and default != "trivial" else ["trivial"]
    return RunForm(judges, choose_rule(None, judges, default).rule)


def rule_names(store: Store) -> list[str]:
    """Every rule a run can be started with: the pooled rules, each judge and each stored
    policy (`policy:NAME`, its newest version)."""
    return [*RULES, *(policy_rule(name, None) for name in policy_sources(store))]


def form_config(settings: Settings, dataset: str | None, limit: Any, answerer: str | None,
                judges: list[str] | None, rule: str, retrieval: str,
                fallback: bool, answers: str | None = "generated", model: str | None = None,
                switch: bool = False) -> RunConfig:
    """The RunConfig of the start form, with the configured backend and concurrency as the
    CLI takes them; the rest is checked by record_run. `answers` is one of ANSWER_SOURCES
    (None: generated): "given" judges the dataset's own answers, whatever the answerer box
    holds (the form disables it then). `model` is a model choice (ask_choices.MODEL_CHOICES):
    a packaged model answers on the embedded backend; `switch` also stores the larger
    model's answers."""
    if not dataset:
        raise OptionError("choose a dataset")
    if not judges:
        raise OptionError("choose at least one judge")
    answers = answers or "generated"
    packaged = packaged_choice(model)
    return RunConfig(
        dataset=dataset,
        limit=None if limit in (None, "") else whole_number(limit, "limit", minimum=1),
        answerer=run_answerer(answers, answerer if answers == "generated" else None,
                              settings.answerer),
        judges=list(judges), rule=rule, retrieval=retrieval,
        backend="embedded" if packaged else settings.backend, model=packaged,
        fallback=bool(fallback), switch=bool(switch), concurrency=settings.concurrency)


# -- runs in the background ------------------------------------------------------------------

# Runs started from the app yield the CPU to the page: at this niceness a run's threads get
# about a tenth of a core that a request also wants, so labels do not wait for the model.
RUN_NICENESS = 10


def lower_thread_priority(niceness: int = RUN_NICENESS) -> None:
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
        log.warning("could not lower the run's CPU priority: %s", error)


class RunBusyError(UserError, ValueError):
    """A run started from the app is still going (a second would compete for the model and
    the CPU)."""


@dataclass(frozen=True)
class RunProgress:
    run: RunSummary
    error: str | None = None  # why the thread of a run started here stopped early


class RunLauncher:
    """The runs this app started, each executed in its own daemon thread.

    `open_models` replaces the models a run opens from its configuration (tests pass a
    scripted model); by default every run opens its own, so it never shares the embedded
    model (and its lock) with the tabs."""

    def __init__(self, store: Store, settings: Settings, *,
                 open_models: ModelOpener | None = None) -> None:
        self.store, self.settings, self.open_models = store, settings, open_models
        self._threads: dict[int, threading.Thread] = {}
        self._errors: dict[int, str] = {}
        self._lock = threading.Lock()

    def start(self, config: RunConfig, *, name: str | None = None) -> int:
        """Record the run (record_run) and start executing it; returns its id at once.
        Raises a UserError for a bad configuration or dataset, RunBusyError (one too) while
        a run started here is still going."""
        with self._lock:
            busy = self.active()
            if busy:
                raise RunBusyError(f"run {busy[0]} is still going: start the next one when "
                                   "it is done")
            new = record_run(self.store, self.settings, config, name=name)
            thread = threading.Thread(target=self._execute, args=(new.run_id, config),
                                      daemon=True, name=f"ragshield-run-{new.run_id}")
            self._threads[new.run_id] = thread
        if new.note:
            log.info("run %s: %s", new.run_id, new.note)
        thread.start()
        return new.run_id

    def _execute(self, run_id: int, config: RunConfig) -> None:
        lower_thread_priority()
        try:
            models = self.open_models(config) if self.open_models else None
            execute(self.store, self.settings, run_id, models=models)
        except Exception as exc:  # the thread's end: keep the reason for the progress view
            log.exception("run %s stopped", run_id)
            self._errors[run_id] = f"{type(exc).__name__}: {exc}"
            set_run_status(self.store, run_id, "failed", finished=True)

    def started(self) -> list[int]:
        """Ids of the runs started here, oldest first."""
        return list(self._threads)

    def active(self) -> list[int]:
        return [run_id for run_id, thread in self._threads.items() if thread.is_alive()]

    def error(self, run_id: int) -> str | None:
        """Why the run's thread stopped early (e.g. its model could not be opened)."""
        return self._errors.get(run_id)

    def wait(self, run_id: int, timeout: float | None = None) -> bool:
        """Wait for the run's thread; True when it has ended."""
        thread = self._threads[run_id]
        thread.join(timeout)
        return not thread.is_alive()

    def progress(self) -> list[RunProgress]:
        """Each run going on (started from the CLI too) and each run started here, newest
        first."""
        mine = set(self._threads)
        return [RunProgress(run, self.error(run.id)) for run in newest_runs(self.store)
                if run.status == "running" or run.id in mine]
