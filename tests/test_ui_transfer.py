"""The Data tab's "Results out" panel, its handlers called as the page calls them, on a real
store: the demo set judged by a scripted model and labelled (tests/test_policies.py). A
download is the file the CLI's export writes; an upload adds the run or policy it holds, or
changes nothing and says why in one line."""

from __future__ import annotations

import html
import json
import lzma
import os
import re
import shutil
import tempfile
import time
import zipfile
from pathlib import Path

import gradio as gr
import pytest

from ragshield.evaluation import run_tables
from ragshield.services.annotation.labelling import add_annotator, label_sample
from ragshield.services.annotation.people import Access
from ragshield.services.data import downloads
from ragshield.services.data.downloads import ALL_DATASETS, KEEP_SECONDS, fresh_folder
from ragshield.services.database import open_store
from ragshield.services.defaults import TRANSFER_MAX_BYTES
from ragshield.services.learning.policies import fit_run_policy, get_policy, list_policies
from ragshield.services.runs.run_choices import newest_runs
from ragshield.store.sample_import import import_samples
from ragshield.types import Passage, Sample
from ragshield.ui import transfer_panel
from ragshield.ui.context import UiContext
from ragshield.ui.transfer_panel import (choices, download_labels, download_policy,
                                         download_report, download_run, import_policy_file,
                                         import_run_file)
from tests.cli_support import invoke
from tests.judged_demo import JUDGE, judged_demo_run

# The services behind the panel have their own PostgreSQL tests.
SQLITE_ONLY = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
OTHER = "other"
FORMULA_NOTE = "=HYPERLINK(\"http://x\")"


@pytest.fixture(autouse=True)
def temporary_folder(tmp_path, monkeypatch) -> Path:
    """The temporary folder the downloads go into: the test's own, not the machine's."""
    folder = tmp_path / "temp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.fixture
def context(store, settings) -> UiContext:
    return UiContext(settings=settings, store=store)


@pytest.fixture
def run_id(context, settings) -> int:
    """The demo set judged by p_true and labelled from its flags, plus a second dataset with
    one label whose note a spreadsheet would run as a formula."""
    _, run = judged_demo_run(context.store, settings, [JUDGE])
    import_samples(context.store, OTHER, [Sample(id="o1", question="Who?",
                                                 passages=[Passage(text="Nobody.")])])
    label_sample(context.store, OTHER, "o1", "flag-reader", "unanswerable", note=FORMULA_NOTE)
    return run


def _file(offered: tuple[str | None, str]) -> Path:
    path, message = offered
    assert path is not None, message
    return Path(path)


def _uploaded(path: Path, folder: Path, name: str | None = None) -> str:
    """`path` as Gradio hands an upload over: a copy under its own name in a server folder."""
    folder.mkdir(parents=True, exist_ok=True)
    return str(shutil.copy(path, folder / (name or path.name)))


def _error_line(message: str) -> str:
    """The text of an error message, checked to be one line."""
    assert 'rs-msg-error' in message, message
    text = html.unescape(re.sub(r"<[^>]+>", "", message))
    assert "\n" not in text
    return text


@SQLITE_ONLY
def test_labels_download_is_the_cli_export_byte_for_byte(context, run_id, store_url, tmp_path):
    env = {"RAGSHIELD_DATABASE_URL": store_url}
    offered = choices(context).datasets
    assert offered[0] == ALL_DATASETS and {"demo", OTHER} <= set(offered)
    for format in ("csv", "jsonl", "parquet"):
        for dataset in (ALL_DATASETS, "demo", OTHER):
            downloaded = _file(download_labels(context, dataset, format))
            out = tmp_path / f"cli-{format}-{dataset}.{format}"
            option = [] if dataset == ALL_DATASETS else ["--dataset", dataset]
            result = invoke("labels", "export", "--format", format, "--out", str(out), *option,
                            env=env)
            assert result.exit_code == 0, result.output
            assert downloaded.read_bytes() == out.read_bytes(), (format, dataset)
    everything = _file(download_labels(context, ALL_DATASETS, "csv")).read_text()
    assert len(everything.splitlines()) == 160 + 1 + 1  # the header, demo's 160 and other's
    assert f"'{FORMULA_NOTE}" in everything.replace('""', '"')  # formula-safe
    assert "o1" not in _file(download_labels(context, "demo", "jsonl")).read_text()
    path, message = download_labels(context, "no such set", "csv")
    assert path is None and "no such set" in _error_line(message)
    path, message = download_labels(context, "demo", None)  # a TypeError before
    assert path is None and "format must be csv, jsonl or parquet" in _error_line(message)


@SQLITE_ONLY
def test_an_annotators_label_download_holds_their_own_notes_only(context):
    import_samples(context.store, OTHER, [Sample(id="o1", question="Who?",
                                                 passages=[Passage(text="Nobody.")])])
    for name in ("ann", "bea"):
        add_annotator(context.store, name)
    label_sample(context.store, OTHER, "o1", "ann", "answerable", note="ann's own note")
    label_sample(context.store, OTHER, "o1", "bea", "unanswerable", note="bea's private note")

    def notes(by: str | None) -> tuple[set[tuple[str, str | None]], str]:
        path, message = download_labels(context, OTHER, "jsonl", by)
        assert path is not None, message
        rows = [json.loads(line) for line in Path(path).read_text().splitlines()]
        return {(row["annotator"], row["note"]) for row in rows}, message

    everyone = {("ann", "ann's own note"), ("bea", "bea's private note")}
    assert notes(None)[0] == everyone  # the app without logins: its one local user
    context.access = Access(logins=True, file_roles={"ann": "annotator", "bea": "annotator",
                                                     "boss": "admin"})
    own, message = notes("ann")
    assert own == {("ann", "ann's own note"), ("bea", None)}
    assert "the notes are your own only" in message
    assert notes("boss")[0] == everyone
    assert notes(None)[0] == {("ann", None), ("bea", None)}  # no name: nobody's notes


@SQLITE_ONLY
def test_a_run_bundle_moves_to_an_empty_store(context, run_id, settings, tmp_path):
    assert choices(context).runs[0][1] == run_id
    bundle = _file(download_run(context, run_id, True))
    assert bundle.name == f"run-{run_id}.json.xz"
    other = open_store(f"sqlite:///{tmp_path / 'empty.db'}")
    try:
        there = UiContext(settings=settings, store=other)
        assert choices(there).runs == []
        message = import_run_file(there, _uploaded(bundle, tmp_path / "upload"))
        (imported,) = newest_runs(other)
        assert (f"imported as run {imported.id} on dataset demo with 160 answered samples"
                in message)
        assert [value for _, value in choices(there).runs] == [imported.id]
        before = run_tables(context.store, run_id, "auto")
        after = run_tables(other, imported.id, "auto")
        columns = ["sample_id", "answer", "answer_correct"]
        assert after.samples[columns].equals(before.samples[columns])
        assert (after.verdicts[["sample_id", "judge", "score"]]
                .equals(before.verdicts[["sample_id", "judge", "score"]]))
    finally:
        other.close()


@SQLITE_ONLY
def test_a_policy_round_trips(context, run_id, tmp_path):
    fitted = fit_run_policy(context.store, run_id, JUDGE, "guard", alpha=0.3, delta=0.1)
    fit_run_policy(context.store, run_id, JUDGE, "guard", alpha=0.4, delta=0.1)
    assert [rule for _, rule in choices(context).policies] == ["policy:guard@2",
                                                               "policy:guard@1"]
    downloaded = _file(download_policy(context, "policy:guard@1"))
    assert downloaded.name == "policy-guard-v1.json"
    message = import_policy_file(context, _uploaded(downloaded, tmp_path / "upload"))
    assert "stored as policy guard, version 3" in message
    stored = get_policy(context.store, "guard", 3)
    assert (stored.answer_at, stored.withhold_below, stored.alpha) == (
        fitted.answer_at, fitted.withhold_below, fitted.alpha)
    assert choices(context).policies[0][1] == "policy:guard@3"
    # With logins, an uploaded version is an admin's to add: it is what keys naming the
    # policy decide by.
    context.access = Access(logins=True, file_roles={"ann": "annotator"})
    refused = import_policy_file(context, _uploaded(downloaded, tmp_path / "again"), "ann")
    assert "Only an admin may upload policies." in refused
    assert choices(context).policies[0][1] == "policy:guard@3"
    assert "Only an admin may upload runs." in import_run_file(context, None, "ann")


@SQLITE_ONLY
def test_bad_uploads_give_one_line_errors_and_change_nothing(context, run_id, tmp_path,
                                                             monkeypatch):
    fit_run_policy(context.store, run_id, JUDGE, "guard", alpha=0.3, delta=0.1)
    policies, runs = len(list_policies(context.store)), len(newest_runs(context.store))
    folder = tmp_path / "upload"
    folder.mkdir()
    corrupt = folder / "<img src=x onerror=alert(1)>.json"
    corrupt.write_text('{"format": "ragshield-policy/1", "alpha": ')
    message = import_policy_file(context, str(corrupt))
    assert "<img" not in message and "&lt;img src=x" in message
    text = _error_line(message)
    assert text.startswith(f"{corrupt.name}: not valid JSON") and str(folder) not in text
    large = folder / "large.json.xz"
    with large.open("wb") as handle:
        handle.truncate(TRANSFER_MAX_BYTES + 1)  # sparse: the size without the disk
    for handler, command in ((import_policy_file, "policy import"),
                             (import_run_file, "runs import")):
        text = _error_line(handler(context, str(large)))
        assert text.startswith("large.json.xz is 20.0 MB; the app takes files up to 20 MB")
        assert command in text
    not_a_bundle = folder / "run.json.xz"
    not_a_bundle.write_bytes(b"not xz")
    text = _error_line(import_run_file(context, str(not_a_bundle)))
    assert text.startswith("run.json.xz: not an xz-compressed JSON run bundle")
    bomb = folder / "bomb.json.xz"  # small packed, large unpacked
    bomb.write_bytes(lzma.compress(b" " * 5_000))
    monkeypatch.setattr(downloads, "TRANSFER_MAX_UNPACKED", 1_000)
    text = _error_line(import_run_file(context, str(bomb)))
    assert text.startswith("bomb.json.xz: unpacks to more than") and "runs import" in text
    assert "choose a policy file" in _error_line(import_policy_file(context, None))
    assert len(list_policies(context.store)) == policies
    assert len(newest_runs(context.store)) == runs


@SQLITE_ONLY
def test_a_report_is_one_zip_with_the_html_and_its_figures(context, run_id):
    report = _file(download_report(context, run_id, "human"))
    with zipfile.ZipFile(report) as archive:
        names = set(archive.namelist())
        page = archive.read(f"run-{run_id}-report/report.html").decode()
    figures = re.findall(r'<img src="([^"]+)"', page)
    assert figures and {f"run-{run_id}-report/{name}" for name in figures} <= names
    assert f"run-{run_id}-report/metrics.json" in names
    path, message = download_report(context, None, "auto")
    assert path is None and _error_line(message) == "choose a run first"


def test_old_download_folders_are_removed_as_new_ones_are_made(temporary_folder):
    old = fresh_folder()
    assert old.parent == temporary_folder
    (old / "file").write_text("x")
    long_ago = time.time() - KEEP_SECONDS - 60
    os.utime(old, (long_ago, long_ago))
    recent = fresh_folder()
    new = fresh_folder()
    assert not old.exists() and recent.is_dir() and new.is_dir() and new != recent


@SQLITE_ONLY
def test_the_panel_builds_and_fills_its_pickers_on_load(context, run_id):
    with gr.Blocks() as page:
        transfer_panel.build(context, page)
    names = {fn.api_name for fn in page.fns.values()}
    assert {"transfer_choices", "transfer_labels", "transfer_import_run"} <= names
    fit_run_policy(context.store, run_id, JUDGE, "guard", alpha=0.3, delta=0.1)
    bundle_run, report_run, dataset, policy, notes, shown = transfer_panel.pickers_update(
        context, None, 999, "a removed set", None)
    assert bundle_run["value"] == report_run["value"] == run_id
    assert dataset["value"] == ALL_DATASETS and OTHER in dataset["choices"]
    assert policy["value"] == "policy:guard@1" and notes == ""
    # a page that shows these choices already is sent only the notes
    again = transfer_panel.pickers_update(context, None, 999, "a removed set", None, shown)
    assert again == (*[gr.skip()] * 4, "", shown)


@SQLITE_ONLY
def test_sentence_labels_go_out_and_come_back_through_the_panel(context, settings, tmp_path):
    """Issue 57, item 6: the Data tab's sentence labels are the CLI's export; an upload of
    LFQA-Verification rows (into the dataset picked) is an admin's, all or nothing."""
    from ragshield.pipeline import RunModels, execute_run, start_run
    from ragshield.run_config import RunConfig
    from ragshield.services.annotation.sentence_labelling import label_sentence
    from tests.fakes import ScriptedLLM

    answer = "Nobody came. The door stayed shut."
    import_samples(context.store, OTHER, [Sample(id="o1", question="Who?",
                                                 passages=[Passage(text="Nobody.")])])
    run = start_run(context.store, RunConfig(dataset=OTHER, judges=["trivial"], rule="trivial"))
    execute_run(context.store, run, settings, progress=False,
                models=RunModels(main=ScriptedLLM(respond=lambda m: f"Answer: {answer}")))
    add_annotator(context.store, "ann")
    label_sentence(context.store, OTHER, "o1", "ann", "supported", index=1)
    path, message = download_labels(context, OTHER, "jsonl", sentences=True)
    assert "1 sentence label rows" in message
    [row] = [json.loads(line) for line in Path(path).read_text().splitlines()]
    assert (row["sentence"], row["label"], row["answer"]) == ("Nobody came.", "supported",
                                                              answer)
    lfqa = tmp_path / "lfqa.jsonl"
    lfqa.write_text(json.dumps({"id": "o1", "sentences": [
        {"text": "The door stayed shut.", "annotator_labels": ["supported", "partially"]}]})
        + "\n", encoding="utf-8")
    context.access = Access(logins=True, file_roles={"ann": "annotator", "boss": "admin"})
    refused = transfer_panel.import_sentence_label_file(context, str(lfqa), OTHER, "ann")
    assert "Only an admin may upload labels" in _error_line(refused)
    stored = transfer_panel.import_sentence_label_file(context, str(lfqa), OTHER, "boss")
    assert "2 sentence label rows added, 0 already there" in stored
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "o1", "sentences": [
        {"text": "Somebody came.", "annotator_labels": ["supported"]}]}) + "\n")
    message = _error_line(transfer_panel.import_sentence_label_file(context, str(bad), OTHER,
                                                                    "boss"))
    assert "bad.jsonl, line 1: field 'sentence': 'Somebody came.' is not in the answer" in message
