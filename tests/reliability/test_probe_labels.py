"""Labels under a hostile probe (issue 13): racing duplicate submissions, reused request ids,
spreadsheet formulas in exports, badly shaped imported rows, unwritable export targets and
names no one should be able to give."""

from __future__ import annotations

import csv
import json
import multiprocessing
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import func, select, text

from ragshield.store.database import open_store
from ragshield.store.label_transfer import (LabelExportError, LabelImportError, export_labels,
                                            export_rows, import_labels)
from ragshield.store.label_undo import undo
from ragshield.store.labels import (LabelValueError, RequestIdReusedError, add_annotator,
                                    add_label, label_history)
from ragshield.store.models import Label
from ragshield.store.sample_import import import_samples
from ragshield.types import Passage, Sample
from tests.cli_support import ROOT, run_cli

SAMPLES = [Sample(id=f"s{i}", question=f"q{i}?", passages=[Passage(text=f"p{i}")])
           for i in range(8)]
PROCESSES = 8
pytestmark = pytest.mark.scenario(
    "Labels, round 2: racing duplicates, reused request ids, formulas, bad rows, exports")


@pytest.fixture
def toy(store):
    import_samples(store, "toy", SAMPLES)
    for name in ("alice", "bob"):
        add_annotator(store, name)
    return store


def _label_all_at_once(url: str, barrier, choices: list[str]) -> None:
    """One process of the race: wait for the others, then send a label for every sample."""
    store = open_store(url, migrate=False)
    try:
        for sample, label in zip(SAMPLES, choices):
            barrier.wait(timeout=60)
            add_label(store, "toy", sample.id, "alice", label)
    finally:
        store.close()


def _race(url: str, choices_per_process: list[list[str]]) -> None:
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(len(choices_per_process))
    workers = [context.Process(target=_label_all_at_once, args=(url, barrier, choices))
               for choices in choices_per_process]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=180)
    assert all(worker.exitcode == 0 for worker in workers), [w.exitcode for w in workers]


def _rows(store) -> list[Label]:
    with store.session() as session:
        return list(session.scalars(select(Label).order_by(Label.id)))


def test_the_same_label_sent_at_once_by_eight_processes_is_stored_once(
        python_processes, toy, store_url, scenario):
    _race(store_url, [["answerable"] * len(SAMPLES)] * PROCESSES)
    rows = _rows(toy)
    per_sample = {sample: sum(r.sample_id == sample for r in rows)
                  for sample in {r.sample_id for r in rows}}
    scenario.figure(f"{store_url.split(':')[0]}: label rows for {len(SAMPLES)} samples x "
                    f"{PROCESSES} identical submissions", len(rows))
    scenario.check("every sample got its label", len(per_sample) == len(SAMPLES), per_sample)
    scenario.check("identical submissions racing each other stored one row per sample",
                   set(per_sample.values()) == {1}, per_sample)


def test_different_labels_sent_at_once_form_one_history_per_sample(
        python_processes, toy, store_url, scenario):
    labels = ["answerable", "unanswerable", "unsure"]
    _race(store_url, [[labels[(p + i) % 3] for i in range(len(SAMPLES))] for p in range(PROCESSES)])
    rows = _rows(toy)
    by_sample: dict[int, list[Label]] = {}
    for row in rows:
        by_sample.setdefault(row.sample_id, []).append(row)
    chains_ok = all(
        [r.previous_id for r in versions] == [None] + [r.id for r in versions[:-1]]
        for versions in by_sample.values())
    repeats = sum(a.label == b.label for versions in by_sample.values()
                  for a, b in zip(versions, versions[1:]))
    scenario.check("each sample's versions form one chain, each following the one before",
                   chains_ok)
    scenario.check("no version repeats the one before it (a resent current label stores nothing)",
                   repeats == 0, repeats)


def test_the_database_refuses_a_second_version_after_the_same_one(toy, scenario):
    first = add_label(toy, "toy", "s0", "alice", "answerable")
    with pytest.raises(Exception) as refused:
        with toy.session() as session:
            session.add(Label(sample_id=1, annotator_id=1, label="unsure", passages_shown=[],
                              previous_id=None))
    scenario.check("a second first version of (sample, annotator) is refused by the database",
                   "unique" in str(refused.value).lower(), refused.value)
    add_label(toy, "toy", "s0", "alice", "unsure")
    with pytest.raises(Exception) as refused:
        with toy.session() as session:
            session.add(Label(sample_id=1, annotator_id=1, label="unanswerable",
                              passages_shown=[], previous_id=first.id))
    scenario.check("a second successor of one version is refused by the database",
                   "unique" in str(refused.value).lower(), refused.value)


def test_a_request_id_reused_for_another_label_is_an_error(toy, scenario):
    add_label(toy, "toy", "s0", "alice", "answerable", request_id="R1")
    refused = _raised(lambda: add_label(toy, "toy", "s1", "bob", "unsure", request_id="R1"))
    retry = add_label(toy, "toy", "s0", "alice", "answerable", request_id="R1")
    history = label_history(toy, "toy", "s1")
    scenario.check("a request id sent again with other content is refused",
                   isinstance(refused, RequestIdReusedError)
                   and "request id 'R1' was already used" in str(refused), refused)
    scenario.check("nothing was stored for the refused request", history == [])
    scenario.check("the same request sent again is still acknowledged, not stored twice",
                   not retry.stored and retry.label == "answerable")


def test_a_reused_request_id_through_the_cli_exits_1_and_says_so(
        python_processes, tmp_path, scenario):
    env = {"RAGSHIELD_DATABASE_URL": f"sqlite:///{tmp_path / 'l.db'}"}
    for name in ("alice", "bob"):
        assert run_cli("labels", "annotator", name, env=env).returncode == 0
    ids = [s["id"] for s in json.loads(run_cli("datasets", "samples", "demo", "--limit", "2",
                                               "--json", env=env).stdout)]
    first = run_cli("labels", "add", "--sample", ids[0], "--annotator", "alice", "--label",
                    "answerable", "--request-id", "R1", env=env)
    second = run_cli("labels", "add", "--sample", ids[1], "--annotator", "bob", "--label",
                     "unsure", "--request-id", "R1", env=env)
    history = json.loads(run_cli("labels", "history", "--sample", ids[1], "--json", env=env).stdout)
    scenario.check("the first submission is stored", first.returncode == 0, first.stderr)
    scenario.check("the reuse exits 1 with one error line about the request id",
                   second.returncode == 1 and second.stderr.startswith("error: request id 'R1'")
                   and "Traceback" not in second.stderr, second.stdout + second.stderr)
    scenario.check("it does not claim the label is there", "already there" not in second.stdout)
    scenario.check("nothing is stored for bob", history == [])


def test_a_reused_request_id_through_the_app_handler_shows_an_error(toy, scenario):
    from ragshield.config import Settings
    from ragshield.ui.annotate_tab import QueueView, label_sample
    from ragshield.ui.context import UiContext

    context = UiContext(settings=Settings(), store=toy)
    view = QueueView(dataset="toy")
    stored, _ = label_sample(context, view, "alice", "s0", "answerable", None, "R9")
    refused, screen = label_sample(context, view, "bob", "s1", "unsure", None, "R9")
    scenario.check("the app stores the first label", stored is not None and stored.stored)
    scenario.check("the app refuses the reused id with a message",
                   refused is None and screen.kind == "error" and "request id" in screen.message,
                   screen)
    scenario.check("nothing is stored for bob in the app", label_history(toy, "toy", "s1") == [])


FORMULAS = ["=HYPERLINK(\"http://evil\",\"x\")", "=cmd|' /C calc'!A0", "@SUM(1+1)", "+x",
            "-2+3", "'already quoted", "''two quotes"]


def _dangerous(cell: str) -> bool:
    return cell[:1] in ("=", "+", "-", "@", "\t", "\r")


def test_csv_export_neutralises_formulas_and_round_trips(toy, tmp_path, scenario):
    for number, formula in enumerate(FORMULAS):
        add_annotator(toy, formula, role=formula)
        add_label(toy, "toy", f"s{number}", formula, "unsure", note=formula)
    source = tmp_path / "labels.jsonl"
    source.write_text(json.dumps({**export_rows(toy)[0], "label_id": 999, "note": "\t=1+1",
                                  "sample_id": "s7", "created_at": "2026-01-01T00:00:00+00:00"})
                      + "\n", encoding="utf-8")
    import_labels(toy, source)
    out = tmp_path / "labels.csv"
    export_labels(toy, out, "csv")
    with open(out, newline="", encoding="utf-8") as handle:
        cells = [cell for row in csv.reader(handle) for cell in row]
    other = open_store(f"sqlite:///{tmp_path / 'other.db'}")
    import_samples(other, "toy", SAMPLES)
    import_labels(other, out)

    def values(store):
        return [{k: v for k, v in row.items() if k not in ("label_id", "reverts_label_id")}
                for row in export_rows(store)]
    scenario.check("no CSV cell starts with = + - @, a tab or a carriage return",
                   not [c for c in cells if _dangerous(c)], [c for c in cells if _dangerous(c)])
    scenario.check("names, roles and notes come back unchanged from the CSV",
                   values(other) == values(toy))
    other.close()


BAD_FIELDS = {
    "passages_shown as a number": ("passages_shown", 5),
    "passages_shown as text": ("passages_shown", "abc"),
    "passages_shown as an object": ("passages_shown", '{"a": 1}'),
    "passages_shown holding lists": ("passages_shown", "[[1, 2]]"),
    "label_id as a boolean": ("label_id", True),
    "note as an object": ("note", {"x": 1}),
    "sample_id as a list": ("sample_id", ["s0"]),
    "annotator empty": ("annotator", ""),
    "annotator blank": ("annotator", "   "),
    "annotator of 10,000 characters": ("annotator", "x" * 10_000),
    "annotator with a terminal escape": ("annotator", "eve\x1b]0;owned\x07"),
    "role of 10,000 characters": ("annotator_role", "r" * 10_000),
    "request_id of 65 characters": ("request_id", "r" * 65),
    "created_at as a number": ("created_at", 5),
    "note with a NUL character": ("note", "fine\x00"),  # PostgreSQL's text keeps none
    "request_id with a NUL character": ("request_id", "r\x00"),
}


def _count(store) -> int:
    with store.session() as session:
        return session.scalar(select(func.count(Label.id)))


@pytest.mark.parametrize("case", list(BAD_FIELDS))
def test_a_badly_shaped_imported_field_fails_the_import_naming_row_and_field(toy, tmp_path, case,
                                                                             scenario):
    add_label(toy, "toy", "s0", "alice", "answerable")
    good = export_rows(toy)[0]
    field, value = BAD_FIELDS[case]
    path = tmp_path / "labels.jsonl"
    path.write_text(json.dumps({**good, "label_id": 2, "sample_id": "s1"}) + "\n"
                    + json.dumps({**good, "label_id": 3, field: value}) + "\n", encoding="utf-8")
    before = _count(toy)
    with pytest.raises(LabelImportError) as error:
        import_labels(toy, path)
    scenario.check(f"{case}: the error names line 2 and the field",
                   "line 2" in str(error.value) and field in str(error.value), error.value)
    scenario.check(f"{case}: nothing of the file was imported", _count(toy) == before)


@pytest.mark.parametrize("line, what", [
    ('["a", "b"]', "an array"), ("[" * 100_000 + "]" * 100_000, "nested 100,000 deep"),
    ('{"label_id": NaN}', "NaN"),
])
def test_an_unusable_jsonl_line_is_an_error_naming_the_line(toy, tmp_path, line, what, scenario):
    path = tmp_path / "labels.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(LabelImportError) as error:
        import_labels(toy, path)
    scenario.check(f"a JSONL line that is {what} is refused naming line 1",
                   "line 1" in str(error.value), error.value)


def test_a_request_id_clash_on_import_names_the_row(toy, tmp_path, scenario):
    add_label(toy, "toy", "s0", "alice", "answerable", request_id="R1")
    row = {**export_rows(toy)[0], "label_id": 50, "sample_id": "s3", "annotator": "bob",
           "created_at": "2026-01-02T00:00:00+00:00"}
    path = tmp_path / "labels.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(LabelImportError) as error:
        import_labels(toy, path)
    scenario.check("a request id that belongs to another label is refused with row and field",
                   "line 1" in str(error.value) and "request_id" in str(error.value), error.value)


def test_a_csv_with_a_byte_order_mark_keeps_its_undo_links(toy, tmp_path, scenario):
    add_label(toy, "toy", "s0", "alice", "answerable")
    add_label(toy, "toy", "s0", "alice", "unanswerable")
    undo(toy, "toy", "alice")
    out = tmp_path / "labels.csv"
    export_labels(toy, out, "csv")
    out.write_bytes(b"\xef\xbb\xbf" + out.read_bytes())
    other = open_store(f"sqlite:///{tmp_path / 'other.db'}")
    import_samples(other, "toy", SAMPLES)
    import_labels(other, out)
    reverts = [row["reverts_label_id"] for row in export_rows(other)]
    other.close()
    scenario.check("an export saved by a spreadsheet with a BOM keeps its undo link",
                   reverts[-1] is not None and reverts[:-1] == [None, None], reverts)


def test_a_stored_row_of_the_wrong_shape_does_not_break_the_history(toy, scenario):
    add_label(toy, "toy", "s0", "alice", "answerable")
    with toy.session() as session:  # as an import before the fields were checked left it
        session.execute(text("UPDATE labels SET passages_shown = '5'"))
    history = label_history(toy, "toy", "s0")
    scenario.check("the history of a legacy row holding 5 as passages_shown still reads",
                   history[0].passages_shown == [5], history)


def test_names_no_one_should_give_are_refused(toy, scenario):
    for name in ("", "   ", "x" * 10_000, "eve\x1b[2J", "bob\u202eevil"):
        with pytest.raises(ValueError) as error:
            add_annotator(toy, name)
        scenario.check(f"annotator name {name[:12]!r}: refused naming the field",
                       "'annotator'" in str(error.value), error.value)
    with toy.session() as session:  # a name stored before names were checked
        session.execute(text("INSERT INTO annotators (name, created_at) "
                             "VALUES ('mallory\x1b[2J', '2026-01-01')"))
    with pytest.raises(LookupError) as error:
        add_label(toy, "toy", "s0", "nobody", "answerable")
    scenario.check("the unknown-annotator error shows other names escaped, not raw",
                   "\x1b" not in str(error.value) and "\\x1b" in str(error.value), error.value)


def test_exports_to_a_folder_or_a_missing_folder_are_one_line_errors(
        python_processes, tmp_path, scenario):
    env = {"RAGSHIELD_DATABASE_URL": f"sqlite:///{tmp_path / 'l.db'}"}
    for out, what in ((tmp_path, "a folder"), (tmp_path / "missing" / "x.csv", "a missing folder")):
        result = run_cli("labels", "export", "--format", "csv", "--out", str(out), env=env)
        scenario.check(f"export to {what}: exit 1, one error line, no traceback",
                       result.returncode == 1 and result.stderr.startswith("error:")
                       and "Traceback" not in result.stderr, result.stderr)
    for args, what in ((("labels", "export", "--format", "csv", "--out",
                         str(tmp_path / "x.csv"), "--dataset", "nosuch"),
                        "export --dataset nosuch"),
                       (("labels", "next", "--annotator", "ann", "--run", "999"),
                        "next --run 999")):
        run_cli("labels", "annotator", "ann", env=env)
        result = run_cli(*args, env=env)
        scenario.check(f"{what}: an error, not silence",
                       result.returncode == 1 and result.stderr.startswith("error: no "),
                       result.stdout + result.stderr)


def _limited_export(database_url: str, out: Path, limit: int) -> subprocess.CompletedProcess:
    """`labels export` in a process that may not write files beyond `limit` bytes: the
    operating system's own 'disk full' for one process (EFBIG instead of ENOSPC)."""
    def limit_file_size() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return subprocess.run(
        [sys.executable, "-m", "ragshield", "labels", "export", "--format", "jsonl", "--out",
         str(out)], cwd=ROOT, env={**os.environ, "RAGSHIELD_DATABASE_URL": database_url},
        capture_output=True, text=True, timeout=120, preexec_fn=limit_file_size)


def test_an_export_onto_a_full_disk_keeps_the_earlier_file(
        python_processes, postgres_url, tmp_path, scenario):
    # PostgreSQL, so that the export process writes no file but the export itself.
    store = open_store(postgres_url)
    import_samples(store, "toy", SAMPLES)
    add_annotator(store, "alice")
    for sample in SAMPLES:
        add_label(store, "toy", sample.id, "alice", "answerable", note="n" * 200)
    out = tmp_path / "labels.jsonl"
    export_labels(store, out, "jsonl")
    earlier = out.read_bytes()
    add_label(store, "toy", "s0", "alice", "unsure")
    store.close()
    result = _limited_export(postgres_url, out, limit=len(earlier) // 2)
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != out.name]
    scenario.check("the export that hit the limit exits 1 with one error line",
                   result.returncode == 1 and result.stderr.startswith("error: cannot write")
                   and "Traceback" not in result.stderr, result.stderr)
    scenario.check("the earlier export is whole", out.read_bytes() == earlier)
    scenario.check("no partial file is left beside it", leftovers == [], leftovers)


def test_the_library_refuses_a_folder_as_export_and_nested_passages(toy, tmp_path, scenario):
    folder = _raised(lambda: export_labels(toy, tmp_path, "csv"))
    nested = _raised(lambda: add_label(toy, "toy", "s0", "alice", "answerable",
                                       passages_shown=[[1]]))
    scenario.check("export_labels to a folder says it is a folder",
                   isinstance(folder, LabelExportError) and "is a folder" in str(folder), folder)
    scenario.check("add_label refuses passages_shown holding lists, naming the field",
                   isinstance(nested, LabelValueError) and "passages_shown" in str(nested), nested)
    scenario.check("nothing was stored", label_history(toy, "toy", "s0") == [])


def _raised(action) -> Exception | None:
    try:
        action()
    except Exception as exc:  # noqa: BLE001 - the test inspects what was raised
        return exc
    return None
