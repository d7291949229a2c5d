"""The demo set judged by a scripted model whose scores are known to be informative, and
labelled by "people" whose labels are the set's own flags: the run that the policy tests, the
Policy panel's and the Results out panel's tests fit and watch policies on.

Judging the 160 samples and labelling them takes about 1.5 s, and many tests want the same
run on a new SQLite store: the first build of each kind is kept as a template database in
this process and copied into the next store (SQLite's backup API) instead of being run again.
PostgreSQL stores are built each time."""

from __future__ import annotations

import atexit
import math
import shutil
import tempfile
import zlib
from pathlib import Path

from sqlalchemy import func, select

from ragshield.judges.judge_readers import SELF
from ragshield.judges.yes_no import REPLY_YES_OR_NO
from ragshield.metrics.correctness import is_correct
from ragshield.pipeline import RunModels
from ragshield.llm.packaged_models import SMALLER_MODEL
from ragshield.run_config import RunConfig
from ragshield.services.annotation.labelling import add_annotator, label_sample
from ragshield.services.data.datasets import ensure_demo_dataset
from ragshield.services.runs.runs import execute, record_run
from ragshield.store.database import Store
from ragshield.store.models import Dataset
from ragshield.store.samples import iter_samples
from tests.fakes import ScriptedLLM, ScriptedReply
from tests.sqlite_copies import copy_sqlite

JUDGE = "p_true"


def _unit(text: str) -> float:
    """A fixed pseudo-random number in [0, 1) for a text."""
    return zlib.crc32(text.encode()) / 2**32


class DemoWorld:
    """What the scripted model knows of each demo question: its answer (right for three in
    four answerable questions) and a P(yes) that leans towards the truth, with noise."""

    def __init__(self, store) -> None:
        self.samples = {s.question: s for s in iter_samples(store, "demo")}

    def _sample(self, messages):
        text = messages[-1]["content"]
        return max((s for q, s in self.samples.items() if q in text),
                   key=lambda s: len(s.question))

    def answer_of(self, sample) -> str:
        if sample.answerable and _unit(sample.id) < 0.75:
            return sample.reference_answers[0]
        return "Atlantis"

    def good(self, sample) -> bool:
        return bool(sample.answerable) and is_correct(self.answer_of(sample),
                                                      sample.reference_answers)

    def respond(self, messages):
        sample = self._sample(messages)
        if REPLY_YES_OR_NO in messages[-1]["content"]:
            z = (2.0 if self.good(sample) else -1.0) + 5 * (_unit("noise" + sample.id) - 0.5)
            p_yes = 1 / (1 + math.exp(-z))
            return ScriptedReply("yes", top={"yes": math.log(p_yes), "no": math.log(1 - p_yes)})
        return ScriptedReply(f"Answer: {self.answer_of(sample)}\nEvidence: ## Passage-0 ##")


def judged_demo_run(store: Store, settings, judges: list[str],
                    labelled: bool = True) -> tuple[DemoWorld, int]:
    """A run of the demo set by these judges, every sample labelled from its flags (unless
    not `labelled`: then the dataset's references and flags are the only truth). On a new
    SQLite store the run is copied from this process's template when there is one."""
    key = (tuple(judges), labelled)
    database = _empty_sqlite_file(store)
    if database is not None and key in _TEMPLATES:
        template, run_id = _TEMPLATES[key]
        copy_sqlite(template, database)
        return DemoWorld(store), run_id
    world, run_id = _judged_demo_run(store, settings, judges, labelled)
    if database is not None:
        template = Path(_template_folder()) / f"template-{len(_TEMPLATES)}.db"
        copy_sqlite(database, template)
        _TEMPLATES[key] = (template, run_id)
    return world, run_id


_TEMPLATES: dict[tuple[tuple[str, ...], bool], tuple[Path, int]] = {}
_FOLDER: list[str] = []


def _template_folder() -> str:
    if not _FOLDER:
        _FOLDER.append(tempfile.mkdtemp(prefix="ragshield-test-templates-"))
        atexit.register(shutil.rmtree, _FOLDER[0], True)
    return _FOLDER[0]


def _empty_sqlite_file(store: Store) -> Path | None:
    """The store's SQLite file when the store holds no dataset yet, else None."""
    url = store.engine.url
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    with store.session() as session:
        if session.scalar(select(func.count()).select_from(Dataset)):
            return None
    return Path(url.database)


def _judged_demo_run(store: Store, settings, judges: list[str],
                     labelled: bool) -> tuple[DemoWorld, int]:
    ensure_demo_dataset(store)
    world = DemoWorld(store)
    # The scripted model stands for the 0.5B and reads for every judge ("self"), as the run's
    # config says.
    run_id = record_run(store, settings, RunConfig(dataset="demo", judges=judges,
                                                   rule=judges[0], judge_model=SELF,
                                                   model=SMALLER_MODEL)).run_id
    execute(store, settings, run_id, models=RunModels(main=ScriptedLLM(respond=world.respond)))
    if not labelled:
        return world, run_id
    for name in ("flag-reader", "second-reader", "third-reader"):
        add_annotator(store, name)
    for sample in world.samples.values():
        label_sample(store, "demo", sample.id, "flag-reader",
                     "answerable" if sample.answerable else "unanswerable",
                     answer_correct=world.good(sample))
    return world, run_id
