"""Runs, started, resumed and re-judged the same way from every face. `record_run` checks
and records a run (a bad configuration fails there, before any model is opened), `execute`
answers and judges the samples not saved yet (of a new run and of a resumed one alike) and
`add_judges` judges saved answers again. The app starts runs in the background with a
`RunLauncher`; the progress of every run is read back from the store, so runs started from
the CLI show the same way."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any, Callable

from ragshield.answerers.registry import GIVEN, make_answerer
from ragshield.config import GROUNDED_RULE, Settings
from ragshield.errors import OptionError
from ragshield.judges.builtin import JUDGES
from ragshield.judges.registry import judge_names
from ragshield.decision_rule import POOLED_RULES, PolicyRule, named_judges, parse_rule_text
from ragshield.judging import choose_rule
from ragshield.pipeline import (RejudgeOutcome, RunModels, RunOutcome, execute_run, rejudge_run,
                                start_run)
from ragshield.policies.rules import policy_rule
from ragshield.run_config import RunConfig, RunConfigError, check_config, with_readers
from ragshield.services.data.datasets import ensure_demo_dataset
from ragshield.services.form_values import whole_number
from ragshield.services.jobs import Job, Jobs
from ragshield.services.learning.policies import policy_sources, with_policy
from ragshield.services.questions.ask_choices import corpus_names, packaged_choice
from ragshield.services.questions.settlement import default_rule, defaults, settle_rule
from ragshield.services.runs.run_choices import newest_runs
from ragshield.store.database import Store
from ragshield.store.runs import RunSummary, failures, get_run, list_runs, set_run_status
from ragshield.store.samples import count_given_answers

__all__ = ["ANSWER_SOURCES", "RULES", "GivenAnswers", "ModelOpener", "NewRun", "RunConfig",
           "NoGivenAnswersError", "RunForm", "RunLauncher", "RunProgress",
           "RunResult", "add_judges", "check_given_answers", "execute", "form_config",
           "form_defaults", "given_answers", "list_runs", "record_run", "run_answerer"]

log = logging.getLogger(__name__)

RULES = (*POOLED_RULES, GROUNDED_RULE, *JUDGES)  # every decision rule a run can start with
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
    """Check and record a new run; nothing is generated yet. The judges' readers are settled
    (run_config.with_readers) and stored with the run. Without a rule, the run decides
    by the default one (a pinned policy, else the configured rule) where it fits the judges,
    and a policy's judges read from the models it was fitted on,
    else by majority (settlement.settle_rule). The demo
    set is imported first into a store without it, so that a run on `demo` works on a new
    database. A run of given answers on samples that carry none is refused
    (check_given_answers), after the configuration's own checks. A run that names no model
    records the configured one (Settings.model)."""
    ensure_demo_dataset(store)
    rule, note = settle_rule(store, config.rule, judge_names(",".join(config.judges)),
                             default_rule(settings, store))
    # The configured model is recorded: a resumed run answers with the model it began
    # with, and its readers name the model that really answered.
    config = replace(config, rule=rule.rule,
                     model=config.model or (None if config.small_model else settings.model))
    checked = check_config(with_readers(with_policy(store, check_config(config)), settings))
    check_given_answers(store, checked)
    if checked.retrieval != "given" and checked.corpus not in corpus_names(settings.corpora_dir):
        # Found out when the first sample is read, the models would be open by then, and a
        # run left pending behind.
        raise RunConfigError(f"corpus: no corpus named {checked.corpus!r} (corpora: "
                             f"{', '.join(corpus_names(settings.corpora_dir))}); ingest it with "
                             "`ragshield corpus ingest`")
    return NewRun(start_run(store, checked, name=name), note)


@dataclass(frozen=True)
class RunResult:
    outcome: RunOutcome
    rule: str  # the decision rule stored with the run
    failures: dict[str, str]  # the dataset's sample id -> the error of its latest attempt


def execute(store: Store, settings: Settings, run_id: int, *, models: RunModels | None = None,
            progress: bool = False, concurrency: int | None = None) -> RunResult:
    """Answer and judge every sample of the run not saved yet (`concurrency` samples at once
    where given, else the run's own). Ctrl-C (a KeyboardInterrupt, which the CLI also raises
    on SIGTERM) marks the run interrupted and goes through."""
    outcome = execute_run(store, run_id, settings, models=models, progress=progress,
                          concurrency=concurrency)
    return RunResult(outcome, get_run(store, run_id).config["rule"], failures(store, run_id))


def add_judges(store: Store, settings: Settings, run_id: int, judges: str, *,
               progress: bool = False) -> RejudgeOutcome:
    """Run `judges` ("all" or names separated by commas) on the run's saved answers, skipping
    the pairs already judged; no answer is generated again."""
    return rejudge_run(store, run_id, judges, settings, progress=progress)


def check_endpoint(store: Store, run_id: int, base_url: str | None) -> None:
    """OptionError when `base_url` is given for a run that records another endpoint: the run
    goes on with its own (one that records none takes the given one)."""
    stored = get_run(store, run_id).config.get("base_url")
    if base_url is not None and stored is not None and base_url != stored:
        raise OptionError(f"--base-url: run {run_id} answers from its stored endpoint "
                          f"{stored}")


# -- the app's start form ------------------------------------------------------------------

@dataclass(frozen=True)
class RunForm:
    """What the start form offers first."""

    judges: list[str]
    rule: str


def form_defaults(settings: Settings, store: Store | None = None) -> RunForm:
    """The trivial judge, plus the judges of the default rule (with `store`, a policy pinned
    on the Dashboard, else the configured rule: settlement.defaults, as the Demo's form), and
    the rule a run of those judges decides by (choose_rule, as for every run)."""
    found = defaults(settings, store)
    default = found.rule.rule
    named = parse_rule_text(default)
    if store is not None and isinstance(named, PolicyRule):
        if found.policy_judges is None:  # unpinned meanwhile: the configured rule's form
            return form_defaults(settings)
        return RunForm(["trivial", *(judge for judge in found.policy_judges
                                     if judge != "trivial")], default)
    # A pooled rule, or a policy not stored (the configured rule naming one): no judges of
    # its own to offer.
    reads = sorted(set(named_judges(named)) - {"trivial"})
    judges = ["trivial", *(judge for judge in reads if judge in JUDGES)]
    return RunForm(judges, choose_rule(None, judges, default).rule)


def rule_names(store: Store) -> list[str]:
    """Every rule a run can be started with: the pooled rules, the grounded rule, each judge
    and each stored policy (`policy:NAME`, its newest version)."""
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

@dataclass(frozen=True)
class RunProgress:
    run: RunSummary
    error: str | None = None  # why the thread of a run started here stopped early


class RunLauncher:
    """The runs this app started, one at a time, each a background job (services/jobs.py).

    `open_models` replaces the models a run opens from its configuration (tests pass a
    scripted model); by default every run opens its own, so it never shares the embedded
    model (and its lock) with the tabs."""

    KIND = "run"

    def __init__(self, store: Store, settings: Settings, *,
                 open_models: ModelOpener | None = None, jobs: Jobs | None = None) -> None:
        self.store, self.settings, self.open_models = store, settings, open_models
        self.jobs = jobs or Jobs()

    def start(self, config: RunConfig, *, name: str | None = None) -> int:
        """Record the run (record_run) and start executing it; returns its id at once.
        Raises a UserError for a bad configuration or dataset, JobBusy (one too) while a run
        started here is still going."""
        with self.jobs.one_at_a_time(self.KIND):
            new = record_run(self.store, self.settings, config, name=name)
            self.jobs.start(self.KIND, str(new.run_id),
                            lambda _job: self._execute(new.run_id, config), background=True)
        if new.note:
            log.info("run %s: %s", new.run_id, new.note)
        return new.run_id

    def _execute(self, run_id: int, config: RunConfig) -> None:
        try:
            models = self.open_models(config) if self.open_models else None
            execute(self.store, self.settings, run_id, models=models)
        except Exception:
            set_run_status(self.store, run_id, "failed", finished=True)
            raise

    def _job(self, run_id: int) -> Job | None:
        return next((job for job in self.jobs.of_kind(self.KIND) if job.key == str(run_id)),
                    None)

    def started(self) -> list[int]:
        """Ids of the runs started here, oldest first."""
        return [int(job.key) for job in self.jobs.of_kind(self.KIND)]

    def active(self) -> list[int]:
        return [int(job.key) for job in self.jobs.of_kind(self.KIND) if job.running]

    def error(self, run_id: int) -> str | None:
        """Why the run's job stopped early (e.g. its model could not be opened)."""
        job = self._job(run_id)
        return job.error_text if job is not None else None

    def wait(self, run_id: int, timeout: float | None = None) -> bool:
        """Wait for the run's job; True when it has ended."""
        job = self._job(run_id)
        return job is None or job.wait(timeout)

    def progress(self) -> list[RunProgress]:
        """Each run going on (started from the CLI too) and each run started here, newest
        first."""
        mine = set(self.started())
        return [RunProgress(run, self.error(run.id)) for run in newest_runs(self.store)
                if run.status == "running" or run.id in mine]
