"""`ragshield datasets ...` on a fresh SQLite file: import, re-import of a changed file, list,
samples, delete. The commands run in this process (typer's CliRunner on the app that
`python -m ragshield` starts, with the database given as RAGSHIELD_DATABASE_URL as a user
gives it); one real launch checks what only a process shows: its exit status and stderr."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragshield.cli import app
from ragshield.store.database import open_store
from ragshield.store.labels import add_annotator, add_label
from ragshield.store.runs import create_run
from ragshield.store.samples import DatasetSummary, list_datasets, load_sample
from tests.conftest import TEST_DATA

ROOT = Path(__file__).resolve().parents[1]
SQUAD_RAW = TEST_DATA / "raw" / "squad2_dev_part_a_squad_format.json"  # 180 questions


@dataclass
class Completed:
    """What a command left: its exit status and its two streams."""

    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def database_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'cli.db'}"


@pytest.fixture
def cli(database_url):
    def run(*args: str, url: str = database_url, input: str | None = None) -> Completed:
        result = CliRunner().invoke(app, ["datasets", *args], input=input,
                                    env={"RAGSHIELD_DATABASE_URL": url})
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception  # a bug, not a user's error: show its traceback
        return Completed(result.exit_code, result.stdout, result.stderr)

    return run


def datasets_in(url: str) -> list[DatasetSummary]:
    store = open_store(url)
    try:
        return list_datasets(store)
    finally:
        store.close()


def test_import_list_and_samples(cli):
    imported = cli("import", "squad", str(SQUAD_RAW), "--json")
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout) == {"dataset": "squad", "added": 180, "updated": 0,
                                           "unchanged": 0, "missing": 0, "samples": 180}
    listed = cli("list", "--json")  # also loads the bundled demo set into the new database
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == [
        {"name": "demo", "samples": 160, "answerable": 80, "unanswerable": 80, "unlabelled": 0},
        {"name": "squad", "samples": 180, "answerable": 90, "unanswerable": 90,
         "unlabelled": 0},
    ]
    rows = json.loads(cli("samples", "squad", "--limit", "3", "--json").stdout)
    assert len(rows) == 3 and all(set(r) == {"id", "question", "answerable", "passages"}
                                  for r in rows)
    assert rows[0] == {"id": "68cf05f67fd29c6f129fe2fb9", "answerable": True, "passages": 1,
                       "question": "In what country is Normandy located?"}


def test_csv_with_map_and_limit_then_a_table(cli, tmp_path):
    path = tmp_path / "qa.csv"
    path.write_text("q,gold,context\nWho?,Ada,Ada wrote it.\nWhat?,,\nWhen?,1843,In 1843.\n")
    result = cli("import", "mine", str(path), "--map", "question=q,answers=gold,passages=context",
                 "--limit", "2")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "mine: 2 samples added, 0 updated, 0 unchanged, 0 not in the file (kept); 2 in all")
    table = cli("samples", "mine").stdout.splitlines()
    assert [line.split() for line in table] == [
        ["id", "answerable", "passages", "question"],
        ["line-2", "-", "1", "Who?"],
        ["line-3", "-", "0", "What?"],
    ]


def test_an_unknown_dataset_is_one_readable_line_and_exit_1(cli):
    result = cli("samples", "nope")
    assert result.returncode == 1
    assert result.stderr.strip() == "error: no dataset named 'nope' (datasets: 'demo')"
    assert result.stdout == ""


def test_a_real_launch_exits_1_with_the_one_line(python_processes, database_url):
    """`python -m ragshield` as a user starts it: the exit status reaches the shell, and
    stderr holds the one line, no traceback."""
    result = subprocess.run(
        [python_processes, "-m", "ragshield", "datasets", "samples", "nope"], cwd=ROOT,
        env={**os.environ, "RAGSHIELD_DATABASE_URL": database_url},
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.strip() == "error: no dataset named 'nope' (datasets: 'demo')"
    assert result.stdout == ""


def test_a_bad_file_names_its_line_and_imports_nothing(cli, tmp_path, database_url):
    path = tmp_path / "bad.jsonl"
    good = {"id": "a", "question": "Who?", "passages": [], "answerable": None}
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "question": " "}) + "\n")
    result = cli("import", "bad", str(path))
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"error: {path}, line 2, field 'question': the question is empty")
    assert datasets_in(database_url) == []


def test_an_unreachable_database_is_a_readable_error(cli):
    result = cli("list", url="postgresql+psycopg://u:hunter2@127.0.0.1:1/x")
    assert result.returncode == 1 and "cannot open database" in result.stderr
    assert "hunter2" not in result.stderr and "Traceback" not in result.stderr


def write_jsonl(path: Path, samples: list[dict]) -> Path:
    path.write_text("".join(json.dumps(s) + "\n" for s in samples))
    return path


def unified(i: int, question: str | None = None) -> dict:
    return {"id": f"s{i}", "question": question or f"Question {i}?",
            "passages": [{"title": "T", "text": f"Passage {i}."}],
            "reference_answers": [f"a{i}"], "answerable": True}


def test_reimporting_a_changed_file_updates_adds_and_keeps(cli, tmp_path, database_url):
    first = cli("import", "mine", str(write_jsonl(tmp_path / "v1.jsonl",
                                                  [unified(i) for i in range(4)])))
    assert first.returncode == 0, first.stderr
    v2 = write_jsonl(tmp_path / "v2.jsonl",
                     [unified(0), unified(1, "Changed?"), unified(2), unified(4)])
    result = cli("import", "mine", str(v2), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"dataset": "mine", "added": 1, "updated": 1,
                                         "unchanged": 2, "missing": 1, "samples": 5}
    again = cli("import", "mine", str(v2))
    assert again.stdout.strip() == (
        "mine: 0 samples added, 0 updated, 4 unchanged, 1 not in the file (kept); 5 in all")
    store = open_store(database_url)
    try:
        assert load_sample(store, "mine", "s1").question == "Changed?"
        assert load_sample(store, "mine", "s3").question == "Question 3?"
    finally:
        store.close()


def use_dataset(url: str, name: str) -> int:
    """A run over dataset `name` and two labels by one annotator on its first sample."""
    store = open_store(url)
    try:
        run_id = create_run(store, dataset=name, config={}, seed=0, code_version="test",
                            samples_total=1)
        add_annotator(store, "ann")
        add_label(store, name, "s0", "ann", "answerable")
        add_label(store, name, "s0", "ann", "unsure")
        return run_id
    finally:
        store.close()


def test_delete_asks_first_and_refuses_a_dataset_in_use_unless_forced(cli, tmp_path,
                                                                      database_url):
    path = str(write_jsonl(tmp_path / "d.jsonl", [unified(i) for i in range(3)]))
    for name in ("mine", "used"):
        assert cli("import", name, path).returncode == 0
    declined = cli("delete", "mine", input="n\n")
    assert declined.returncode == 1
    assert "Delete dataset 'mine': 3 samples, 3 passages?" in declined.stderr
    assert [d.name for d in datasets_in(database_url)] == ["mine", "used"]
    accepted = cli("delete", "mine", input="y\n")
    assert accepted.returncode == 0, accepted.stderr
    echoed, said = accepted.stdout.splitlines()  # CliRunner echoes the typed answer first
    assert (echoed.strip(), said) == ("y", "deleted dataset 'mine': 3 samples, 3 passages")
    assert [d.name for d in datasets_in(database_url)] == ["used"]

    run_id = use_dataset(database_url, "used")
    refused = cli("delete", "used", "--yes")
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        f"error: dataset 'used' is used by run(s) {run_id} and 2 label(s) by 1 annotator(s); "
        "delete with --force to remove them too")
    assert [d.name for d in datasets_in(database_url)] == ["used"]
    forced = cli("delete", "used", "--yes", "--force", "--json")
    assert forced.returncode == 0, forced.stderr
    assert json.loads(forced.stdout) == {"dataset": "used", "samples": 3, "passages": 3,
                                         "runs": [run_id], "labels": 2, "annotators": 1}
    assert datasets_in(database_url) == []
    missing = cli("delete", "used", "--yes")
    assert missing.returncode == 1
    assert missing.stderr.strip() == "error: no dataset named 'used' (datasets: none yet)"
