"""The app launched for real (`python -m ragshield serve`) on a free port, for gradio_client
and browser tests: a temp SQLite database prepared beforehand, optionally with --auth."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ragshield.datasets.demo import DEMO_DATASET

from ragshield.services.data.datasets import ensure_demo_dataset
from ragshield.store.database import Store, open_store
from ragshield.store.labels import label_history
from ragshield.store.runs import list_runs
from ragshield.store.sample_import import import_samples
from ragshield.store.samples import list_samples, load_sample
from ragshield.testing.servers import launched_app as launched_server
from ragshield.testing.synthetic_run import fill_synthetic_run
from ragshield.types import Passage, Sample

ROOT = Path(__file__).resolve().parents[1]  # the checkout, where app.py is

SYNTHETIC_JUDGES = ("token_prob", "p_true", "cot_hybrid", "counterfactual")
SYNTHETIC_SAMPLES = 50
# Demo questions are asked with these: token_prob reads the answer's own log-probs and
# trivial keeps every answer, so a question costs one model call.
CHEAP_JUDGES = ("token_prob", "trivial")
HOSTILE_DATASET = "hostile"
HOSTILE_SCRIPT = "<script>window.__xss=1</script>"
HOSTILE_IMG = '<img src=x onerror="window.__xss=1">'
HOSTILE_SAMPLES = [
    Sample(id="hostile-1", question=f"{HOSTILE_SCRIPT} Who wrote this?",
           passages=[Passage(text=f"{HOSTILE_IMG} Nobody wrote it.", title=HOSTILE_SCRIPT),
                     Passage(text=f"Plain text, then {HOSTILE_SCRIPT}.")]),
    Sample(id="hostile-2", question=f"{HOSTILE_IMG} What is it?",
           passages=[Passage(text=f"It is {HOSTILE_SCRIPT} a thing.")]),
]


@dataclass(frozen=True)
class PreparedStore:
    """What prepare_store put into the database."""

    database_url: str
    run_id: int  # the synthetic run
    synthetic_dataset: str
    demo_sample_id: str  # a short factoid question of the demo dataset


def short_factoid_sample(store: Store) -> str:
    """The id of the answerable demo sample with a short reference answer (a factoid, whose
    answer reads well in a screenshot) and the least text to read: the cheapest question
    for the embedded model (seconds per call on 2 cores)."""
    answerable = [s.id for s in list_samples(store, DEMO_DATASET) if s.answerable]
    samples = [load_sample(store, DEMO_DATASET, sample_id) for sample_id in answerable]
    factoids = [s for s in samples
                if s.reference_answers and all(len(a) <= 30 for a in s.reference_answers)]
    return min(factoids or samples,
               key=lambda s: len(s.question) + sum(len(p.text) for p in s.passages)).id


def prepare_store(folder: Path) -> PreparedStore:
    """A SQLite database in `folder` with the demo dataset, a finished synthetic run of
    SYNTHETIC_SAMPLES x SYNTHETIC_JUDGES (every 10th sample labelled) and the hostile
    dataset, whose questions and passages carry `<script>` and `<img onerror>`."""
    url = f"sqlite:///{folder / 'ui.db'}"
    store = open_store(url)
    try:
        ensure_demo_dataset(store)
        run_id = fill_synthetic_run(store, SYNTHETIC_SAMPLES, SYNTHETIC_JUDGES, seed=7)
        import_samples(store, HOSTILE_DATASET, HOSTILE_SAMPLES)
        demo_sample = short_factoid_sample(store)
        synthetic = next(run.dataset for run in list_runs(store) if run.id == run_id)
    finally:
        store.close()
    return PreparedStore(url, run_id, synthetic, demo_sample)


def current_label(database_url: str, dataset: str, sample_id: str,
                  annotator: str) -> str | None:
    """The annotator's current label on the sample, read from the database file (None:
    none, or retracted by an undo)."""
    store = open_store(database_url, migrate=False)
    try:
        mine = [r for r in label_history(store, dataset, sample_id) if r.annotator == annotator]
    finally:
        store.close()
    return None if not mine or mine[-1].retracted else mine[-1].label


@contextmanager
def launched_app(folder: Path, database_url: str, *, auth_file: Path | None = None,
                 env: dict[str, str] | None = None) -> Iterator[str]:
    """Start the app on `database_url`, its log in `folder`; yield its URL; stop it
    afterwards."""
    args = ["--auth", str(auth_file)] if auth_file is not None else []
    with launched_server(database_url, folder, args=args, env=env) as (url, _process):
        yield url
