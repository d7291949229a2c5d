"""`python -m ragshield datasets ...` as a user runs it, on a fresh SQLite file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragshield.store.database import open_store
from ragshield.store.samples import DatasetSummary, list_datasets
from tests.conftest import SHARED_DATA

ROOT = Path(__file__).resolve().parents[1]
SQUAD_RAW = SHARED_DATA / "raw" / "squad2_dev_part_a_squad_format.json"


@pytest.fixture
def database_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'cli.db'}"


@pytest.fixture
def cli(database_url):
    def run(*args: str, url: str = database_url) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "ragshield", "datasets", *args], cwd=ROOT,
            env={**os.environ, "RAGSHIELD_DATABASE_URL": url},
            capture_output=True, text=True, timeout=120,
        )

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
    assert json.loads(imported.stdout) == {"dataset": "squad", "added": 2805, "skipped": 0,
                                           "samples": 2805}
    listed = cli("list", "--json")  # also loads the bundled demo set into the new database
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == [
        {"name": "demo", "samples": 160, "answerable": 80, "unanswerable": 80, "unlabelled": 0},
        {"name": "squad", "samples": 2805, "answerable": 1278, "unanswerable": 1527,
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
    assert result.stdout.strip() == "mine: 2 samples added, 0 already there; 2 in all"
    table = cli("samples", "mine").stdout.splitlines()
    assert [line.split() for line in table] == [
        ["id", "answerable", "passages", "question"],
        ["line-2", "-", "1", "Who?"],
        ["line-3", "-", "0", "What?"],
    ]


def test_an_unknown_dataset_is_one_readable_line_and_exit_1(cli):
    result = cli("samples", "nope")
    assert result.returncode == 1
    assert result.stderr.strip() == "error: no dataset named 'nope' (datasets: demo)"


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
