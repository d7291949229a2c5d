"""Files in and out of the app launched with --auth (issue 55, the fourth hostile probe): an
event given a server path that was never uploaded (a CSV, a run bundle, a policy, a path
that does not exist, one dressed up as the upload folder) is refused alike, and nothing of
the file comes back or is stored, while a genuine upload is read, checked and imported;
only admins upload, each within bounds; an annotator's label download holds no one else's
notes. And in the Demo (a fake model server whose first question's judges are slow), a
second question, from chromium's Ask or an API client, ends what is left of the first and
is answered."""

from __future__ import annotations

import csv
import html
import io
import json
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from gradio_client import Client

from ragshield.datasets.demo import DEMO_DATASET
from ragshield.retrieval.demo_corpus import DEMO_CORPUS_NAME
from ragshield.services.data.datasets import ensure_demo_dataset
from ragshield.services.data.downloads import ALL_DATASETS
from ragshield.services.data.run_bundles import export_run
from ragshield.services.questions.ask_choices import CONFIGURED_MODEL
from ragshield.services.questions.ask_types import ABSTAIN_FALLBACK
from ragshield.store.database import open_store
from ragshield.store.runs import list_runs
from ragshield.store.samples import list_datasets, list_samples, load_sample
from ragshield.testing.synthetic_run import fill_synthetic_run
from ragshield.types import Sample
from ragshield.ui.demo_tab import STORED
from ragshield.ui.upload_gate import ADMINS_ONLY
from ragshield.ui.uploaded_files import NOT_UPLOADED
from tests.reliability.fake_openai import Fault, FakeOpenAIServer, Request
from tests.reliability.scenario import Scenario

if TYPE_CHECKING:
    from playwright.sync_api import Browser

USERS = {"boss": ("boss-pw-1", "admin"), "chief": ("chief-pw-2", "admin"),
         "ann": ("ann-pw-3", "annotator"), "bea": ("bea-pw-4", "annotator")}
FILES_PER_PERSON = 4  # RAGSHIELD_UPLOAD_FILES_PER_PERSON of the launched app
SECRET = "secret-marker-7f3a91"  # in the server's files, never to reach a client
FILES_SCENARIO = "Files: only an upload of this app reaches a handler; uploads bounded"


@dataclass(frozen=True)
class App:
    url: str
    database_url: str
    folder: Path
    uploads: Path  # the app's GRADIO_TEMP_DIR
    run_id: int

    def counts(self) -> tuple[list[str], int]:
        """The datasets and the number of runs in the database."""
        store = open_store(self.database_url, migrate=False)
        try:
            return sorted(d.name for d in list_datasets(store)), len(list_runs(store))
        finally:
            store.close()

    def uploaded_bytes(self) -> bytes:
        """Every file under the upload folder, concatenated."""
        return b"".join(path.read_bytes() for path in sorted(self.uploads.rglob("*"))
                        if path.is_file())


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory, launch_app) -> Iterator[App]:
    folder = tmp_path_factory.mktemp("round4-app")
    database_url = f"sqlite:///{folder / 'round4.db'}"
    store = open_store(database_url)
    try:
        ensure_demo_dataset(store)
        run_id = fill_synthetic_run(store, 5, ["trivial"], seed=3)
        export_run(store, run_id, folder / "server-run.json.xz")
    finally:
        store.close()
    users = folder / "users.txt"
    users.write_text("".join(f"{name}:{password}:{role}\n"
                             for name, (password, role) in USERS.items()))
    uploads = folder / "gradio-uploads"
    env = {"GRADIO_TEMP_DIR": str(uploads),
           "RAGSHIELD_UPLOAD_FILES_PER_PERSON": str(FILES_PER_PERSON)}
    with launch_app(folder, database_url, auth_file=users, env=env) as url:
        yield App(url, database_url, folder, uploads, run_id)


@pytest.fixture(scope="module")
def server_files(app: App) -> dict[str, Path]:
    """Files of the server, outside the upload folder, with the suffixes Gradio lets in."""
    table = app.folder / "server-secret.csv"
    table.write_text(f"id,question,{SECRET}\nq1,Who is it?,{SECRET}-row-value\n",
                     encoding="utf-8")
    policy = app.folder / "server-policy.json"
    policy.write_text(json.dumps({"name": SECRET}), encoding="utf-8")
    return {"csv": table, "bundle": app.folder / "server-run.json.xz", "policy": policy}


class Session:
    """A logged-in HTTP session that joins Gradio's queue as the page does."""

    def __init__(self, app: App, name: str) -> None:
        self.client = httpx.Client(base_url=app.url, timeout=60)
        answer = self.client.post("login", data={"username": name, "password": USERS[name][0]})
        assert answer.status_code == 200, answer.text
        config = self.client.get("config").json()
        self.events = {dep["api_name"]: dep for dep in config["dependencies"]
                       if dep.get("api_name")}
        self.session_hash = uuid.uuid4().hex[:12]

    def close(self) -> None:
        self.client.close()

    def upload(self, name: str, content: bytes) -> httpx.Response:
        return self.client.post("gradio_api/upload", files={"files": (name, content)})

    def uploaded(self, name: str, content: bytes) -> str:
        answer = self.upload(name, content)
        assert answer.status_code == 200, answer.text
        return answer.json()[0]

    def call(self, api_name: str, *values: Any) -> tuple[dict[str, Any], str]:
        """Run the event as the page would, its inputs `values` then "" for the rest (the
        mapping boxes), in this session; (its completion message, the whole stream)."""
        event = self.events[api_name]
        data = [*values, *[""] * (len(event["inputs"]) - len(values))]
        joined = self.client.post("gradio_api/queue/join", json={
            "data": data, "fn_index": event["id"], "trigger_id": None,
            "session_hash": self.session_hash, "event_data": None})
        assert joined.status_code == 200, joined.text
        event_id, stream = joined.json()["event_id"], ""
        with self.client.stream("GET", "gradio_api/queue/data",
                                params={"session_hash": self.session_hash}) as answer:
            for line in answer.iter_lines():
                stream += line + "\n"
                message = json.loads(line[5:]) if line.startswith("data:") else {}
                if (message.get("msg") == "process_completed"
                        and message.get("event_id") == event_id):
                    return message, stream
        raise AssertionError(f"{api_name}: the stream ended early: {stream[-2000:]}")


@pytest.fixture
def sessions(app: App) -> Iterator[dict[str, Session]]:
    opened: dict[str, Session] = {}

    class Opener(dict):
        def __missing__(self, name: str) -> Session:
            opened[name] = self[name] = Session(app, name)
            return self[name]

    yield Opener()
    for session in opened.values():
        session.close()


def file_data(path: Path | str) -> dict[str, Any]:
    """A file component's value as a client posts it."""
    return {"path": str(path), "orig_name": Path(path).name, "meta": {"_type": "gradio.FileData"}}


def refused(message: dict[str, Any]) -> bool:
    """The event failed with the upload refusal, and with nothing else."""
    return (message.get("success") is False
            and (message.get("output") or {}).get("error") == NOT_UPLOADED)


@pytest.mark.scenario(FILES_SCENARIO)
def test_a_server_path_never_uploaded_is_refused_and_nothing_of_it_comes_back(
        app: App, server_files: dict[str, Path], sessions: dict[str, Session],
        scenario: Scenario) -> None:
    before = app.counts()
    ann, boss = sessions["ann"], sessions["boss"]
    table, bundle, policy = server_files["csv"], server_files["bundle"], server_files["policy"]
    probes = {
        "annotator: data_file with a server CSV": ann.call("data_file", file_data(table),
                                                           "detect", ""),
        "annotator: data_check with a server CSV": ann.call("data_check", file_data(table),
                                                            "detect", "stolen"),
        "admin: data_file with a server CSV": boss.call("data_file", file_data(table),
                                                        "detect", ""),
        "admin: data_import with a server CSV": boss.call("data_import", file_data(table),
                                                          "detect", "stolen", None),
        "admin: run import of a server bundle": boss.call("transfer_import_run",
                                                          file_data(bundle)),
        "admin: policy import of a server file": boss.call("transfer_import_policy",
                                                           file_data(policy)),
        "admin: a path that does not exist": boss.call(
            "data_file", file_data(app.folder / "no-such-file.csv"), "detect", ""),
        "admin: a path through the upload folder": boss.call(
            "data_file", file_data(f"{app.uploads}/../server-secret.csv"), "detect", ""),
        "admin: the folder itself": boss.call("data_file", file_data(app.uploads), "detect", ""),
    }
    for what, (message, stream) in probes.items():
        scenario.check(f"{what}: refused as not uploaded", refused(message), message)
        scenario.check(f"{what}: nothing of the file in the answer", SECRET not in stream
                       and "Who is it?" not in stream, stream[-1500:])
    scenario.check("the refusal is the same whether the path exists or not",
                   len({json.dumps(m.get("output"), sort_keys=True)
                        for m, _ in probes.values()}) == 1)
    scenario.check("nothing was stored: no dataset, no run", app.counts() == before,
                   (before, app.counts()))
    scenario.check("no copy of a server file went into the upload folder",
                   SECRET.encode() not in app.uploaded_bytes())
    scenario.check("/gradio_api/file= of the same path stays refused",
                   ann.client.get(f"gradio_api/file={table}").status_code in (403, 404))
    scenario.figure("server paths posted", len(probes))


def rows_jsonl(count: int) -> bytes:
    return "".join(json.dumps({"id": f"up{i}", "question": f"Uploaded question {i}?",
                               "answerable": True, "reference_answers": ["yes"],
                               "passages": [{"title": "t", "text": f"Text {i}."}]}) + "\n"
                   for i in range(count)).encode()


@pytest.mark.scenario(FILES_SCENARIO)
def test_a_genuine_upload_is_read_checked_and_imported(
        app: App, sessions: dict[str, Session], scenario: Scenario) -> None:
    boss = sessions["boss"]
    table = io.StringIO()
    csv.writer(table).writerows([["id", "question", "gold"], ["c1", "Which river?", "Seine"]])
    shown, _ = boss.call("data_file", file_data(boss.uploaded("rivers.csv",
                                                              table.getvalue().encode())),
                         "detect", "")
    scenario.check("an uploaded CSV shows its columns and first row",
                   shown.get("success") and "gold" in json.dumps(shown["output"])
                   and "Which river?" in json.dumps(shown["output"]), shown)
    path = boss.uploaded("uploaded.jsonl", rows_jsonl(3))
    checked, _ = boss.call("data_check", file_data(path), "detect", "uploaded")
    scenario.check("... an uploaded dataset file is checked",
                   "would add 3 samples" in json.dumps(checked.get("output")), checked)
    imported, _ = boss.call("data_import", file_data(path), "detect", "uploaded", None)
    scenario.check("... and imported by an admin",
                   "Imported uploaded.jsonl" in json.dumps(imported.get("output"))
                   and "uploaded" in app.counts()[0], imported)


@pytest.mark.scenario(FILES_SCENARIO)
def test_only_admins_upload_and_each_within_bounds(app: App, sessions: dict[str, Session],
                                                    scenario: Scenario) -> None:
    ann, chief = sessions["ann"], sessions["chief"]
    before = app.uploaded_bytes()
    answer = ann.upload("mine.jsonl", rows_jsonl(1) + SECRET.encode())
    scenario.check("an annotator's upload is refused, saying why",
                   answer.status_code == 403 and answer.json()["detail"] == ADMINS_ONLY,
                   answer.text)
    scenario.check("... and nothing of it was kept", SECRET.encode() not in app.uploaded_bytes()
                   and app.uploaded_bytes() == before)
    statuses = [chief.upload(f"f{i}.jsonl", rows_jsonl(1)).status_code
                for i in range(FILES_PER_PERSON)]
    scenario.check(f"an admin uploads {FILES_PER_PERSON} files", statuses
                   == [200] * FILES_PER_PERSON, statuses)
    over = chief.upload("one-more.jsonl", rows_jsonl(1))
    scenario.check("the next one within the window is refused with a Retry-After",
                   over.status_code == 429 and "Too many uploads" in over.json()["detail"]
                   and int(over.headers["retry-after"]) > 0, over.text)
    scenario.check("another admin still uploads (the bound is per person)",
                   sessions["boss"].upload("other.jsonl", rows_jsonl(1)).status_code == 200)
    scenario.figure("uploads let through to one admin", FILES_PER_PERSON)


@pytest.mark.scenario("Label downloads: an annotator's holds their own notes only")
def test_an_annotators_label_download_holds_no_one_elses_notes(
        app: App, sessions: dict[str, Session], scenario: Scenario) -> None:
    store = open_store(app.database_url, migrate=False)
    try:
        sample = list_samples(store, DEMO_DATASET)[0].id
    finally:
        store.close()
    notes = {name: f"{name}'s note {SECRET}-{name}" for name in ("ann", "bea")}
    for name, note in notes.items():
        labelled = Client(app.url, verbose=False, auth=(name, USERS[name][0])).predict(
            DEMO_DATASET, sample, "answerable", note, uuid.uuid4().hex, name,
            api_name="/annotate_label")
        scenario.check(f"{name} labels a sample with a note", labelled["stored"], labelled)

    def downloaded(name: str) -> str:
        message, _ = sessions[name].call("transfer_labels", ALL_DATASETS, "csv")
        scenario.check(f"{name} downloads the labels", message.get("success"), message)
        return sessions[name].client.get(message["output"]["data"][0]["url"]).text

    ann, boss = downloaded("ann"), downloaded("boss")
    scenario.check("the annotator's download holds her own note", notes["ann"] in ann, ann)
    scenario.check("... and not another annotator's (her label is there, its note not)",
                   notes["bea"] not in ann and ann.count(",bea,") == 1, ann)
    scenario.check("an admin's download holds every note",
                   notes["ann"] in boss and notes["bea"] in boss, boss)


# -- the Demo: a new question ends the old one -------------------------------------------------

DEMO_SCENARIO = "Demo: a new question ends what is left of the one before"
DELAY_S = 8.0  # each call of the slow question after its first (its judges)
SOME_JUDGES = ["trivial", "calibration", "p_true"]


class SlowQuestion:
    """The model server's behaviour: every call about `question` after its first one waits
    DELAY_S; the rest are answered at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.question: str | None = None
        self.calls = 0

    def slow_down(self, question: str) -> None:
        with self.lock:
            self.question, self.calls = question, 0

    def __call__(self, request: Request) -> Fault | None:
        with self.lock:
            if not request.is_chat or not self.question or self.question not in request.prompt:
                return None
            self.calls += 1
            return Fault(delay_s=DELAY_S) if self.calls > 1 else None


@dataclass(frozen=True)
class DemoApp:
    url: str
    server: FakeOpenAIServer
    behaviour: SlowQuestion
    samples: list[Sample]  # demo samples, each with a question of its own

    def calls_about(self, sample: Sample) -> int:
        return sum(sample.question in r.prompt for r in self.server.chat_requests())


@pytest.fixture(scope="module")
def demo_app(tmp_path_factory: pytest.TempPathFactory, launch_app) -> Iterator[DemoApp]:
    folder = tmp_path_factory.mktemp("round4-demo")
    database_url = f"sqlite:///{folder / 'demo.db'}"
    store = open_store(database_url)
    try:
        ensure_demo_dataset(store)
        samples = [load_sample(store, DEMO_DATASET, s.id)
                   for s in list_samples(store, DEMO_DATASET)[:4]]
    finally:
        store.close()
    assert len({s.question for s in samples}) == 4
    behaviour = SlowQuestion()
    with FakeOpenAIServer(behaviour) as server:
        env = {"RAGSHIELD_BACKEND": "openai", "RAGSHIELD_OPENAI_BASE_URL": server.url,
               "RAGSHIELD_OPENAI_API_KEY": "sk-round4-demo"}
        with launch_app(folder, database_url, env=env) as url:
            yield DemoApp(url, server, behaviour, samples)


def wait_until(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def ask_slowly(demo: DemoApp, scenario: Scenario, slow: Sample) -> None:
    """Wait until the slow question is in its judges (its second call waiting)."""
    scenario.check("the first question reaches its judges",
                   wait_until(lambda: demo.calls_about(slow) >= 2, 120), demo.calls_about(slow))


def check_the_first_one_ended(demo: DemoApp, scenario: Scenario, slow: Sample) -> None:
    time.sleep(DELAY_S + 1)  # a judge still going would have called by now
    scenario.check("the first question called the model no more (its call in flight aside)",
                   demo.calls_about(slow) == 2, demo.calls_about(slow))


def demo_form(sample: Sample) -> list[Any]:
    """The Demo form for a stored sample, as demo_ask takes it."""
    return [STORED, "", DEMO_DATASET, sample.id, DEMO_CORPUS_NAME, "hybrid", 3, 0, None,
            SOME_JUDGES, "majority", ABSTAIN_FALLBACK, CONFIGURED_MODEL, CONFIGURED_MODEL]


@pytest.mark.scenario(DEMO_SCENARIO)
def test_a_second_question_of_an_api_client_ends_the_first(demo_app: DemoApp,
                                                            scenario: Scenario) -> None:
    slow, fast = demo_app.samples[0], demo_app.samples[1]
    demo_app.behaviour.slow_down(slow.question)
    client = Client(demo_app.url, verbose=False)  # one session, as one page
    first = client.submit(*demo_form(slow), api_name="/demo_ask")
    ask_slowly(demo_app, scenario, slow)
    asked = time.monotonic()
    second = client.submit(*demo_form(fast), api_name="/demo_ask")
    answered = html.unescape(second.result(timeout=DELAY_S + 90))
    seconds = time.monotonic() - asked
    scenario.check("the second question is answered whole", fast.question in answered
                   and "Done in" in answered, answered[-1500:])
    scenario.check("... within one of the first question's model calls",
                   seconds < DELAY_S + 30, seconds)
    scenario.check("the first question's event ended without finishing",
                   wait_until(first.done, 10)
                   and "Done in" not in html.unescape(str(first.outputs()[-1:])))
    check_the_first_one_ended(demo_app, scenario, slow)
    scenario.figure("seconds from the second question to its answer", round(seconds, 1))


@pytest.mark.skipif(os.environ.get("RAGSHIELD_SKIP_BROWSER") == "1",
                    reason="RAGSHIELD_SKIP_BROWSER=1")
@pytest.mark.scenario(DEMO_SCENARIO)
def test_ask_while_the_judges_run_starts_the_new_question_in_chromium(
        demo_app: DemoApp, browser: "Browser", scenario: Scenario) -> None:
    """The probe's steps with the form's defaults: a question, then, while its judges run,
    another and a click on Ask."""
    from playwright.sync_api import expect

    from tests.browser_support import VIEWPORT, WAIT_MS, no_traceback, pick

    slow, fast = demo_app.samples[2], demo_app.samples[3]
    demo_app.behaviour.slow_down(slow.question)
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    try:
        page.goto(demo_app.url)
        result = page.locator("#demo-result")
        expect(result).to_be_visible()
        page.get_by_label("stored sample", exact=True).check()
        pick(page, "Stored sample (uses its own passages)", slow.id)
        page.get_by_role("button", name="Ask", exact=True).click()
        ask_slowly(demo_app, scenario, slow)
        asked = time.monotonic()
        pick(page, "Stored sample (uses its own passages)", fast.id)
        page.get_by_role("button", name="Ask", exact=True).click()
        expect(result.locator(".rs-demo-status")).to_contain_text(
            "Done in", timeout=(DELAY_S + 90) * 1000)
        seconds = time.monotonic() - asked
        scenario.check("the page shows the second question, answered",
                       fast.question in result.inner_text(), result.inner_text()[:1000])
        scenario.check("... within one of the first question's model calls",
                       seconds < DELAY_S + 30, seconds)
        no_traceback(page)
    finally:
        context.close()
    check_the_first_one_ended(demo_app, scenario, slow)
    scenario.figure("seconds from the click to the second answer (chromium)", round(seconds, 1))
