"""The app launched for real (`python app.py`) on a free port, driven through gradio_client:
every named endpoint of the four tabs on a prepared database (the demo dataset, a synthetic
run of 50 samples x 4 judges, a hostile dataset), and --auth: no label without logging in,
and a logged-in annotator's labels carry the login name."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
import uuid
from typing import Any, Iterator

import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError, AuthenticationError

from ragshield.config import Settings
from ragshield.judges.builtin import JUDGES
from ragshield.services.questions.settlement import default_judges
from ragshield.store.database import open_store
from ragshield.store.labels import get_guidelines
from ragshield.store.runs import list_runs
from ragshield.testing.synthetic_run import fill_synthetic_run
from tests.ui_launch import (CHEAP_JUDGES, HOSTILE_DATASET, HOSTILE_SCRIPT, SYNTHETIC_JUDGES,
                             SYNTHETIC_SAMPLES, PreparedStore, current_label)
from tests.app_support import ENDPOINTS

ERROR = 'class="rs-msg rs-msg-error"'


@pytest.fixture(scope="module")
def client(app_url: str) -> Client:
    return Client(app_url, verbose=False)


def rows_of(table: dict[str, Any]) -> list[dict[str, str]]:
    """The rows of a Dataframe output, as column -> cell."""
    return [dict(zip(table["headers"], row)) for row in table["data"]]


def test_the_named_endpoints_are_those_tested_here(client: Client) -> None:
    api = client.view_api(return_format="dict", print_info=False)
    assert set(api["named_endpoints"]) == ENDPOINTS


# -- Browse -------------------------------------------------------------------------------

def test_browse_runs_lists_the_run_and_its_dataset(client: Client,
                                                   prepared: PreparedStore) -> None:
    datasets, runs = client.predict("all datasets", None, api_name="/browse_runs")
    assert [value for _, value in datasets["choices"]] == ["all datasets",
                                                          prepared.synthetic_dataset]
    assert runs["value"] == prepared.run_id
    assert [value for _, value in runs["choices"]] == [prepared.run_id]


def browse(client: Client, run: Any, *, fold_judge: str = "decision",
           folds: tuple[str, ...] = (),
           disagree: bool = False, label_state: str = "any", human_differs: bool = False,
           search: str = "") -> tuple[str, list[dict[str, str]]]:
    summary, table, _ = client.predict(run, "auto", fold_judge, list(folds), disagree,
                                       label_state, human_differs, search,
                                       api_name="/browse_filter")
    return summary, rows_of(table)


def test_browse_filter_narrows_the_rows(client: Client, prepared: PreparedStore) -> None:
    summary, everything = browse(client, prepared.run_id)
    assert len(everything) == SYNTHETIC_SAMPLES
    assert f"showing {SYNTHETIC_SAMPLES} of {SYNTHETIC_SAMPLES}" in summary

    summary, labelled = browse(client, prepared.run_id, label_state="labelled")
    assert [row["sample"] for row in labelled] == [f"syn-{i:06d}" for i in range(0, 50, 10)]
    assert "showing 5 of 5" in summary

    _, found = browse(client, str(prepared.run_id), search="thing 12?")
    assert [row["sample"] for row in found] == ["syn-000012"]

    _, kept_right = browse(client, prepared.run_id, folds=("AK",))
    expected = [row for row in everything if row["fold (decision)"] == "AK"]
    assert 0 < len(kept_right) < SYNTHETIC_SAMPLES and kept_right == expected

    _, p_true_ud = browse(client, prepared.run_id, fold_judge="p_true", folds=("UD",),
                          disagree=True)
    assert p_true_ud and len(p_true_ud) < SYNTHETIC_SAMPLES
    assert all(row["fold (p_true)"] == "UD" and row["disagree"] == "yes" for row in p_true_ud)


def test_browse_filter_reports_an_unknown_run(client: Client) -> None:
    summary, rows = browse(client, 999)
    assert ERROR in summary and "999" in summary and rows == []


def test_browse_detail_shows_the_case_or_a_readable_error(client: Client,
                                                          prepared: PreparedStore) -> None:
    case = client.predict(prepared.run_id, "auto", "syn-000012", api_name="/browse_detail")
    assert "Synthetic question 12: what is thing 12?" in case
    assert all(judge in case for judge in SYNTHETIC_JUDGES)
    missing = client.predict(prepared.run_id, "auto", "no-such-sample",
                             api_name="/browse_detail")
    assert ERROR in missing and "no-such-sample" in missing and "Traceback" not in missing


# -- Dashboard ----------------------------------------------------------------------------

def test_dashboard_refresh_shows_metrics_figures_progress_agreement(
        client: Client, prepared: PreparedStore) -> None:
    headline, tables, figures, annotation, agreement = client.predict(
        prepared.run_id, "auto", 100, api_name="/dashboard_refresh")
    assert 'data-card="wrong"' in headline and 'data-figure="tradeoff"' in headline
    assert "Risk control" in tables and all(judge in tables for judge in SYNTHETIC_JUDGES)
    assert len(re.findall(r'src="data:image/png;base64,', figures)) >= 2
    assert "synthetic-annotator" in annotation and prepared.synthetic_dataset in annotation
    assert "Fleiss" in agreement

    _, human_tables, *_ = client.predict(prepared.run_id, "human", 0,
                                         api_name="/dashboard_refresh")
    assert "human" in human_tables and human_tables != tables


def test_dashboard_live_refresh_sends_only_what_changed(client: Client,
                                                        prepared: PreparedStore) -> None:
    live = Client(client.src, verbose=False)  # its own session: the page's shown view
    first = live.predict(prepared.run_id, "auto", 100, api_name="/dashboard_live_refresh")
    assert "data-card" in first[0] and "Risk control" in first[1] and "data:image/png" in first[2]
    headline, tables, figures, annotation, agreement = live.predict(
        prepared.run_id, "auto", 100, api_name="/dashboard_live_refresh")
    assert "data-card" not in str(headline)
    assert "Risk control" not in str(tables) and "data:image/png" not in str(figures)
    assert "synthetic-annotator" in annotation and "Fleiss" not in str(agreement)


def test_dashboard_pickers_progress_and_timer(client: Client, prepared: PreparedStore) -> None:
    runs = client.predict(prepared.run_id, api_name="/dashboard_runs")
    assert runs["value"] == prepared.run_id
    assert [value for _, value in runs["choices"]] == [prepared.run_id]
    progress, _ = client.predict(prepared.run_id, api_name="/dashboard_progress")
    assert "No run is going on." in progress
    datasets = client.predict(HOSTILE_DATASET, api_name="/dashboard_datasets")
    names = [value for _, value in datasets["choices"]]
    assert {"demo", HOSTILE_DATASET, prepared.synthetic_dataset} <= set(names)
    assert datasets["value"] == HOSTILE_DATASET
    assert client.predict(False, api_name="/dashboard_live")["active"] is False
    assert client.predict(True, api_name="/dashboard_live")["active"] is True


def test_dashboard_start_run_refuses_a_bad_form_and_starts_nothing(
        client: Client, prepared: PreparedStore) -> None:
    no_judges, progress, _ = client.predict(prepared.run_id, "demo", 2, "evidence", [],
                                            "majority", "given", False,
                                            api_name="/dashboard_start_run")
    assert ERROR in no_judges and "choose at least one judge" in no_judges
    assert "No run is going on." in progress
    bad_rule, *_ = client.predict(prepared.run_id, "demo", 2, "evidence", ["trivial"],
                                  "p_true", "given", False, api_name="/dashboard_start_run")
    assert ERROR in bad_rule and "rule &#x27;p_true&#x27; must be" in bad_rule
    store = open_store(prepared.database_url, migrate=False)
    try:
        assert [run.id for run in list_runs(store)] == [prepared.run_id]
    finally:
        store.close()


# -- Demo -----------------------------------------------------------------------------------

def test_demo_threshold_panel(client: Client, prepared: PreparedStore) -> None:
    run, judge, slider, table = client.predict(api_name="/demo_runs")
    assert run["value"] == prepared.run_id
    assert [value for _, value in judge["choices"]] == list(SYNTHETIC_JUDGES)
    assert 0 <= slider["minimum"] < slider["value"] < slider["maximum"] <= 1
    assert "coverage" in table and SYNTHETIC_JUDGES[0] in table

    judge, _, table = client.predict(prepared.run_id, api_name="/demo_threshold_judges")
    assert judge["value"] == SYNTHETIC_JUDGES[0] and SYNTHETIC_JUDGES[0] in table
    judge, slider, table = client.predict(prepared.run_id, "p_true",
                                          api_name="/demo_threshold_judge")
    assert judge["value"] == "p_true" and "<b>p_true</b>" in table

    def kept(threshold: float) -> tuple[int, int]:
        table = client.predict(prepared.run_id, "p_true", threshold, api_name="/demo_threshold")
        counts = re.search(r"score &gt;= [^<]+</td><td>(\d+) of (\d+)<", table)
        assert counts, table
        return int(counts[1]), int(counts[2])

    # The slider's range is p_true's scores: the lowest keeps all, the highest keeps one.
    lowest, total = kept(slider["minimum"])
    assert lowest == total > SYNTHETIC_SAMPLES // 2
    assert kept(slider["maximum"]) == (1, total)
    unknown = client.predict(prepared.run_id, "no-such-judge", 0.5, api_name="/demo_threshold")
    assert ERROR in unknown and "p_true" in unknown


def test_demo_form_endpoints(client: Client) -> None:
    samples, message = client.predict(HOSTILE_DATASET, api_name="/demo_samples")
    assert [value for _, value in samples["choices"]] == ["hostile-1", "hostile-2"]
    assert "2 samples" in message
    samples, message = client.predict("no-such-dataset", api_name="/demo_samples")
    assert samples["choices"] == [] and ERROR in message

    rule = client.predict(["token_prob", "p_true"], "counterfactual", api_name="/demo_rules")
    assert rule["value"] == "majority"
    assert [value for _, value in rule["choices"]] == ["majority", "all", "token_prob", "p_true"]
    assert client.predict(["token_prob", "p_true"], "p_true",
                          api_name="/demo_rules")["value"] == "p_true"
    offered = client.predict(api_name="/demo_all_judges")  # then the cache's trained judges
    assert offered[:len(JUDGES)] == list(JUDGES)
    assert all(name.startswith("trained:") for name in offered[len(JUDGES):])
    fast = client.predict(api_name="/demo_fast_judges")
    # One default set in every face; no NLI model is configured, so nli is not in it.
    assert fast == list(default_judges(Settings())) and "nli" not in fast


def ask(client: Client, **fields: Any) -> str:
    form = {"source": "stored sample", "question": "", "dataset": "demo", "sample": None,
            "corpus": "demo", "mode": "hybrid", "k": 3, "noise": 0, "answerer": "evidence",
            "judges": list(CHEAP_JUDGES), "rule": "majority",
            "fallback": "abstain message", "model": "configured", **fields}
    return client.predict(*form.values(), api_name="/demo_ask")


def test_demo_ask_refuses_a_bad_form_readably(client: Client) -> None:
    no_question = ask(client, source="type a question", question="   ")
    assert ERROR in no_question and "Type a question first" in no_question
    no_judges = ask(client, sample="whatever", judges=[])
    assert ERROR in no_judges and "Choose at least one judge" in no_judges
    bad_rule = ask(client, sample="whatever", judges=["token_prob"], rule="p_true")
    assert ERROR in bad_rule and "one of the chosen judges" in bad_rule
    missing = ask(client, sample="no-such-sample")
    assert ERROR in missing and "no-such-sample" in missing and "Traceback" not in missing


def test_demo_ask_judges_a_stored_sample(client: Client, prepared: PreparedStore,
                                         packaged_models) -> None:
    """The embedded model answers a demo sample (one model call: token_prob reads the
    answer's own log-probs, trivial keeps every answer); both verdicts and the decision show."""
    page = ask(client, sample=prepared.demo_sample_id)
    assert "rs-demo-answer-section" in page
    for judge in CHEAP_JUDGES:
        badge = re.search(rf'data-judge="{judge}"><span class="rs-demo-badge '
                          rf'rs-demo-badge-(\w+)"', page)
        assert badge and badge[1] in ("keep", "abstain", "unavailable", "error"), page
    decision = re.search(r'rs-demo-decision"><span class="rs-demo-badge rs-demo-badge-(\w+)"',
                         page)
    assert decision and decision[1] in ("keep", "abstain", "undecided")
    assert "rule <b>majority</b>" in page and "Done in" in page
    if decision[1] != "keep":
        assert "Fallback (abstain message)" in page


# -- Annotate -------------------------------------------------------------------------------

def annotate(client: Client, endpoint: str, name: str, dataset: str = HOSTILE_DATASET) -> tuple:
    return client.predict(dataset, "unlabelled", 1, True, False, name, api_name=endpoint)


def test_annotate_queue_skip_label_undo_progress(client: Client,
                                                 prepared: PreparedStore) -> None:
    session = Client(client.src, verbose=False)  # its own session: the item on screen
    message, item, *_ = annotate(session, "/annotate_next", "bob")
    assert 'data-sample-id="hostile-1"' in item
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in item and HOSTILE_SCRIPT not in item
    assert "<img" not in item

    message, item, *_ = annotate(session, "/annotate_skip", "bob")
    assert "Skipped hostile-1." in message and 'data-sample-id="hostile-2"' in item
    message, item, *_ = annotate(session, "/annotate_undo", "bob")
    assert "Undone on hostile-1." in message and 'data-sample-id="hostile-1"' in item

    request_id = uuid.uuid4().hex
    stored = session.predict(HOSTILE_DATASET, "hostile-1", "unanswerable", "no author given",
                             request_id, "bob", api_name="/annotate_label")
    assert stored["stored"] is True and stored["annotator"] == "bob"
    assert stored["label"] == "unanswerable" and stored["next_sample_id"] == "hostile-2"
    assert current_label(prepared.database_url, HOSTILE_DATASET, "hostile-1",
                         "bob") == "unanswerable"
    again = session.predict(HOSTILE_DATASET, "hostile-1", "unanswerable", "no author given",
                            request_id, "bob", api_name="/annotate_label")
    assert again["stored"] is False and again["label"] == "unanswerable"
    with pytest.raises(Exception, match="already used for another label"):
        session.predict(HOSTILE_DATASET, "hostile-1", "answerable", "", request_id, "bob",
                        api_name="/annotate_label")

    progress = session.predict(HOSTILE_DATASET, "bob", api_name="/annotate_progress")
    assert "1 of 2 labelled" in progress

    message, item, *_ = annotate(session, "/annotate_undo", "bob")
    assert "Undone on hostile-1." in message
    assert current_label(prepared.database_url, HOSTILE_DATASET, "hostile-1", "bob") is None


def test_annotate_refuses_bad_labels_and_missing_names(client: Client,
                                                       prepared: PreparedStore) -> None:
    with pytest.raises(AppError, match="No label written"):
        client.predict(HOSTILE_DATASET, "hostile-2", "maybe", "", uuid.uuid4().hex, "carol",
                       api_name="/annotate_label")
    with pytest.raises(AppError, match="No annotator name"):
        client.predict(HOSTILE_DATASET, "hostile-2", "answerable", "", uuid.uuid4().hex, "",
                       api_name="/annotate_label")
    assert current_label(prepared.database_url, HOSTILE_DATASET, "hostile-2", "carol") is None
    message, *_ = annotate(client, "/annotate_next", "  ")
    assert "No annotator name" in message and "rs-msg-warning" in message


def test_annotate_guidelines_are_saved_and_read_back(client: Client,
                                                     prepared: PreparedStore) -> None:
    text = "# Rules\nAnswerable only if a passage **states** the answer. <b>not bold</b>"
    message, shown = client.predict(HOSTILE_DATASET, text, api_name="/annotate_guidelines_save")
    assert "saved" in message and "Rules" in shown
    markdown, editor = client.predict(HOSTILE_DATASET, api_name="/annotate_guidelines")
    assert editor == text
    store = open_store(prepared.database_url, migrate=False)
    try:
        assert get_guidelines(store, HOSTILE_DATASET) == text
    finally:
        store.close()
    markdown, editor = client.predict("demo", api_name="/annotate_guidelines")
    assert "No guidelines" in markdown and editor == ""


# -- --auth -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def auth_app(prepared: PreparedStore, tmp_path_factory: pytest.TempPathFactory,
             launch_app) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("auth-app")
    auth_file = folder / "users.txt"
    auth_file.write_text("alice:secret\n", encoding="utf-8")
    with launch_app(folder, prepared.database_url, auth_file=auth_file) as url:
        yield url


def post_without_login(url: str, path: str, data: list[Any]) -> int:
    request = urllib.request.Request(f"{url}{path}", data=json.dumps({"data": data}).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_auth_refuses_labels_without_a_login(auth_app: str, prepared: PreparedStore) -> None:
    with pytest.raises(AuthenticationError):
        Client(auth_app, verbose=False)
    with pytest.raises(ValueError, match="Could not login"):
        Client(auth_app, verbose=False, auth=("alice", "wrong"))
    form = [HOSTILE_DATASET, "hostile-2", "answerable", "", uuid.uuid4().hex, "mallory"]
    for path in ("gradio_api/call/annotate_label", "gradio_api/run/annotate_label"):
        assert post_without_login(auth_app, path, form) == 401
    assert current_label(prepared.database_url, HOSTILE_DATASET, "hostile-2", "mallory") is None


def test_auth_labels_carry_the_login_name(auth_app: str, prepared: PreparedStore) -> None:
    alice = Client(auth_app, verbose=False, auth=("alice", "secret"))
    stored = alice.predict(HOSTILE_DATASET, "hostile-2", "answerable", "", uuid.uuid4().hex,
                           "mallory", api_name="/annotate_label")
    assert stored["stored"] is True and stored["annotator"] == "alice"
    assert current_label(prepared.database_url, HOSTILE_DATASET, "hostile-2",
                         "alice") == "answerable"
    assert current_label(prepared.database_url, HOSTILE_DATASET, "hostile-2", "mallory") is None
    message, item, *_ = annotate(alice, "/annotate_next", "")
    assert "No annotator name" not in message and "annotate-item" in item


# -- last: adds a run to the store --------------------------------------------------------

def test_a_run_made_after_launch_reaches_the_dashboard(client: Client,
                                                      prepared: PreparedStore) -> None:
    """A run stored while the app is up (as by the CLI): the pickers list it, and the
    dashboard and Browse show it."""
    store = open_store(prepared.database_url, migrate=False)
    try:
        new_run = fill_synthetic_run(store, 6, ["trivial", "p_true"], seed=11)
    finally:
        store.close()
    session = Client(client.src, verbose=False)
    runs = session.predict(prepared.run_id, api_name="/dashboard_runs")
    values = [value for _, value in runs["choices"]]  # newest first; Demo asks add live runs
    assert values[0] == new_run and prepared.run_id in values
    _, tables, figures, _, _ = session.predict(new_run, "auto", 0,
                                               api_name="/dashboard_refresh")
    assert "p_true" in tables and "token_prob" not in tables and "data:image/png" in figures
    _, rows = browse(session, new_run)
    assert len(rows) == 6
