"""Concurrent annotators: 8 people label an overlapping pool of samples at once through the
launched app (app.py), the way its page sends a label (one POST per label, a session per
tab), on SQLite and on PostgreSQL. They send new
labels, change their labels (a new version), resend a label unchanged, retry a request
(the same request id again) and double-click (the same request id twice at once). A
client-side ledger of every acknowledged submission is then compared with the database:
every stored request id is there exactly once, with the right annotator, sample and label;
no row is there that nobody acknowledged; each person's current label is their last one.
Meanwhile a run started from the app's Dashboard answers and judges demo questions with the
embedded model in the same server process: labels must not wait for it.
Each person's first label comes from 4 tabs at once, and a library-level test registers one
new name and one skip from 8 connections at once (both used to fail on the unique key)."""

from __future__ import annotations

import random
import statistics
import threading
import time
import uuid
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
import httpx
from gradio_client import Client
from sqlalchemy import func, select

from ragshield.datasets.demo import DEMO_DATASET
from ragshield.services.data.datasets import ensure_demo_dataset
from ragshield.store.database import open_store
from ragshield.store.labels import add_annotator, skip
from ragshield.store.models import LABEL_VALUES, Annotator, Label, Sample, Skip
from ragshield.store.runs import RunSummary, list_runs
from ragshield.store.sample_import import import_samples
from ragshield.store.samples import dataset_id_of
from ragshield.testing.app_client import browser_like_client, call_like_browser
from ragshield.types import Passage
from ragshield.types import Sample as DatasetSample
from tests.reliability.scale import sized
from tests.reliability.scenario import Scenario

SCENARIO = "Concurrent annotators through the launched app (8 people, overlapping samples)"
DATASET = "pool"
ANNOTATORS = 8
POOL = 12  # samples: 8 people on 12 samples label the same ones over and over
SECONDS = sized(10, 90)  # of labelling, per database
RETRY, DOUBLE, SAME = 0.12, 0.06, 0.08  # chances of each kind of submission
FIRST_TABS = 4  # a person's first label comes from this many tabs at once
# The run going on meanwhile: more demo questions than it can answer while people label.
RUN_SAMPLES, RUN_JUDGES = 200, ["trivial", "p_true"]


@dataclass
class Submission:
    """One submission as the client saw it: what was sent and what came back."""

    annotator: str
    sample_id: str
    label: str
    request_id: str
    kind: str  # new | change | same (the current label again) | retry | double
    seconds: float
    stored: bool | None = None  # None: no answer (an error)
    label_id: int | None = None
    returned_label: str | None = None
    returned_annotator: str | None = None
    error: str | None = None


def pool_samples() -> list[DatasetSample]:
    return [DatasetSample(id=f"pool-{i:02d}", question=f"Pool question {i}: what is item {i}?",
                          passages=[Passage(text=f"Item {i} is a thing numbered {i}.")],
                          reference_answers=[f"thing {i}"], answerable=True)
            for i in range(POOL)]


def prepare(url: str) -> None:
    store = open_store(url)
    try:
        ensure_demo_dataset(store)
        import_samples(store, DATASET, pool_samples())
    finally:
        store.close()


@dataclass(frozen=True)
class Tab:
    """One browser tab of the app: its connection and its session."""

    http: httpx.Client
    session: str


def send(tab: Tab, submission: Submission) -> Submission:
    started = time.perf_counter()
    try:
        result = call_like_browser(tab.http, "annotate_label", [
            DATASET, submission.sample_id, submission.label, "", submission.request_id,
            submission.annotator, "unlabelled", 1], tab.session)
    except Exception as error:  # noqa: BLE001 - every failure is a finding, checked later
        submission.error = f"{type(error).__name__}: {error}"
    else:
        submission.stored, submission.label_id = result["stored"], result["label_id"]
        submission.returned_label = result["label"]
        submission.returned_annotator = result["annotator"]
    submission.seconds = time.perf_counter() - started
    return submission


def annotator(index: int, url: str, start: threading.Barrier, seconds: float,
              ledger: list[Submission]) -> None:
    """One person: labels samples of the shared pool until the time is up. The ledger is
    this person's own (appended in order), so the last entry per sample is their label."""
    rng = random.Random(1000 + index)
    name = f"annotator-{index}"
    tabs = [Tab(browser_like_client(url, timeout=120), f"{name}-tab{t}")
            for t in range(FIRST_TABS)]
    tab, spare = tabs[0], tabs[1]
    samples = [sample.id for sample in pool_samples()]
    current: dict[str, Submission] = {}  # sample -> the submission of my current label
    for opened in tabs:  # the page's load: the server makes the tab's session state then
        call_like_browser(opened.http, "annotate_progress", [DATASET, ""], opened.session)
    start.wait()
    deadline = time.monotonic() + seconds
    with ThreadPoolExecutor(FIRST_TABS) as clicks:
        while time.monotonic() < deadline:
            draw = rng.random()
            stored = [s for s in ledger if s.stored]
            if draw < RETRY and stored:  # a retry of my last stored label: nothing new
                last = stored[-1]
                ledger.append(send(tab, Submission(name, last.sample_id, last.label,
                                                      last.request_id, "retry", 0)))
                continue
            sample_id = rng.choice(samples)
            mine = current.get(sample_id)
            if mine is None:
                label, kind = rng.choice(LABEL_VALUES), "new"
            elif draw < RETRY + SAME:
                label, kind = mine.label, "same"
            else:
                label, kind = rng.choice([v for v in LABEL_VALUES if v != mine.label]), "change"
            request_id = uuid.uuid4().hex
            # A double click (the same request twice at once); a new name's first label is
            # sent from several tabs at once, so that they register the name together.
            if draw > 1 - DOUBLE or not ledger:
                pair = [clicks.submit(send, c, Submission(name, sample_id, label, request_id,
                                                          "double", 0))
                        for c in (tabs if not ledger else (tab, spare))]
                done = [future.result() for future in pair]
                ledger.extend(done)
                winner = next((s for s in done if s.stored), done[0])
            else:
                winner = send(tab, Submission(name, sample_id, label, request_id, kind, 0))
                ledger.append(winner)
            if winner.error is None:
                current[sample_id] = winner


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def start_app_run(app_url: str) -> None:
    """Start a run from the Dashboard's form (a queued event, so through gradio_client). Its
    answerer is not the shipped demo run's, whose calls the new database holds: this run
    calls the model."""
    Client(app_url, verbose=False).predict(
        None, DEMO_DATASET, RUN_SAMPLES, "vanilla", RUN_JUDGES, "p_true", "given", False,
        api_name="/dashboard_start_run")


def app_run(url: str, *, running_within: float = 0) -> RunSummary:
    """The run started from the app (the newest run of the demo dataset: the shipped demo
    run came first), once it is running (its model opened) or `running_within` seconds have
    passed."""
    store = open_store(url, migrate=False)
    deadline = time.monotonic() + running_within
    try:
        while True:
            run = max((run for run in list_runs(store) if run.dataset == DEMO_DATASET),
                      key=lambda run: run.id)
            if run.status != "pending" or time.monotonic() > deadline:
                return run
            time.sleep(0.2)
    finally:
        store.close()


def database_rows(url: str) -> list[dict]:
    store = open_store(url, migrate=False)
    try:
        with store.session() as session:
            dataset_id = dataset_id_of(session, DATASET)
            return [row._asdict() for row in session.execute(
                select(Label.id, Label.request_id, Label.label, Label.retracted,
                       Annotator.name.label("annotator"), Sample.external_id.label("sample_id"))
                .join(Annotator, Annotator.id == Label.annotator_id)
                .join(Sample, Sample.id == Label.sample_id)
                .where(Sample.dataset_id == dataset_id).order_by(Label.id))]
    finally:
        store.close()


def check_ledger(scenario: Scenario, ledgers: list[list[Submission]], rows: list[dict]) -> None:
    every = [s for ledger in ledgers for s in ledger]
    failed = [s.error for s in every if s.error]
    scenario.check("every submission was answered (no error, no lock timeout)", not failed,
                   failed[:5])
    scenario.check("every answer names the annotator and sample sent",
                   all(s.returned_annotator == s.annotator for s in every))
    stored = [s for s in every if s.stored]
    by_request = Counter(s.request_id for s in stored)
    scenario.check("no request id was acknowledged as stored twice",
                   max(by_request.values(), default=1) == 1,
                   [r for r, n in by_request.items() if n > 1][:5])
    new_or_change = [s for s in every if s.kind in ("new", "change")]
    scenario.check("every new label and label change was stored",
                   all(s.stored for s in new_or_change),
                   [s for s in new_or_change if not s.stored][:3])
    retries = [s for s in every if s.kind == "retry"]
    original = {s.request_id: s for s in stored}
    scenario.check("a retried request stored nothing and returned the original label",
                   all(s.stored is False and s.label_id == original[s.request_id].label_id
                       and s.returned_label == s.label for s in retries),
                   [s for s in retries if s.stored is not False][:3])
    doubles = defaultdict(list)
    for s in every:
        if s.kind == "double":
            doubles[s.request_id].append(s)
    scenario.check("a double click (the same request from 2 or 4 tabs at once) stored one label",
                   all(sum(bool(s.stored) for s in pair) == 1 and len({s.label_id for s in pair})
                       == 1 for pair in doubles.values()), list(doubles.values())[:2])
    same = [s for s in every if s.kind == "same"]
    scenario.check("resending one's current label stored nothing",
                   all(s.stored is False for s in same), [s for s in same if s.stored][:3])

    rows_by_request = defaultdict(list)
    for row in rows:
        rows_by_request[row["request_id"]].append(row)
    missing = [s.request_id for s in stored if len(rows_by_request.get(s.request_id, [])) != 1]
    scenario.check("every acknowledged label is in the database exactly once", not missing,
                   missing[:5])
    wrong = [(s, rows_by_request[s.request_id][0]) for s in stored if not missing
             and (rows_by_request[s.request_id][0]["id"], rows_by_request[s.request_id][0]
                  ["annotator"], rows_by_request[s.request_id][0]["sample_id"],
                  rows_by_request[s.request_id][0]["label"])
             != (s.label_id, s.annotator, s.sample_id, s.label)]
    scenario.check("... with the id, annotator, sample and label acknowledged", not wrong,
                   wrong[:3])
    orphans = [row for row in rows if row["request_id"] not in original]
    scenario.check("no label row that no acknowledgement accounts for", not orphans, orphans[:5])
    scenario.check("as many label rows as labels acknowledged as stored",
                   len(rows) == len(stored), (len(rows), len(stored)))

    expected = {}
    for ledger in ledgers:
        for s in ledger:
            if s.error is None and s.kind != "retry":
                expected[s.annotator, s.sample_id] = s.label
    newest = {}
    for row in rows:  # in id order: the last one per person and sample is the current
        newest[row["annotator"], row["sample_id"]] = row["label"]
    differ = {key: (newest.get(key), label) for key, label in expected.items()
              if newest.get(key) != label}
    scenario.check("each person's current label on each sample is their last one", not differ,
                   list(differ.items())[:5])
    scenario.check("nobody has a current label they never sent", set(newest) == set(expected),
                   set(newest) ^ set(expected))


def run_annotators(url: str) -> tuple[list[list[Submission]], float]:
    ledgers: list[list[Submission]] = [[] for _ in range(ANNOTATORS)]
    start = threading.Barrier(ANNOTATORS + 1)
    threads = [threading.Thread(target=annotator, args=(i, url, start, SECONDS, ledgers[i]),
                                daemon=True) for i in range(ANNOTATORS)]
    for thread in threads:
        thread.start()
    start.wait(timeout=300)
    began = time.monotonic()
    for thread in threads:
        thread.join(timeout=SECONDS + 300)
    assert not any(thread.is_alive() for thread in threads), "an annotator hangs"
    return ledgers, time.monotonic() - began


@pytest.mark.scenario(SCENARIO)
def test_concurrent_annotators_lose_and_duplicate_nothing(
        store_url: str, launch_app, tmp_path: Path, scenario: Scenario) -> None:
    url, database = store_url, store_url.split(":")[0].split("+")[0]  # sqlite | postgresql
    prepare(url)
    with launch_app(tmp_path, url) as app_url:
        start_app_run(app_url)
        before = app_run(url, running_within=120)
        ledgers, elapsed = run_annotators(app_url)
        after = app_run(url)
    rows = database_rows(url)
    check_ledger(scenario, ledgers, rows)
    scenario.check("a run started in the app was going on throughout the labelling",
                   before.status == after.status == "running" and after.done < after.total,
                   (before, after))

    every = [s for ledger in ledgers for s in ledger]
    kinds = Counter(s.kind for s in every)
    latencies = [1000 * s.seconds for s in every]
    per_sample = Counter(row["sample_id"] for row in rows)
    people = defaultdict(set)
    for row in rows:
        people[row["sample_id"]].add(row["annotator"])
    scenario.check("the samples were shared: most were labelled by several people",
                   sum(len(p) >= 2 for p in people.values()) >= POOL // 2, dict(people))
    prefix = f"{database}: "
    scenario.figure(prefix + "annotators x seconds", f"{ANNOTATORS} x {elapsed:.0f}")
    scenario.figure(prefix + "submissions (new / change / same / retry / double)",
                    " / ".join(str(kinds[k]) for k in ("new", "change", "same", "retry",
                                                       "double")))
    scenario.figure(prefix + "label rows stored", len(rows))
    scenario.figure(prefix + "most rows on one sample", max(per_sample.values(), default=0))
    scenario.figure(prefix + "submissions per second", round(len(every) / elapsed, 1))
    scenario.figure(prefix + "latency p50 / p95 / p99 / max (ms)", " / ".join(
        f"{percentile(latencies, q):.0f}" for q in (0.5, 0.95, 0.99, 1.0)))
    scenario.figure(prefix + "latency mean (ms)", round(statistics.fmean(latencies), 1))
    scenario.figure(prefix + "run samples answered and judged meanwhile", after.done - before.done)


@pytest.mark.scenario(SCENARIO)
def test_a_new_name_and_a_skip_sent_twice_at_once_are_stored_once(
        store_url: str, scenario: Scenario) -> None:
    """Two tabs (or a double click) of a new annotator: both requests register the name and
    skip at the same moment. Both must succeed, with one annotator and one skip row (the
    second insert used to fail on the unique name, a 500 in the app)."""
    prepare(store_url)
    stores = [open_store(store_url, migrate=False) for _ in range(ANNOTATORS)]
    try:
        failures = []
        for round_ in range(sized(5, 25)):
            name = f"twice-{round_}"
            start = threading.Barrier(len(stores))

            def twice(store, name=name, start=start):
                start.wait()
                annotator_id = add_annotator(store, name)
                skip(store, DATASET, "pool-00", name)
                return annotator_id

            with ThreadPoolExecutor(len(stores)) as pool:
                futures = [pool.submit(twice, store) for store in stores]
            outcomes = []
            for future in futures:
                try:
                    outcomes.append(future.result())
                except Exception as error:  # noqa: BLE001 - the finding
                    failures.append(f"{type(error).__name__}: {str(error)[:200]}")
            scenario.check("every request got the same annotator id", len(set(outcomes)) <= 1,
                           outcomes)
        scenario.check("no request failed on a name or skip registered at the same moment",
                       not failures, failures[:3])
        with stores[0].session() as session:
            names = Counter(session.scalars(select(Annotator.name)))
            skips = session.scalar(select(func.count()).select_from(Skip))
        scenario.check("one annotator row per name", max(names.values()) == 1, names)
        scenario.check("one skip row per name", skips == sized(5, 25), skips)
        scenario.figure("requests at once per name", len(stores))
    finally:
        for store in stores:
            store.close()
