"""A run: dataset x passages x answerer x judges -> store, one transaction per sample.

A sample is saved whole (its answers and every verdict) or not at all, so a run killed at
any point resumes where it stopped: `execute_run` skips the samples already saved and
retries the failed ones. Judging saved answers with more judges (`rejudge_run`) needs no
new generation. One process at a time executes a run (store/run_owner.py): a second one
is refused instead of racing the first to save the same samples.
"""

from __future__ import annotations

import logging
import sys
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Iterator, Sequence

from tqdm import tqdm

from ragshield.answerers.base import Answerer
from ragshield.answerers.norag import NoRagAnswerer
from ragshield.answerers.registry import make_answerer
from ragshield.config import Settings
from ragshield.conversation import in_conversation
from ragshield.errors import UserError
from ragshield.judges.base import Judge
from ragshield.judges.registry import make_judges
from ragshield.judging import judge_sample, judging_order, parallelism
from ragshield.llm.base import LLM
from ragshield.policies.policy import config_rule
from ragshield.run_config import RunConfig, RunConfigError, check_config
from ragshield.store import runs as run_store
from ragshield.store.database import Store
from ragshield.store.run_owner import held_run
from ragshield.store.runs import MAIN, RoleAnswer
from ragshield.store.samples import count_samples, iter_sample_rows
from ragshield.types import Sample, Verdict
from ragshield.version import code_version

log = logging.getLogger(__name__)


class LiveRunError(UserError, ValueError):
    """A live run was asked to run: its samples are asked one by one, not executed."""


class SampleFailed(RuntimeError):
    """A sample could not be answered or judged; it is recorded and retried on resume."""


@dataclass
class RunModels:
    """The models a run calls: `main` answers (and judges, but for those in `readers`,
    judge name -> the model it reads from); `larger` answers for the switch curve when the
    run asks for it."""

    main: LLM
    larger: LLM | None = None
    readers: dict[str, LLM] = field(default_factory=dict)

    def reader(self, judge: str) -> LLM:
        return self.readers.get(judge, self.main)

    def check_readers(self, config: RunConfig, judges: Sequence[str]) -> None:
        """ValueError when the run says one of `judges` reads from another model and none
        was handed in for it: its verdicts would be read by `main` and judged at the
        thresholds of the model the run names."""
        readers = config.readers()
        missing = [f"{judge} ({name})" for judge in judges
                   if (name := readers.reader(judge)) is not None and judge not in self.readers]
        if missing:
            raise ValueError(f"run config: {', '.join(missing)} read from another model, and "
                             "no reader was handed in for them (judge_model 'self' makes the "
                             "answering model read)")


@dataclass(frozen=True)
class RunOutcome:
    run_id: int
    status: str
    done: int
    total: int
    failed: int


def start_run(store: Store, config: RunConfig, *, name: str | None = None) -> int:
    """Check the configuration (judges, answerer, dataset, options) and record the run.
    Nothing is generated yet; a bad config fails here, before any model call."""
    config = check_config(config)
    available = count_samples(store, config.dataset)  # also fails on an unknown dataset
    if available == 0:
        raise RunConfigError(f"dataset {config.dataset!r} has no samples")
    total = min(config.limit or available, available)
    return run_store.create_run(store, dataset=config.dataset, config=config.to_dict(),
                                seed=config.seed, code_version=code_version(),
                                samples_total=total, name=name)


def open_models(config: RunConfig, settings: Settings, store: Store) -> RunModels:
    from ragshield.llm.factory import make_llm, make_reader
    from ragshield.llm.packaged_models import LARGER_MODEL, SMALLEST_MODEL

    settings = config.settings(settings)
    main = make_llm(settings, store=store,
                    packaged=SMALLEST_MODEL if config.small_model else None)
    opened = {LARGER_MODEL: make_llm(settings, store=store, packaged=LARGER_MODEL)
              } if config.switch else {}
    readers = config.readers()
    for name in readers.models(config.judges):
        if name not in opened:
            opened[name] = make_reader(settings, name, store=store)
    return RunModels(main=main, larger=opened.get(LARGER_MODEL) if config.switch else None,
                     readers={judge: opened[model] for judge in config.judges
                              if (model := readers.reader(judge)) is not None})


class _SampleWorker:
    """Everything one sample needs, built once per run."""

    def __init__(self, config: RunConfig, settings: Settings, models: RunModels) -> None:
        self.config, self.models = config, models
        self.rule = config_rule(config.to_dict())
        self.answerer: Answerer = make_answerer(config.answerer)
        self.judges: list[Judge] = make_judges(
            ",".join(config.judges), settings,
            config.readers().options(config.answer_model(settings)))
        self.finder = None
        if config.retrieval != "given":
            from ragshield.retrieval.passage_finder import PassageFinder

            self.finder = PassageFinder(config.corpus, config.retrieval, config.k,  # type: ignore[arg-type]
                                        noise=config.noise, seed=config.seed, settings=settings)

    def __call__(self, sample: Sample) -> tuple[dict[str, RoleAnswer], list[Verdict]]:
        sample = in_conversation(sample)  # a row's earlier turns, as /v1/judge reads them
        if self.finder is not None:
            sample = replace(sample, passages=self.finder.find(sample.question))
        main = self.models.main
        judged = judge_sample(sample, main, self.answerer, self.judges, self.rule,
                              reader=self.models.reader)
        errors = [f"{v.judge}: {v.error}" for v in judged.verdicts if v.error]
        if errors:
            raise SampleFailed("; ".join(errors))
        answers = {MAIN: RoleAnswer(judged.answer, self.answerer.model_name(sample, main),
                                    sample.passages)}
        if self.config.fallback:
            answers["norag"] = RoleAnswer(NoRagAnswerer().answer(sample, main), main.name, [])
        if self.models.larger is not None:
            larger = self.models.larger
            answers["larger"] = RoleAnswer(self.answerer.answer(sample, larger), larger.name,
                                           sample.passages)
        return answers, judged.verdicts


def _pending(store: Store, run: run_store.RunRecord,
             done: set[int]) -> Iterator[tuple[int, Sample]]:
    """The run's samples not saved yet, read in batches as the run goes."""
    return ((row_id, sample) for row_id, sample in
            iter_sample_rows(store, run.dataset or "", limit=run.samples_total)
            if row_id not in done)


def _results(work: Callable[[Sample], tuple], items: Iterable[tuple[int, Sample]], workers: int
             ) -> Iterator[tuple[int, Sample, tuple | BaseException]]:
    """(row id, sample, result or the exception it raised), in order for one worker and as
    they finish for several (at most 2 x workers samples in flight)."""
    def attempt(sample: Sample):
        try:
            return work(sample)
        except Exception as exc:  # recorded as the sample's failure, retried on resume
            return exc

    if workers == 1:
        for row_id, sample in items:
            yield row_id, sample, attempt(sample)
        return
    queue = iter(items)
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        flying: dict[Future, tuple[int, Sample]] = {}
        for row_id, sample in queue:
            flying[pool.submit(attempt, sample)] = (row_id, sample)
            if len(flying) >= 2 * workers:
                break
        while flying:
            finished, _ = wait(flying, return_when=FIRST_COMPLETED)
            for future in finished:
                row_id, sample = flying.pop(future)
                yield row_id, sample, future.result()
                nxt = next(queue, None)
                if nxt is not None:
                    flying[pool.submit(attempt, nxt[1])] = nxt
    finally:  # stopped early (Ctrl-C, SIGTERM): drop the queued samples, wait for none
        pool.shutdown(wait=False, cancel_futures=True)


def execute_run(store: Store, run_id: int, settings: Settings | None = None, *,
                models: RunModels | None = None, progress: bool = True,
                concurrency: int | None = None) -> RunOutcome:
    """Answer and judge every sample of the run not saved yet (first start and resume alike),
    `concurrency` samples at once where given, else the run's own. A failed sample is
    recorded with its error; Ctrl-C (or SIGTERM turned into it by the CLI), even while the
    models open, marks the run interrupted. RunHeldError, before any model is opened, when
    another live process executes the run."""
    run = run_store.get_run(store, run_id)
    config = RunConfig.from_dict(run.config)
    if config.live:
        raise LiveRunError(f"run {run_id} is a live run: it collects the questions people ask "
                           "and has nothing to resume (re-judging it works)")
    config = check_config(config)
    settings = settings or Settings()
    with held_run(store, run_id):
        try:
            models = models or open_models(config, settings, store)
            models.check_readers(config, config.judges)
            worker = _SampleWorker(config, settings, models)
            run_store.set_run_status(store, run_id, "running")
            workers = parallelism(models.main, concurrency or config.concurrency)
            return _execute(store, run, worker, workers, progress)
        except KeyboardInterrupt:
            run_store.set_run_status(store, run_id, "interrupted")
            raise


def _execute(store: Store, run: run_store.RunRecord, worker: _SampleWorker, workers: int,
             progress: bool) -> RunOutcome:
    saved = run_store.done_sample_ids(store, run.id)
    pending, done = _pending(store, run, saved), len(saved)
    failed = 0
    with tqdm(total=run.samples_total, initial=done, disable=not progress, file=sys.stderr,
              desc=f"run {run.id}", unit="sample") as bar:
        for row_id, sample, result in _results(worker, pending, workers):
            if isinstance(result, BaseException):
                failed += 1
                log.warning("run %s: sample %s failed: %s", run.id, sample.id, result)
                run_store.record_failure(store, run.id, row_id,
                                         f"{type(result).__name__}: {result}")
            else:
                run_store.save_sample(store, run.id, row_id, *result)
                done += 1
            bar.update(1)
            bar.set_postfix(failed=failed)
    status = "done" if failed == 0 else "incomplete"
    run_store.set_run_status(store, run.id, status, finished=True)
    return RunOutcome(run_id=run.id, status=status, done=done, total=run.samples_total,
                      failed=failed)


@dataclass(frozen=True)
class RejudgeOutcome:
    added: int
    failed: int  # verdicts that hit a backend error: not saved, so the next re-judge retries
    failures: dict[str, str] = field(default_factory=dict)  # sample id -> its verdicts' errors


def rejudge_run(store: Store, run_id: int, judges: str, settings: Settings | None = None, *,
                models: RunModels | None = None, progress: bool = True) -> RejudgeOutcome:
    """Run `judges` ("all" or names) on the run's saved answers, skipping (answer, judge)
    pairs already judged (a verdict that failed or could not run, as a live run keeps, is
    judged again and replaced). Answers are not generated again. A verdict that fails is not
    saved; the run's judge list gains only the judges with a saved verdict."""
    from ragshield.judges.registry import judge_names

    run = run_store.get_run(store, run_id)
    config = RunConfig.from_dict(run.config)
    names = judge_names(judges)
    settings = settings or Settings()
    chosen = judging_order(make_judges(",".join(names), settings,
                                       config.readers().options(config.answer_model(settings))))
    with held_run(store, run_id):  # a resume at the same time would add the same verdicts
        models = models or open_models(replace(config, switch=False, judges=names), settings,
                                       store)
        models.check_readers(config, names)
        added = failed = 0
        errors: dict[str, str] = {}
        judged: set[str] = set()  # judges with a saved verdict on at least one answer
        saved = run_store.iter_main_answers(store, run_id)
        for item in tqdm(saved, total=run.samples_total, disable=not progress, file=sys.stderr,
                         desc=f"re-judge run {run_id}"):
            sample = in_conversation(item.sample)
            verdicts = [judge.judge(sample, item.answer, models.reader(judge.name))
                        for judge in chosen if judge.name not in item.judges]
            good = [v for v in verdicts if not v.error]
            run_store.add_verdicts(store, item.answer_id, good)
            added, failed = added + len(good), failed + len(verdicts) - len(good)
            judged |= item.judges | {v.judge for v in good}
            if len(good) < len(verdicts):
                errors[item.sample.id] = "; ".join(f"{v.judge}: {v.error}"
                                                   for v in verdicts if v.error)
        run_store.add_run_judges(store, run_id, [n for n in names if n in judged])
    return RejudgeOutcome(added=added, failed=failed, failures=errors)
