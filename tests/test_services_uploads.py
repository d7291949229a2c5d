"""Uploads, dataset renames and confirmed deletions on a real store: the dry run counts what
the import then does and writes nothing; a bad row fails naming the file (not the server
folder), line and field, and nothing is imported; the bounds on bytes, rows and time; column
mappings saved, reused and moved by a rename; a rename that keeps runs, labels, policies and
cached run tables attached; and the same store as `ragshield datasets import`."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from itertools import count
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from ragshield.cli import app as cli_app
from ragshield.datasets import DatasetError
from ragshield.names import InvalidNameError
from ragshield.policies.fitting import REFERENCE, LabelledScores, fit_policy
from ragshield.policies.policy import config_rule, rule_fields
from ragshield.policies.watch import unused_mask
from ragshield.services.data.column_mappings import saved_mapping, setting_key
from ragshield.services.data.datasets import (DatasetChangedError, ReservedDatasetError,
                                              delete_dataset, delete_as_previewed,
                                              deletion_preview, rename_dataset)
from ragshield.services.data.uploads import (UploadLimits, UploadTimeoutError, UploadTooLargeError,
                                             open_upload, plan_import, preview, run_import,
                                             suggested_mapping, upload_request)
from ragshield.services.learning import policies as policy_service
from ragshield.services.runs.run_tables import RunTablesCache
from ragshield.store.database import open_store
from ragshield.store.dataset_deletion import dataset_usage
from ragshield.store.dataset_rename import DatasetExistsError
from ragshield.store.labels import add_annotator, add_label
from ragshield.store.policies import policy_body, policy_heads, save_policy
from ragshield.store.runs import create_run, get_run, list_runs
from ragshield.store.samples import (UnknownDatasetError, dataset_origins, has_dataset,
                                     iter_samples, list_datasets)
from ragshield.testing.synthetic_run import fill_synthetic_run
from tests.conftest import TEST_DATA

LIMITS = UploadLimits(max_bytes=10_000_000, max_rows=1000, max_seconds=60)
SQLITE_ONLY = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)


def row(i: int, answer: str = "yes", **extra: Any) -> dict[str, Any]:
    return {"id": f"q{i}", "question": f"Question {i}?", "answerable": True,
            "reference_answers": [answer], "passages": [{"title": "t", "text": f"Text {i}."}],
            **extra}


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def request_for(path: Path, dataset: str, format: str | None = "detect",
                columns: dict[str, str | None] | None = None):
    return upload_request(open_upload(path, format, LIMITS), dataset, columns)


def contents(store, name: str) -> list:
    return list(iter_samples(store, name))


def test_the_dry_run_counts_what_the_import_does_and_writes_nothing(store, tmp_path):
    run_import(store, request_for(write_jsonl(tmp_path / "a.jsonl", [row(1), row(2), row(3)]),
                                  "toy"), LIMITS)
    before = contents(store, "toy")
    second = write_jsonl(tmp_path / "b.jsonl",
                         [row(1), row(2, answer="no"), row(4, answer="x", answer_model="m")])
    second_rows = [json.loads(line) for line in second.read_text().splitlines()]
    second_rows[2]["answer"] = "Given."  # an outside system's answer on the new row
    write_jsonl(second, second_rows)
    plan = plan_import(store, request_for(second, "toy"), LIMITS)
    r = plan.result
    assert (r.added, r.updated, r.unchanged, r.missing, r.samples) == (1, 1, 1, 1, 4)
    assert plan.given_answers == 1
    assert contents(store, "toy") == before  # nothing written
    assert run_import(store, plan.request, LIMITS) == r
    assert len(contents(store, "toy")) == 4


def test_a_new_dataset_is_planned_without_being_created(store, tmp_path):
    plan = plan_import(store, request_for(write_jsonl(tmp_path / "a.jsonl", [row(1)]), "fresh"),
                       LIMITS)
    assert (plan.result.added, plan.result.samples) == (1, 1)
    assert not has_dataset(store, "fresh")


def test_a_bad_row_names_file_line_and_field_and_nothing_is_imported(store, tmp_path):
    bad = tmp_path / "bad.jsonl"
    write_jsonl(bad, [row(1), row(2), {**row(3), "question": 7}])
    request = request_for(bad, "toy")
    for attempt in (lambda: plan_import(store, request, LIMITS),
                    lambda: run_import(store, request, LIMITS)):
        with pytest.raises(DatasetError) as caught:
            attempt()
        message = str(caught.value)
        assert message.startswith("bad.jsonl, line 3, field 'question'")
        assert str(tmp_path) not in message  # the server's folder is not shown
    assert not has_dataset(store, "toy")
    write_jsonl(bad, [row(1), row(2), row(3)])  # fixed
    assert run_import(store, request, LIMITS).added == 3


def test_an_unreadable_format_is_named_by_the_file_alone(tmp_path):
    odd = tmp_path / "notes.txt"
    odd.write_text("hello\n")
    with pytest.raises(DatasetError, match=r"^notes\.txt: cannot tell the format") as caught:
        open_upload(odd, "detect", LIMITS)
    assert str(tmp_path) not in str(caught.value)


def test_bounds_on_bytes_rows_and_time(store, tmp_path, monkeypatch):
    path = write_jsonl(tmp_path / "three.jsonl", [row(1), row(2), row(3)])
    size = path.stat().st_size
    with pytest.raises(UploadTooLargeError,
                       match=rf"three\.jsonl is {size} bytes; the app takes files up to "
                             rf"{size - 1} bytes"):
        open_upload(path, "detect", UploadLimits(size - 1, 1000, 60))
    open_upload(path, "detect", UploadLimits(size, 1000, 60))  # exactly the limit is fine
    request = request_for(path, "toy")
    with pytest.raises(UploadTooLargeError, match="more than 2 rows"):
        run_import(store, request, UploadLimits(size, 2, 60))
    assert not has_dataset(store, "toy")
    clock = count(0, 10.0)  # every look at the clock is 10 s later
    monkeypatch.setattr("ragshield.services.data.uploads.time.monotonic", lambda: next(clock))
    with pytest.raises(UploadTimeoutError, match=r"reading three\.jsonl took more than 25 s"):
        run_import(store, request, UploadLimits(size, 1000, 25))
    assert not has_dataset(store, "toy")


def test_a_compressed_upload_is_bounded_by_what_it_unpacks_to(store, tmp_path):
    """A few hundred bytes of gzip can unpack to a line of gigabytes, read whole."""
    path = tmp_path / "bomb.jsonl.gz"
    line = json.dumps({"id": "1", "question": "a" * 100_000}) + "\n"
    with gzip.open(path, "wt") as handle:
        handle.write(line)
    assert path.stat().st_size < 1_000
    with pytest.raises(UploadTooLargeError, match=r"^bomb\.jsonl\.gz unpacks to more than "
                                                  r"50,000 bytes"):
        open_upload(path, "detect", UploadLimits(50_000, 1000, 60))
    assert open_upload(path, "jsonl", UploadLimits(len(line), 1000, 60)).format == "jsonl"


def test_a_column_mapping_is_saved_reused_and_checked(store, tmp_path):
    csv_path = tmp_path / "table.csv"
    csv_path.write_text('q,gold,ctx,resp\nWho?,Ann,"Ann wrote it.",Ann\nWhen?,,,1999\n',
                        encoding="utf-8")
    upload = open_upload(csv_path, "detect", LIMITS)
    table = preview(upload)
    assert upload.format == "csv" and table.columns == ["q", "gold", "ctx", "resp"]
    assert table.rows[0] == {"q": "Who?", "gold": "Ann", "ctx": "Ann wrote it.", "resp": "Ann"}
    with pytest.raises(DatasetError, match="names answer_model but no answer column"):
        upload_request(upload, "tab", {"question": "q", "answer_model": "resp"})
    columns = {"question": "q", "answers": "gold", "passages": "ctx", "answer": "resp",
               "id": None, "answerable": ""}
    request = upload_request(upload, "tab", columns)
    assert request.mapping == {"question": "q", "answers": "gold", "passages": "ctx",
                               "answer": "resp"}
    assert plan_import(store, request, LIMITS).given_answers == 2
    run_import(store, request, LIMITS)
    assert saved_mapping(store, "tab") == request.mapping
    # Next time: the saved columns this file has.
    assert suggested_mapping(store, "tab", ["q", "gold"]) == {"question": "q", "answers": "gold"}
    assert suggested_mapping(store, "other", ["q", "gold"]) == {}


def test_a_long_dataset_name_keeps_its_mapping_under_a_short_key(store):
    name = "d" * 200
    assert len(setting_key(name)) <= 100 and setting_key(name) != setting_key("d" * 199)


def cli_import(url: str, *args: str) -> None:
    result = CliRunner().invoke(cli_app, ["datasets", "import", *args],
                                env={"RAGSHIELD_DATABASE_URL": url}, catch_exceptions=False)
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("file, format, map_text, columns", [
    (TEST_DATA / "raw" / "squad2_dev_part_a_squad_format.json", "squad2", None, None),
    (TEST_DATA / "raw" / "NQ-open.dev.jsonl", "nq_open", None, None),
    (TEST_DATA / "nq_open_oracle.jsonl", "detect", None, None),
    (None, "detect", "question=q,answers=gold,answer=resp",
     {"question": "q", "answers": "gold", "answer": "resp"}),
])
def test_an_upload_leaves_the_store_the_cli_import_leaves(tmp_path, file, format, map_text,
                                                          columns):
    if file is None:
        file = tmp_path / "table.csv"
        file.write_text("q,gold,resp,extra\nWho?,Ann,Ann,x\nWhen?,1999,,y\n", encoding="utf-8")
    cli_url, app_url = f"sqlite:///{tmp_path}/cli.db", f"sqlite:///{tmp_path}/app.db"
    cli_args = [*(["--format", format] if format != "detect" else []),
                *(["--map", map_text] if map_text else [])]
    cli_import(cli_url, "set", str(file), *cli_args)
    cli_store, app_store = open_store(cli_url), open_store(app_url)
    try:
        run_import(app_store, request_for(file, "set", format, columns), LIMITS)
        assert list_datasets(app_store) == list_datasets(cli_store)
        assert dataset_origins(app_store) == dataset_origins(cli_store)
        assert contents(app_store, "set") == contents(cli_store, "set")
    finally:
        cli_store.close()
        app_store.close()


@SQLITE_ONLY
def test_a_rename_keeps_runs_labels_policies_and_cached_tables_attached(store):
    run_id = fill_synthetic_run(store, 6, ["trivial"], seed=1)
    old = get_run(store, run_id).dataset
    add_annotator(store, "ann")
    add_label(store, old, contents(store, old)[0].id, "ann", "answerable")
    save_policy(store, "pol", "trivial", old,
                lambda v: {"name": "pol", "fitted_on": {"dataset": old}})
    store_tables = RunTablesCache(store)
    assert store_tables.get(run_id).config["dataset"] == old
    before = dataset_usage(store, old)
    assert rename_dataset(store, old, "  renamed ") == "renamed"
    run = get_run(store, run_id)
    assert run.dataset == "renamed" and run.config["dataset"] == "renamed"
    after = dataset_usage(store, "renamed")
    assert (after.samples, after.runs, after.labels) == (before.samples, before.runs,
                                                         before.labels)
    assert [r.dataset for r in list_runs(store)] == ["renamed"]
    assert policy_heads(store)[0].dataset == "renamed"
    assert policy_body(store, "pol")["fitted_on"]["dataset"] == "renamed"
    assert store_tables.get(run_id).config["dataset"] == "renamed"  # not the cached name
    with pytest.raises(UnknownDatasetError):
        dataset_usage(store, old)


@SQLITE_ONLY
def test_a_rename_keeps_a_policy_leaving_out_the_samples_it_was_fitted_on(store):
    run_id = fill_synthetic_run(store, 300, ["trivial"], seed=3)
    old = get_run(store, run_id).dataset
    ids = np.asarray([sample.id for sample in contents(store, old)])
    scores = np.random.default_rng(3).random(200)  # answers scored above 0.3 are good
    fitted = policy_service.save_policy(store, fit_policy(
        "pol", "trivial", LabelledScores(ids[:200], scores, scores > 0.3,
                                         np.full(200, REFERENCE)),
        alpha=0.2, delta=0.1, run_id=run_id, dataset=old))
    # Runs that decided by it keep a copy, also one on another dataset.
    other = get_run(store, fill_synthetic_run(store, 4, ["trivial"], seed=4)).dataset
    deciding = [create_run(store, dataset=name, config={"dataset": name, **rule_fields(fitted)},
                           seed=0, code_version="test", samples_total=1)
                for name in (old, other)]
    rename_dataset(store, old, "renamed")
    stored = policy_service.get_policy(store, "pol")
    assert stored.fitted_on == replace(fitted.fitted_on, dataset="renamed")
    assert unused_mask(stored, "renamed", ids).tolist() == [False] * 200 + [True] * 100
    assert [config_rule(get_run(store, i).config).fitted_on.dataset for i in deciding] == [
        "renamed", "renamed"]
    assert get_run(store, deciding[1]).config["dataset"] == other


def test_a_rename_to_a_taken_or_reserved_name_is_refused(store, tmp_path):
    for name in ("one", "two"):
        run_import(store, request_for(write_jsonl(tmp_path / f"{name}.jsonl", [row(1)]), name),
                   LIMITS)
    with pytest.raises(DatasetExistsError, match="a dataset named 'two' already exists"):
        rename_dataset(store, "one", "two")
    for old, new in (("one", "demo"), ("one", "live"), ("demo", "x")):
        with pytest.raises(ReservedDatasetError, match="filled by the app itself"):
            rename_dataset(store, old, new)
    with pytest.raises(UnknownDatasetError):
        rename_dataset(store, "nothing", "x")
    with pytest.raises(InvalidNameError, match="'new dataset name' must not be empty"):
        rename_dataset(store, "one", " ")
    assert sorted(d.name for d in list_datasets(store)) == ["one", "two"]


def test_a_rename_moves_the_saved_mapping(store, tmp_path):
    csv_path = tmp_path / "t.csv"
    csv_path.write_text("q\nWho?\n", encoding="utf-8")
    run_import(store, request_for(csv_path, "old", columns={"question": "q"}), LIMITS)
    rename_dataset(store, "old", "new")
    assert saved_mapping(store, "new") == {"question": "q"} and saved_mapping(store, "old") == {}
    delete_dataset(store, "new")
    assert saved_mapping(store, "new") == {}  # a deleted dataset leaves no mapping behind


@SQLITE_ONLY
def test_a_deletion_goes_only_as_previewed(store):
    run_id = fill_synthetic_run(store, 4, ["trivial"], seed=2)
    name = get_run(store, run_id).dataset
    shown = deletion_preview(store, name, force=True)
    assert shown.runs == [run_id] and shown.samples == 4
    # A label added after the deletion was shown.
    add_annotator(store, "late")
    add_label(store, name, contents(store, name)[1].id, "late", "unanswerable")
    with pytest.raises(DatasetChangedError, match="changed since the deletion was shown"):
        delete_as_previewed(store, name, shown)
    assert has_dataset(store, name)
    gone = delete_as_previewed(store, name, deletion_preview(store, name, force=True))
    assert gone.runs == [run_id] and not has_dataset(store, name)
