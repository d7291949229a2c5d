"""Access: the app launched with --auth (two users). Nobody without a login can write a
label, a skip or an undo, by any road Gradio offers (gradio_client, /gradio_api/call,
/call/v2, /run, /api, /queue/join with a function index, a forged cookie), and the refused
requests write nothing. A logged-in user's labels, skips and undos are theirs even when
they type another user's name. With the API key set in the app's environment and a run
started from the Dashboard against a model server that echoes the key in its errors, the
key appears nowhere: not in the app's log, the database, or any page or reply fetched."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from gradio_client import Client
from gradio_client.exceptions import AuthenticationError
from sqlalchemy import func, select

from ragshield.services.data.datasets import ensure_demo_dataset
from ragshield.store.database import open_store
from ragshield.store.models import Annotator, Label, Skip
from ragshield.store.sample_import import import_samples
from ragshield.testing.synthetic_run import fill_synthetic_run
from ragshield.types import Passage, Sample
from tests.reliability.fake_openai import FakeOpenAIServer, Fault, Request
from tests.reliability.scenario import Scenario
from tests.reliability.secrets_scan import check_no_secret

KEY = "sk-ragshield-ui-marker-3c81e0"  # RAGSHIELD_OPENAI_API_KEY: the one used
OTHER_KEY = "sk-openai-ui-marker-94d7aa"  # OPENAI_API_KEY: shadowed, must not appear either
USERS = {"alice": "alice-pw-1", "bob": "bob-pw-2"}
DATASET = "access"
SAMPLES = [Sample(id=f"acc-{i}", question=f"Access question {i}?",
                  passages=[Passage(text=f"Access passage {i}.")]) for i in range(4)]
# Every event that writes a label, a skip or an undo (the hotkey buttons' are private).
WRITERS = ("annotate_label", "annotate_skip", "annotate_undo", "annotate_answerable",
           "annotate_unanswerable", "annotate_unsure")
PUBLIC_WRITERS = ("annotate_label", "annotate_skip", "annotate_undo")
ROUTES = ("gradio_api/call/{}", "gradio_api/call/v2/{}", "gradio_api/run/{}",
          "gradio_api/api/{}")


class EchoingServer:
    """The model server's behaviour: the first question's answer is refused with a 401
    that repeats the key, the second's first try fails with a 500 that repeats it (a retry
    succeeds); judges' calls are answered."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.prompts: list[str] = []
        self.failed_once: set[str] = set()

    def __call__(self, request: Request) -> Fault | None:
        if (not request.is_chat or "Proposed answer" in request.prompt
                or request.body.get("max_tokens") == 1):  # a judge's call, or the probe
            return None
        echoed = json.dumps({"error": {"message": f"bad key {request.authorization}"}}).encode()
        with self.lock:
            if request.prompt not in self.prompts:
                self.prompts.append(request.prompt)
            rank = self.prompts.index(request.prompt)
            if rank == 0:
                return Fault(status=401, body=echoed)
            if rank == 1 and request.prompt not in self.failed_once:
                self.failed_once.add(request.prompt)
                return Fault(status=500, body=echoed)
        return None


class App:
    """The launched app and what a test needs of it."""

    def __init__(self, url: str, database_url: str, folder: Path, run_id: int,
                 server: FakeOpenAIServer) -> None:
        self.url, self.database_url, self.folder = url, database_url, folder
        self.run_id, self.server = run_id, server
        self.responses = folder / "responses"  # every reply fetched, for the secret scan
        self.responses.mkdir()

    def keep(self, name: str, content: Any) -> Any:
        path = self.responses / f"{len(list(self.responses.iterdir())):03d}-{name}.txt"
        path.write_text(content if isinstance(content, str) else repr(content), encoding="utf-8")
        return content

    def counts(self) -> dict[str, int]:
        store = open_store(self.database_url, migrate=False)
        try:
            with store.session() as session:
                return {table.__tablename__: session.scalar(select(func.count()).select_from(
                    table)) for table in (Label, Skip, Annotator)}
        finally:
            store.close()

    def labels(self) -> list[tuple[str, str, str, bool]]:
        """(annotator, sample, label, retracted) of every label row, oldest first."""
        store = open_store(self.database_url, migrate=False)
        try:
            with store.session() as session:
                from ragshield.store.models import Sample as SampleRow
                return [tuple(row) for row in session.execute(
                    select(Annotator.name, SampleRow.external_id, Label.label, Label.retracted)
                    .join(Annotator, Annotator.id == Label.annotator_id)
                    .join(SampleRow, SampleRow.id == Label.sample_id).order_by(Label.id))]
        finally:
            store.close()


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory, launch_app) -> Iterator[App]:
    folder = tmp_path_factory.mktemp("access-app")
    database_url = f"sqlite:///{folder / 'access.db'}"
    store = open_store(database_url)
    try:
        ensure_demo_dataset(store)
        import_samples(store, DATASET, SAMPLES)
        run_id = fill_synthetic_run(store, 10, ["trivial", "p_true"], seed=5)
    finally:
        store.close()
    users = folder / "users.txt"
    users.write_text("".join(f"{name}:{password}\n" for name, password in USERS.items()))
    with FakeOpenAIServer(EchoingServer()) as server:
        env = {"RAGSHIELD_OPENAI_API_KEY": KEY, "OPENAI_API_KEY": OTHER_KEY,
               "RAGSHIELD_BACKEND": "openai", "RAGSHIELD_OPENAI_BASE_URL": server.url,
               "RAGSHIELD_MAX_RETRIES": "1", "RAGSHIELD_RETRY_BACKOFF_S": "0.01"}
        with launch_app(folder, database_url, auth_file=users, env=env) as url:
            yield App(url, database_url, folder, run_id, server)


@contextmanager
def login(app: App, name: str) -> Iterator[httpx.Client]:
    """An HTTP session logged in as `name`, as a browser after the login form."""
    with httpx.Client(base_url=app.url, timeout=30) as session:
        answer = session.post("login", data={"username": name, "password": USERS[name]})
        assert answer.status_code == 200 and answer.json() == {"success": True}, answer.text
        yield session


def writer_indexes(app: App) -> dict[str, int]:
    """api name -> function index of the label-writing events, from a logged-in /config."""
    with login(app, "alice") as session:
        config = session.get("config").json()
    return {dep["api_name"]: dep["id"] for dep in config["dependencies"]
            if dep.get("api_name") in WRITERS}


def form(endpoint: str) -> list[Any]:
    if endpoint == "annotate_label":
        return [DATASET, "acc-0", "answerable", "", uuid.uuid4().hex, "mallory"]
    return [DATASET, "unlabelled", 1, True, False, "mallory"]


@pytest.mark.scenario("Access: no label without a login; the login name is the annotator")
def test_requests_without_a_login_are_refused_and_write_nothing(app: App,
                                                                scenario: Scenario) -> None:
    before = app.counts()
    with pytest.raises(AuthenticationError):
        Client(app.url, verbose=False)
    scenario.check("gradio_client without a login cannot connect", True)
    with pytest.raises(ValueError, match="Could not login"):
        Client(app.url, verbose=False, auth=("alice", USERS["bob"]))
    scenario.check("gradio_client with another user's password cannot connect", True)

    indexes = writer_indexes(app)
    scenario.check("every label-writing event was found", set(indexes) == set(WRITERS),
                   indexes)
    answers: dict[str, int] = {}
    forged = {"Cookie": "; ".join(f"access-token{suffix}={uuid.uuid4().hex}"
                                  for suffix in ("", "-unsecure"))}
    with httpx.Client(base_url=app.url, timeout=30) as anonymous:
        for endpoint in PUBLIC_WRITERS:
            for route in ROUTES:
                path = route.format(endpoint)
                answers[path] = anonymous.post(path, json={"data": form(endpoint)}).status_code
                answers[f"{path} (forged cookie)"] = anonymous.post(
                    path, json={"data": form(endpoint)}, headers=forged).status_code
        for endpoint, index in indexes.items():
            join = {"data": form(endpoint), "fn_index": index, "trigger_id": None,
                    "session_hash": uuid.uuid4().hex[:10], "event_data": None}
            answers[f"queue/join {endpoint}"] = anonymous.post(
                "gradio_api/queue/join", json=join).status_code
        answers["config"] = anonymous.get("config").status_code
    for path, status in answers.items():
        app.keep(f"anonymous-{status}", f"{path}: {status}")
    accepted = {path: status for path, status in answers.items() if status not in (401, 403)}
    scenario.check("every write without a login, by every route, is answered 401 or 403",
                   not accepted, accepted)
    time.sleep(1)  # anything queued anyway would have run by now
    scenario.check("the refused requests wrote nothing (labels, skips, annotators)",
                   app.counts() == before, (before, app.counts()))
    scenario.figure("requests refused without a login", len(answers))


@pytest.mark.scenario("Access: no label without a login; the login name is the annotator")
def test_a_logged_in_user_acts_as_themselves_whatever_name_is_sent(app: App,
                                                                   scenario: Scenario) -> None:
    alice = Client(app.url, verbose=False, auth=("alice", USERS["alice"]))
    bob = Client(app.url, verbose=False, auth=("bob", USERS["bob"]))
    by_bob = bob.predict(DATASET, "acc-1", "unanswerable", "", uuid.uuid4().hex, "bob",
                         api_name="/annotate_label")
    app.keep("bob-label", by_bob)
    by_alice = [app.keep("alice-label", alice.predict(
        DATASET, sample, label, "", uuid.uuid4().hex, typed, api_name="/annotate_label"))
        for sample, label, typed in (("acc-1", "answerable", "bob"),
                                     ("acc-2", "unsure", "mallory"),
                                     ("acc-3", "answerable", ""))]
    scenario.check("alice's labels are answered as alice's, whatever name was sent",
                   all(r["stored"] and r["annotator"] == "alice" for r in by_alice), by_alice)
    # A skip and an undo typed as bob: alice's queue and alice's last action.
    app.keep("alice-next", alice.predict(DATASET, "unlabelled", 1, True, False, "bob",
                                         api_name="/annotate_next"))
    skipped = app.keep("alice-skip", alice.predict(DATASET, "unlabelled", 1, True, False, "bob",
                                                   api_name="/annotate_skip"))
    scenario.check("a skip typed as bob is made", "Skipped acc-0." in skipped[0], skipped)
    undone = app.keep("alice-undo", alice.predict(DATASET, "unlabelled", 1, True, False, "bob",
                                                  api_name="/annotate_undo"))
    scenario.check("an undo typed as bob takes back alice's skip", "Undone on acc-0." in
                   undone[0], undone)
    undone = app.keep("alice-undo", alice.predict(DATASET, "unlabelled", 1, True, False, "bob",
                                                  api_name="/annotate_undo"))
    scenario.check("... then alice's last label, not bob's", "Undone on acc-3." in undone[0],
                   undone)
    rows = [row for row in app.labels() if row[1].startswith("acc-")]
    expected = [("bob", "acc-1", "unanswerable", False), ("alice", "acc-1", "answerable", False),
                ("alice", "acc-2", "unsure", False), ("alice", "acc-3", "answerable", False),
                ("alice", "acc-3", "answerable", True)]
    scenario.check("the database holds bob's one label and alice's three and her undo, "
                   "each under its login name", rows == expected, rows)
    scenario.check("no annotator was created from a typed name",
                   "mallory" not in {row[0] for row in app.labels()}
                   and app.counts()["skips"] == 0)


@pytest.mark.scenario("Secrets never stored, logged or exported")
def test_the_api_key_appears_in_no_log_database_page_or_reply(app: App,
                                                              scenario: Scenario) -> None:
    alice = Client(app.url, verbose=False, auth=("alice", USERS["alice"]))
    for sample in ("acc-0", "acc-1"):
        app.keep("label", alice.predict(DATASET, sample, "answerable", "", uuid.uuid4().hex,
                                        "alice", api_name="/annotate_label"))
    app.keep("refresh", alice.predict(app.run_id, "auto", 50, api_name="/dashboard_refresh"))
    started = app.keep("start", alice.predict(app.run_id, "demo", 3, "evidence",
                                              ["trivial", "p_true"], "p_true", "given", False,
                                              api_name="/dashboard_start_run"))
    scenario.check("a run is started from the Dashboard", "started" in started[0], started)
    deadline = time.monotonic() + 120
    while True:
        progress = app.keep("progress", alice.predict(app.run_id,
                                                      api_name="/dashboard_progress"))[0]
        if ": running" not in progress and ": pending" not in progress:
            break
        assert time.monotonic() < deadline, progress
        time.sleep(1)
    scenario.check("the run ends, the refused sample counted as failed",
                   "1 failed" in progress, progress)
    seen = {request.authorization for request in app.server.requests}
    scenario.check("the key reached the model server (so the scan is meaningful)",
                   seen == {f"Bearer {KEY}"}, seen)
    echo = app.server.behaviour
    scenario.check("the server echoed the key in its errors (a 401, and a 500 then retried)",
                   isinstance(echo, EchoingServer) and len(echo.prompts) >= 2
                   and len(echo.failed_once) == 1, getattr(echo, "prompts", None))
    new_run = max(value for _, value in app.keep("runs", alice.predict(
        app.run_id, api_name="/dashboard_runs"))["choices"])
    app.keep("refresh-new", alice.predict(new_run, "auto", 0, api_name="/dashboard_refresh"))
    app.keep("browse", alice.predict(new_run, "auto", "decision", [], False, "any", False, "",
                                     api_name="/browse_filter"))
    with login(app, "alice") as session:
        for path in ("", "config", "gradio_api/info", "gradio_api/openapi.json"):
            app.keep(f"page-{path.replace('/', '-')}", session.get(path).text)
    with httpx.Client(base_url=app.url, timeout=30) as anonymous:
        app.keep("login-page", anonymous.get("").text)
    logs = sorted(app.folder.glob("app-*.log"))
    scenario.check("the app's log was found", len(logs) == 1, logs)
    log = logs[0].read_text(errors="replace") if logs else ""
    scenario.check("the refusal, echo and all, reached the app's log (masked)",
                   "chat completion was refused" in log and "bad key" in log, log[-2000:])
    check_no_secret(scenario, [KEY, OTHER_KEY], app.database_url, [*logs, app.responses])
    scenario.figure("replies and pages scanned", len(list(app.responses.iterdir())))
