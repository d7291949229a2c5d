"""The Data tab's handlers on a real store, without a browser: the check before an import
counts new, changed and unchanged rows; a file with a bad row names its line and imports
nothing, and the fixed file imports; an import refused when the form changed since its
check; a column mapping saved and offered again; a rename that keeps runs and labels; a
deletion that names what goes, refused without the right to manage; the bounds; and a
file name made of HTML shown as text."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ragshield.services.annotation.people import Access
from ragshield.services.data.column_mappings import MAPPED_FIELDS
from ragshield.store.dataset_deletion import dataset_usage
from ragshield.store.labels import add_annotator, add_label
from ragshield.store.runs import get_run
from ragshield.store.samples import has_dataset, iter_samples
from ragshield.testing.synthetic_run import fill_synthetic_run
from ragshield.ui import app as ui_app
from ragshield.ui import data_tab
from ragshield.ui.context import UiContext
from ragshield.ui.data_tab import (check_upload, delete_confirmed, delete_preview, file_view,
                                   import_upload, listing_html, may_manage, rename)
from tests.conftest import TEST_DATA

ERROR = 'class="rs-msg rs-msg-error"'
SQLITE_ONLY = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
HOSTILE = "<img src=x onerror=alert(1)>.jsonl"


@dataclass
class FakeRequest:
    """What the handlers read from a gr.Request: the login name (None without --auth)."""
    username: str | None = None


def row(i: int, answer: str = "yes") -> dict[str, Any]:
    return {"id": f"q{i}", "question": f"Question {i}?", "answerable": True,
            "reference_answers": [answer], "passages": [{"title": "t", "text": f"Text {i}."}]}


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def no_mapping() -> list[str | None]:
    return [""] * len(MAPPED_FIELDS)


def mapping(**columns: str) -> list[str | None]:
    return [columns.get(field, "") for field in MAPPED_FIELDS]


def check_and_import(context: UiContext, file: str, dataset: str,
                     columns: list[str | None] | None = None) -> tuple[str, str]:
    columns = columns if columns is not None else no_mapping()
    checked, plan = check_upload(context, file, "detect", dataset, columns)
    assert plan is not None, checked
    return checked, import_upload(context, file, "detect", dataset, columns, plan)


@pytest.fixture
def context(store, settings) -> UiContext:
    return UiContext(settings=settings, store=store)


def test_the_data_tab_comes_last():
    assert ui_app.TABS[-1] is data_tab and data_tab.TITLE == "Data"


def test_the_check_counts_new_changed_and_unchanged_rows(context, tmp_path):
    check_and_import(context, write_jsonl(tmp_path / "a.jsonl", [row(1), row(2), row(3)]), "toy")
    second = write_jsonl(tmp_path / "b.jsonl", [row(1), row(2, "no"), row(4), row(5)])
    checked, plan = check_upload(context, second, "detect", "toy", no_mapping())
    assert "would add 2 samples, update 1 and leave 1 unchanged" in checked
    assert "Samples of the dataset that the file lacks, kept as they are: 1." in checked
    assert len(list(iter_samples(context.store, "toy"))) == 3  # the check wrote nothing
    done = import_upload(context, second, "detect", "toy", no_mapping(), plan)
    assert "2 samples added, 1 updated, 1 unchanged; 5 in all" in done


def test_a_bad_row_names_its_line_and_nothing_is_imported(context, tmp_path):
    path = tmp_path / "rows.jsonl"
    file = write_jsonl(path, [row(1), row(2), {**row(3), "question": ["not", "text"]}])
    checked, plan = check_upload(context, file, "detect", "toy", no_mapping())
    assert plan is None and ERROR in checked
    assert "rows.jsonl, line 3, field &#x27;question&#x27;" in checked
    assert str(tmp_path) not in checked
    # Import anyway, with a plan of the good rows that the file no longer matches:
    write_jsonl(path, [row(1), row(2), row(3)])
    _, good_plan = check_upload(context, file, "detect", "toy", no_mapping())
    write_jsonl(path, [row(1), row(2), {**row(3), "question": ["not", "text"]}])
    failed = import_upload(context, file, "detect", "toy", no_mapping(), good_plan)
    assert "Nothing was imported" in failed and "line 3" in failed
    assert not has_dataset(context.store, "toy")
    write_jsonl(path, [row(1), row(2), row(3)])  # the file fixed
    _, done = check_and_import(context, file, "toy")
    assert "3 samples added" in done and len(list(iter_samples(context.store, "toy"))) == 3


def test_with_logins_only_an_admin_imports(context, tmp_path):
    """An import may rewrite samples people have labelled."""
    file = write_jsonl(tmp_path / "a.jsonl", [row(1)])
    _, plan = check_upload(context, file, "detect", "toy", no_mapping())
    context.access = Access(logins=True, file_roles={"ann": "annotator", "boss": "admin"})
    refused = import_upload(context, file, "detect", "toy", no_mapping(), plan, login="ann")
    assert "Only an admin may import datasets." in refused
    assert not has_dataset(context.store, "toy")
    done = import_upload(context, file, "detect", "toy", no_mapping(), plan, login="boss")
    assert "1 sample added" in done


def test_an_import_is_refused_when_the_form_changed_since_the_check(context, tmp_path):
    file = write_jsonl(tmp_path / "a.jsonl", [row(1)])
    _, plan = check_upload(context, file, "detect", "toy", no_mapping())
    for dataset, checked_plan in (("other", plan), ("toy", None)):
        refused = import_upload(context, file, "detect", dataset, no_mapping(), checked_plan)
        assert "Check the file first" in refused
    assert not has_dataset(context.store, "toy") and not has_dataset(context.store, "other")


def test_a_mapping_is_saved_and_offered_for_the_next_file(context, tmp_path):
    first = tmp_path / "first.csv"
    first.write_text("q,gold,resp\nWho?,Ann,Ann\n", encoding="utf-8")
    view = file_view(context, str(first), "detect", "people")
    assert view.columns == ["q", "gold", "resp"] and view.mapping == {}
    assert "<td>Who?</td>" in view.preview
    columns = mapping(question="q", answers="gold", answer="resp")
    checked, done = check_and_import(context, str(first), "people", columns)
    assert "Samples with an answer given by another system: 1." in checked
    assert "1 sample added" in done
    second = tmp_path / "second.csv"
    second.write_text("q,gold,other\nWhen?,1999,x\n", encoding="utf-8")
    again = file_view(context, str(second), "detect", "people")
    assert again.mapping == {"question": "q", "answers": "gold"}  # "resp" is not in this file
    assert file_view(context, str(second), "detect", "strangers").mapping == {}


def test_the_dataset_name_defaults_to_the_file_name(context):
    view = file_view(context, str(TEST_DATA / "nq_open_oracle.jsonl"), "detect", "")
    assert view.dataset == "nq_open_oracle" and "format unified" in view.info
    assert file_view(context, str(TEST_DATA / "nq_open_oracle.jsonl"), "detect",
                     "mine").dataset == "mine"


@SQLITE_ONLY
def test_a_rename_keeps_runs_and_labels_attached(context):
    store = context.store
    run_id = fill_synthetic_run(store, 5, ["trivial"], seed=3)
    old = get_run(store, run_id).dataset
    add_annotator(store, "ann")
    add_label(store, old, next(iter_samples(store, old)).id, "ann", "answerable")
    before = dataset_usage(store, old)
    message, name = rename(context, old, "kept")
    assert name == "kept" and "is now &#x27;kept&#x27;" in message
    after = dataset_usage(store, "kept")
    assert (after.runs, after.labels, after.samples) == (before.runs, before.labels,
                                                         before.samples)
    assert get_run(store, run_id).config["dataset"] == "kept"
    refused, name = rename(context, "kept", "demo")
    assert ERROR in refused and name == "kept"
    context.access = Access(logins=True, file_roles={"ann": "annotator", "boss": "admin"})
    refused, name = rename(context, "kept", "other", "ann")
    assert "Only an admin may rename datasets." in refused and name == "kept"
    assert rename(context, "kept", "other", "boss")[1] == "other"


@SQLITE_ONLY
def test_the_delete_preview_names_the_counts_and_needs_the_right(context):
    store = context.store
    run_id = fill_synthetic_run(store, 4, ["trivial"], seed=4)
    name = get_run(store, run_id).dataset
    add_annotator(store, "ann")
    add_label(store, name, next(iter_samples(store, name)).id, "ann", "unsure")
    usage = dataset_usage(store, name)
    assert usage.labels >= 2 and usage.annotators == 2  # the synthetic run's and ann's
    shown, previewed = delete_preview(context, name, FakeRequest())
    assert previewed == usage
    assert (f"It goes with 4 samples ({usage.passages} passages), {usage.labels} labels by "
            f"2 annotators, and 1 run (#{run_id}) with their answers and verdicts") in shown
    assert may_manage(context, FakeRequest())  # an app without logins: everyone manages
    context.access = Access(logins=True, file_roles={"ann": "annotator", "boss": "admin"})
    assert may_manage(context, FakeRequest("boss")) and not may_manage(context, FakeRequest("ann"))
    refused, nothing = delete_preview(context, name, FakeRequest("ann"))
    assert nothing is None and "Only an administrator" in refused
    assert "Only an administrator" in delete_confirmed(context, name, previewed,
                                                        FakeRequest("ann"))
    assert "Press Delete first" in delete_confirmed(context, name, None, FakeRequest("boss"))
    assert has_dataset(store, name)
    deleted = delete_confirmed(context, name, previewed, FakeRequest("boss"))
    assert f"with 4 samples, {usage.labels} labels and 1 run." in deleted
    assert not has_dataset(store, name)


def test_the_bounds_give_clear_errors(context, tmp_path):
    file = write_jsonl(tmp_path / "three.jsonl", [row(1), row(2), row(3)])
    small = UiContext(settings=context.settings.model_copy(update={"upload_max_bytes": 10}),
                      store=context.store)
    view = file_view(small, file, "detect", "toy")
    size = Path(file).stat().st_size
    assert ERROR in view.info
    assert f"three.jsonl is {size} bytes; the app takes files up to 10 bytes" in view.info
    few = UiContext(settings=context.settings.model_copy(update={"upload_max_rows": 2}),
                    store=context.store)
    checked, plan = check_upload(few, file, "detect", "toy", no_mapping())
    assert plan is None and "three.jsonl has more than 2 rows" in checked


def test_an_html_file_name_is_shown_as_text(context, tmp_path):
    file = write_jsonl(tmp_path / HOSTILE, [row(1)])
    shown = [file_view(context, file, "detect", "toy").info,
             *check_and_import(context, file, "toy"), listing_html(context)]
    for html in shown:
        assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    broken = write_jsonl(tmp_path / ("<b>" + HOSTILE), [{**row(1), "question": 3}])
    checked, _ = check_upload(context, broken, "detect", "toy", no_mapping())
    assert "<b>" not in checked and "&lt;b&gt;&lt;img" in checked


def test_the_listing_shows_counts_source_and_licence(context):
    check_and_import(context, str(TEST_DATA / "nq_open_oracle.jsonl"), "oracle")
    listing = listing_html(context)
    assert "<td>oracle</td><td>10</td><td>10</td><td>0</td><td>0</td>" in listing
    assert "nq_open_oracle.jsonl (unified)" in listing and "<td>demo</td>" in listing
