"""The hostile black-box probe of `app.py`: before login nothing about the data reaches a
client (the page at / is the login page, every other route is refused); failed logins are
throttled per address and per name without stalling anyone else; a bad --auth path or an
unreachable database ends app.py with one line naming it."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
from gradio_client import Client

from ragshield.retrieval.demo_corpus import DEMO_CORPUS_NAME
from ragshield.store.database import open_store
from ragshield.store.samples import list_datasets, list_samples
from ragshield.ui.login_throttle import LIMIT
from tests.reliability.scenario import Scenario
from tests.app_support import ENDPOINTS
from tests.ui_launch import ROOT, PreparedStore

if TYPE_CHECKING:
    from playwright.sync_api import Browser

USERS = {"alice": "alice-pw-1", "bob": "bob-pw-2"}
OTHER_ADDRESS = "127.0.0.2"  # a second client address on the loopback interface
# Every GET a client might try before logging in: the pages, the API descriptions, the
# session and queue routes, and the static files the login page itself loads.
ANONYMOUS_GETS = (
    "", "?page=", "?all_endpoints=true", "?deep_link=x", "gradio_api/runs", "gradio_api/runs/",
    "logout", "config", "config/", "gradio_api/config", "gradio_api/info",
    "gradio_api/info?all_endpoints=true", "gradio_api/openapi.json", "openapi.json", "docs",
    "gradio_api/deep_link?session_hash=x", "gradio_api/user", "gradio_api/token",
    "gradio_api/app_id", "gradio_api/startup-events", "gradio_api/heartbeat/probe",
    "gradio_api/queue/data?session_hash=probe", "gradio_api/queue/status", "monitoring",
    "gradio_api/run-history/records", "gradio_api/file=db", "gradio_api/vibe-code",
    "manifest.json", "theme.css", "gradio_api/theme.css", "robots.txt", "favicon.ico",
)
ANONYMOUS_POSTS = ("gradio_api/component_server", "gradio_api/reset", "gradio_api/cancel",
                   "gradio_api/queue/join", "gradio_api/call/demo_samples",
                   "gradio_api/run/demo_samples", "gradio_api/upload", "gradio_api/vibe-edit",
                   "gradio_api/process_recording", "gradio_api/run-history/connect")


@dataclass(frozen=True)
class AuthApp:
    url: str
    prepared: PreparedStore


@pytest.fixture(scope="module")
def auth_app(prepared: PreparedStore, tmp_path_factory: pytest.TempPathFactory,
             launch_app: Callable[..., AbstractContextManager[str]]) -> Iterator[AuthApp]:
    folder = tmp_path_factory.mktemp("probe-app")
    users = folder / "users.txt"
    users.write_text("".join(f"{name}:{password}\n" for name, password in USERS.items()))
    with launch_app(folder, prepared.database_url, auth_file=users) as url:
        yield AuthApp(url, prepared)


def data_markers(database_url: str) -> set[str]:
    """What must not reach an anonymous client: every sample id and dataset name of the
    store, the demo corpus's name and every endpoint name."""
    store = open_store(database_url, migrate=False)
    try:
        datasets = [summary.name for summary in list_datasets(store)]
        samples = {s.id for name in datasets for s in list_samples(store, name)}
    finally:
        store.close()
    return {*datasets, *samples, DEMO_CORPUS_NAME, *(name.strip("/") for name in ENDPOINTS)}


def found(markers: set[str], body: str) -> set[str]:
    """The markers in `body` as whole words (`demo` in `demo_ask` is the endpoint's hit)."""
    return {marker for marker in markers
            if re.search(rf"(?<![\w:-]){re.escape(marker)}(?![\w:-])", body)}


@contextmanager
def session(url: str, address: str = "127.0.0.1") -> Iterator[httpx.Client]:
    """An HTTP client that connects from `address` and follows no redirect."""
    transport = httpx.HTTPTransport(local_address=address)
    with httpx.Client(base_url=url, timeout=30, transport=transport) as client:
        yield client


def fetch(client: httpx.Client, method: str, path: str, **kwargs: object) -> tuple[int, str]:
    """The status and the headers and body (up to 1 MB) of an answer; a stream that pauses
    for 5 s (the heartbeat) ends there."""
    body = b""
    with client.stream(method, path, timeout=httpx.Timeout(30, read=5),
                       **kwargs) as response:  # type: ignore[arg-type]
        try:
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > 1_000_000:
                    break
        except httpx.ReadTimeout:
            pass
    return response.status_code, f"{response.headers}\n{body.decode(errors='replace')}"


def log_in(client: httpx.Client, name: str, password: str) -> httpx.Response:
    return client.post("login", data={"username": name, "password": password})


@pytest.mark.scenario("Login page and login throttling")
def test_nothing_about_the_data_reaches_a_client_before_login(auth_app: AuthApp,
                                                              scenario: Scenario) -> None:
    markers = data_markers(auth_app.prepared.database_url)
    scenario.check("the store holds the demo set's 160 samples and the other datasets",
                   len(markers) > 200, len(markers))
    leaks: dict[str, set[str]] = {}
    statuses: dict[str, int] = {}
    with session(auth_app.url) as anonymous:
        page = anonymous.get("")
        head = anonymous.head("")
        answers = {f"GET /{path}": fetch(anonymous, "GET", path) for path in ANONYMOUS_GETS}
        answers |= {f"POST /{path}": fetch(anonymous, "POST", path,
                                           json={"data": [], "fn_index": 0})
                    for path in ANONYMOUS_POSTS}
    for what, (status, text) in answers.items():
        statuses[what] = status
        if hits := found(markers, text):
            leaks[what] = hits
    scenario.check("the page at / is the login page", page.status_code == 200
                   and '"auth_required":true' in page.text.replace(" ", ""), page.text[:500])
    scenario.check("HEAD / answers as the login page would", head.status_code == 200
                   and int(head.headers["content-length"]) == len(page.content), head.headers)
    scenario.check("no sample id, dataset, corpus or endpoint name in any answer before login",
                   not leaks, {what: sorted(hits)[:5] for what, hits in leaks.items()})
    served = {what for what, status in statuses.items() if status < 300}
    scenario.check("before login only the login page and its files are served",
                   served <= {"GET /", "GET /?page=", "GET /?all_endpoints=true",
                              "GET /?deep_link=x", "GET /gradio_api/startup-events",
                              "GET /manifest.json", "GET /theme.css",
                              "GET /gradio_api/theme.css", "GET /robots.txt",
                              "GET /favicon.ico"}, sorted(served))
    scenario.figure("anonymous requests checked", len(answers) + 2)
    scenario.figure("markers looked for", len(markers))


@pytest.mark.scenario("Login page and login throttling")
def test_after_login_the_page_and_the_api_work(auth_app: AuthApp, scenario: Scenario) -> None:
    markers = data_markers(auth_app.prepared.database_url)
    with session(auth_app.url) as alice:
        scenario.check("alice logs in", log_in(alice, "alice", USERS["alice"]).status_code == 200)
        page = alice.get("").text
    scenario.check("her page describes the app (so the check above means something)",
                   {"annotate_label", "demo_ask", auth_app.prepared.demo_sample_id}
                   <= found(markers, page))
    client = Client(auth_app.url, verbose=False, auth=("alice", USERS["alice"]))
    datasets, _ = client.predict("all datasets", None, api_name="/browse_runs")
    scenario.check("gradio_client logged in calls an endpoint",
                   auth_app.prepared.synthetic_dataset in str(datasets), datasets)


@pytest.mark.skipif(os.environ.get("RAGSHIELD_SKIP_BROWSER") == "1",
                    reason="RAGSHIELD_SKIP_BROWSER=1")
@pytest.mark.scenario("Login page and login throttling")
def test_the_login_page_loads_whole_and_logs_in(auth_app: AuthApp, browser: "Browser",
                                                scenario: Scenario) -> None:
    """The gate lets through only what it knows the login page loads: in chromium, the
    page loads nothing that is refused, and its form logs in to the app."""
    from playwright.sync_api import expect

    from tests.browser_support import VIEWPORT, WAIT_MS

    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    refused: list[str] = []
    page.on("response", lambda answer: refused.append(f"{answer.status} {answer.url}")
            if answer.status >= 400 else None)
    try:
        page.goto(auth_app.url)
        expect(page.get_by_text("Log in with your annotator name.")).to_be_visible()
        page.wait_for_load_state("networkidle")
        scenario.check("the login page loads nothing that is refused", not refused, refused)
        page.get_by_label("username").fill("alice")
        page.get_by_label("password").fill(USERS["alice"])
        page.get_by_role("button", name="Login").click()
        expect(page.locator("#demo-result")).to_be_visible()
        scenario.check("its form logs in to the app, which loads whole", not refused, refused)
    finally:
        context.close()


@pytest.mark.scenario("Login page and login throttling")
def test_failed_logins_are_throttled_per_address_and_name(auth_app: AuthApp,
                                                          scenario: Scenario) -> None:
    with session(auth_app.url) as attacker, session(auth_app.url, OTHER_ADDRESS) as other:
        started = time.monotonic()
        answers = [log_in(attacker, "alice", f"guess-{i}") for i in range(100)]
        seconds = time.monotonic() - started
        statuses = Counter(answer.status_code for answer in answers)
        # LIMIT checked at once, then one more each time the doubling wait has passed.
        checked = LIMIT + int(math.log2(seconds + 1))
        scenario.check("of 100 wrong passwords only a handful are checked, the rest "
                       "answered 429", statuses[400] <= checked
                       and statuses[429] == 100 - statuses[400], (statuses, seconds))
        refused = next(answer for answer in answers if answer.status_code == 429)
        scenario.check("the 429 says why and when to try again",
                       "Too many failed logins" in refused.json()["detail"]
                       and int(refused.headers["retry-after"]) >= 1, refused.text)
        scenario.check("the 100 answers came at once (nobody was slept on)", seconds < 10,
                       seconds)
        scenario.check("bob, from another address, logs in meanwhile",
                       log_in(other, "bob", USERS["bob"]).status_code == 200)
        scenario.check("alice's name stays throttled from another address",
                       log_in(other, "alice", USERS["alice"]).status_code == 429)
        scenario.check("the attacker's address stays throttled for bob too",
                       log_in(attacker, "bob", USERS["bob"]).status_code == 429)
        wait = int(log_in(attacker, "alice", USERS["alice"]).headers["retry-after"])
        time.sleep(wait + 0.2)
        scenario.check("once the wait is over, alice logs in with her password",
                       log_in(attacker, "alice", USERS["alice"]).status_code == 200)
        scenario.check("... which clears the count: one more wrong password is only 400",
                       log_in(attacker, "alice", "wrong").status_code == 400)
        scenario.check("a login form without fields is refused, not a crash",
                       attacker.post("login", data={}).status_code in (400, 422))
    scenario.figure("wrong passwords sent", len(answers))
    scenario.figure("wrong passwords actually checked", statuses[400])
    scenario.figure("seconds for 100 wrong passwords", round(seconds, 2))
    scenario.figure("seconds waited for the throttle to expire", wait)


def run_app(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "app.py", "--port", "1", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def check_one_line_error(scenario: Scenario, what: str, result: subprocess.CompletedProcess,
                         *needles: str) -> None:
    lines = result.stderr.strip().splitlines()
    scenario.check(what, result.returncode == 1 and len(lines) == 1
                   and lines[0].startswith("error: ") and all(n in lines[0] for n in needles)
                   and "Traceback" not in result.stderr, (result.returncode, result.stderr))


@pytest.mark.scenario("app.py refuses a bad setup in one line")
def test_app_py_refuses_a_bad_setup_in_one_line(
        python_processes, tmp_path: Path, scenario: Scenario) -> None:
    check_one_line_error(scenario, "--auth naming a folder: one line naming the path",
                         run_app("--auth", str(tmp_path)), str(tmp_path))
    for url in ("postgresql+psycopg://x:hunter2@127.0.0.1:1/x",
                "postgresql+psycopg://u:hunter2@host:abc/db"):
        result = run_app(env={"RAGSHIELD_DATABASE_URL": url})
        masked = url.replace("hunter2", "***")
        check_one_line_error(scenario, f"database {masked}: one line naming the masked URL",
                             result, masked)
        scenario.check("the password is not printed", "hunter2" not in result.stderr
                       + result.stdout)
    for variable, value in (("RAGSHIELD_MAX_RETRIES", "-1"),
                            ("RAGSHIELD_REQUEST_TIMEOUT_S", "-1"),
                            ("RAGSHIELD_DECISION_RULE", "nosuch")):
        check_one_line_error(scenario, f"{variable}={value}: one line naming the setting",
                             run_app(env={variable: value}), variable)
