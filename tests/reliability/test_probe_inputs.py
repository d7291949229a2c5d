"""Hostile inputs, round 2: what a black-box probe fed `python -m ragshield datasets import` and
`corpus ingest` - HTML and JSON nested thousands deep, 1e999 and NaN, CSV rows with line
breaks inside quotes, files that vanish mid-ingest, absurd dataset and corpus names. Each must
end as one `error:` line naming the file, line or field (exit 1), or be read correctly; never a
traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragshield.html_to_markdown import html_to_markdown
from ragshield.names import InvalidNameError
from ragshield.retrieval import documents
from ragshield.retrieval.documents import read_documents
from ragshield.retrieval.errors import UnreadableFile
from ragshield.services.data.datasets import import_file
from ragshield.store.database import open_store
from ragshield.store.samples import dataset_names, load_sample
from tests.cli_support import ROOT

SCENARIO = "Hostile inputs, round 2: deep nesting, non-finite numbers, names, vanishing files"
pytestmark = pytest.mark.scenario(SCENARIO)

DEEP = 5000  # beyond what Python's recursion limit lets recursive code reach


@pytest.fixture
def cli(python_processes, tmp_path):
    """`python -m ragshield ARGS` on a fresh SQLite file and corpora folder."""
    env = {**os.environ, "RAGSHIELD_DATABASE_URL": f"sqlite:///{tmp_path / 'probe.db'}",
           "RAGSHIELD_CORPORA_DIR": str(tmp_path / "corpora")}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "ragshield", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=300)

    return run


def one_error_line(scenario, what: str, result: subprocess.CompletedProcess,
                   *fragments: str) -> str:
    """Check that `result` failed with exit 1 and a single `error:` line holding every
    fragment, and no traceback; return that line."""
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    scenario.check(f"{what}: exit status 1", result.returncode == 1, result.stderr[-2000:])
    scenario.check(f"{what}: no traceback", "Traceback" not in result.stderr,
                   result.stderr[-2000:])
    scenario.check(f"{what}: one error line", len(errors) == 1, result.stderr[-2000:])
    scenario.check(f"{what}: the error names {', '.join(fragments)}",
                   all(fragment in errors[0] for fragment in fragments), errors[0])
    return errors[0]


def write_lines(path: Path, *records: object) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n"
                            for r in records), encoding="utf-8")
    return path


def nested(depth: int) -> str:
    return "[" * depth + '"x"' + "]" * depth


def crag_record(interaction_id: str, **fields: object) -> dict[str, object]:
    return {"interaction_id": interaction_id, "query": "Where is the text?", "answer": "deep",
            **fields}


# --- 1. deeply nested HTML -------------------------------------------------------------------


def test_deeply_nested_html_is_converted_with_its_text(cli, tmp_path, scenario):
    nests = {
        "closed <div>": "<div>" * 400 + "closed text" + "</div>" * 400,
        "unclosed <font>": "<p>start</p>" + "<font>" * DEEP + "unclosed text",
    }
    pages = [{"page_name": name, "page_url": f"https://example.org/{i}", "page_result": html}
             for i, (name, html) in enumerate(nests.items())]
    path = write_lines(tmp_path / "crag.jsonl", crag_record("deep", search_results=pages))
    imported = cli("datasets", "import", "crag-deep", str(path), "--format", "crag")
    scenario.check("CRAG import of pages nested 400 and 5,000 deep succeeds",
                   imported.returncode == 0 and "Traceback" not in imported.stderr,
                   imported.stderr[-2000:])
    store = open_store(f"sqlite:///{tmp_path / 'probe.db'}")
    try:
        texts = [p.text for p in load_sample(store, "crag-deep", "deep").passages]
    finally:
        store.close()
    scenario.check("the deepest text of each page is in its passage",
                   len(texts) == 2 and "closed text" in texts[0] and "unclosed text" in texts[1],
                   texts)

    html_file = tmp_path / "pages" / "deep.html"
    html_file.parent.mkdir()
    html_file.write_text(nests["unclosed <font>"], encoding="utf-8")
    read = read_documents([html_file.parent])
    scenario.check("corpus ingest reads a 5,000-deep .html page with its text",
                   [d.text.split()[-2:] for d in read.documents] == [["unclosed", "text"]],
                   [d.text[-80:] for d in read.documents])

    started = time.perf_counter()
    markdown = html_to_markdown("<div>" * 20_000 + "bottom" + "</div>" * 20_000)
    scenario.figure("seconds to convert HTML nested 20,000 deep",
                    round(time.perf_counter() - started, 2))
    scenario.check("HTML nested 20,000 deep converts", markdown == "bottom", markdown[:200])


# --- 2. deeply nested JSON -------------------------------------------------------------------


@pytest.mark.parametrize(("case", "fmt", "record", "fragments"), [
    ("CRAG alternative_answers, a string holding JSON nested 5,000 deep", "crag",
     crag_record("a", alternative_answers=nested(DEEP)),
     ["line 2", "'alternative_answers'"]),
    ("unified extra nested 150 deep (parses, but deeper than any record)", "unified",
     {"id": "a", "question": "Q?", "passages": [], "answerable": None,
      "extra": json.loads(nested(150))}, ["line 2", "'extra'", "nested deeper than 100"]),
    ("unified passages nested 5,000 deep", "unified", nested(DEEP).join(
        ['{"id": "a", "question": "Q?", "passages": ', "}"]), ["line 2", "nested deeper"]),
    ("generic JSONL field nested 5,000 deep", "jsonl",
     nested(DEEP).join(['{"question": "Q?", "answers": ', "}"]), ["line 2", "nested deeper"]),
])
def test_deeply_nested_json_is_one_error_line(cli, tmp_path, scenario, case, fmt, record,
                                              fragments):
    good = {"crag": crag_record("first"), "jsonl": {"question": "First?"},
            "unified": {"id": "first", "question": "First?", "passages": [],
                        "answerable": None}}[fmt]
    path = write_lines(tmp_path / "deep.jsonl", good, record)
    result = cli("datasets", "import", "deep", str(path), "--format", fmt)
    one_error_line(scenario, case, result, str(path), *fragments)


def test_deeply_nested_json_in_a_corpus_is_one_error_line(cli, tmp_path, scenario):
    path = write_lines(tmp_path / "docs.jsonl", {"text": "fine"},
                       nested(DEEP).join(['{"text": "deep", "meta": ', "}"]))
    result = cli("corpus", "ingest", "kb", str(path))
    one_error_line(scenario, "corpus .jsonl nested 5,000 deep", result, f"{path}:2",
                   "nested deeper than 100")


# --- 3. files that vanish or cannot be read mid-ingest ---------------------------------------


def test_a_file_deleted_during_ingest_is_an_error_naming_it(tmp_path, monkeypatch, scenario):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.html").write_text("<p>first</p>")
    doomed = folder / "b.txt"
    doomed.write_text("second")
    convert = documents.html_to_markdown

    def convert_then_delete(html: str) -> str:  # a.html is read first: b.txt goes meanwhile
        doomed.unlink()
        return convert(html)

    monkeypatch.setattr(documents, "html_to_markdown", convert_then_delete)
    with pytest.raises(UnreadableFile) as raised:
        read_documents([folder])
    scenario.check("a file deleted after the folder was listed is an error naming it",
                   str(raised.value) == f"{doomed}: cannot read (No such file or directory)",
                   raised.value)


def test_vanished_links_and_pipes_in_a_corpus_folder(cli, tmp_path, scenario):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("kept")
    (folder / "gone.md").symlink_to(tmp_path / "deleted.md")  # listed, then not there
    result = cli("corpus", "ingest", "kb", str(folder))
    one_error_line(scenario, "a listed file that is gone", result, str(folder / "gone.md"),
                   "No such file or directory")
    (folder / "gone.md").unlink()
    os.mkfifo(folder / "pipe.txt")  # reading it would wait for a writer forever
    result = cli("corpus", "ingest", "kb", str(folder))
    one_error_line(scenario, "a named pipe", result, str(folder / "pipe.txt"),
                   "not a regular file")
    scenario.check("no corpus was written", not (tmp_path / "corpora" / "kb").exists())


# --- 4. non-finite numbers -------------------------------------------------------------------


@pytest.mark.parametrize(("case", "args", "name", "content", "fragments"), [
    ("unified extra 1e999", ["--format", "unified"], "d.jsonl",
     '{"id": "a", "question": "Q?", "passages": [], "extra": {"score": 1e999}}',
     ["line 1", "'extra.score'", "1e999 is not a finite number"]),
    ("CRAG -Infinity", ["--format", "crag"], "d.jsonl",
     '{"interaction_id": "a", "query": "Q?", "query_time": -Infinity}',
     ["line 1", "'query_time'", "-Infinity is not a finite number"]),
    ("NQ-open NaN", ["--format", "nq_open"], "d.jsonl",
     '{"question": "Q?", "answer": ["a", NaN]}', ["line 1", "'answer[1]'", "NaN"]),
    ("CSV answers cell [\"a\", 1e999]", ["--map", "question=q,answers=ans"], "d.csv",
     'q,ans\nQ?,"[""a"", 1e999]"', ["line 2", "'ans[1]'", "1e999 is not a finite number"]),
    ("SQuAD document -1e400", ["--format", "squad2"], "d.json",
     '{"data": [{"paragraphs": [{"context": "c", "qas": [{"id": "q", "question": "Q?", '
     '"answers": [{"text": "a", "answer_start": -1e400}]}]}]}]}',
     ["'data[0].paragraphs[0].qas[0].answers[0].answer_start'", "-1e400"]),
])
def test_non_finite_numbers_are_refused_with_their_field(cli, tmp_path, scenario, case, args,
                                                         name, content, fragments):
    path = tmp_path / name
    path.write_text(content + "\n", encoding="utf-8")
    result = cli("datasets", "import", "numbers", str(path), *args)
    one_error_line(scenario, case, result, str(path), *fragments)


def test_non_finite_numbers_in_a_corpus_are_refused(cli, tmp_path, scenario):
    path = write_lines(tmp_path / "docs.jsonl", '{"text": "x", "score": 1e999}')
    result = cli("corpus", "ingest", "kb", str(path))
    one_error_line(scenario, "corpus .jsonl 1e999", result, f"{path}:1", "'score'",
                   "1e999 is not a finite number")


# --- 5. CSV line numbers ---------------------------------------------------------------------


def test_csv_errors_name_the_line_where_the_bad_row_starts(cli, tmp_path, scenario):
    """A quoted cell with line breaks makes rows and lines differ; the text decoder reads
    ahead of the CSV reader: neither may shift the line reported."""
    head = ['q,a', '"a question\nover three\nlines?",x']  # lines 1-4
    rows = [f"Q{n}?,a" for n in range(5, 15_000)]  # lines 5-14999
    bad_bytes = tmp_path / "bytes.csv"
    bad_bytes.write_bytes("\n".join(head + rows).encode() + b"\ncaf\xe9?,x\n")  # line 15000
    result = cli("datasets", "import", "lines", str(bad_bytes), "--map", "question=q")
    one_error_line(scenario, "bad UTF-8 at line 15,000", result, str(bad_bytes), "line 15000:",
                   "not valid UTF-8")
    bad_row = tmp_path / "row.csv"
    bad_row.write_text("\n".join(head + rows[:45] + ['"a bad row\nstarting at line 50",x,y'])
                       + "\n")
    result = cli("datasets", "import", "lines", str(bad_row), "--map", "question=q")
    one_error_line(scenario, "a three-cell row starting at line 50", result, str(bad_row),
                   "line 50:", "header's 2 cells")


# --- 6. dataset and corpus names -------------------------------------------------------------


@pytest.mark.parametrize(("case", "name", "reason"), [
    ("an empty name", "", "must not be empty"),
    ("a blank name", "  \t ", "must not be empty"),
    ("a 10,000-character name", "n" * 10_000, "at most 200 characters"),
    ("a bell and a terminal escape", "a\x07b\x1b[2J", "control characters"),
])
def test_bad_dataset_names_are_refused(cli, tmp_path, scenario, case, name, reason):
    path = write_lines(tmp_path / "d.jsonl", {"question": "Q?", "answer": ["a"]})
    result = cli("datasets", "import", name, str(path), "--format", "nq_open")
    line = one_error_line(scenario, f"dataset: {case}", result, "'dataset name'", reason)
    scenario.check(f"dataset: {case}: the message is short and plain",
                   len(line) < 200 and "\x1b" not in line and "\x07" not in line, line)


def test_dataset_names_are_checked_before_the_store(store, tmp_path, scenario):
    path = write_lines(tmp_path / "d.jsonl", {"question": "Q?", "answer": ["a"]})
    for name in ("", "x" * 201, "line\nbreak", "\ud800", "right\u202eleft"):
        with pytest.raises(InvalidNameError):
            import_file(store, name, path, format="nq_open")
    result = import_file(store, "  padded  ", path, format="nq_open")
    scenario.check(f"{store.engine.dialect.name}: bad names are refused before the store, "
                   "good ones stored stripped",
                   result.dataset == "padded" and dataset_names(store) == ["padded"],
                   dataset_names(store))


def test_bad_corpus_names_are_refused_and_not_echoed_raw(cli, tmp_path, scenario):
    path = write_lines(tmp_path / "docs.jsonl", {"text": "x"})
    for case, name in (("empty", ""), ("10,000 characters", "c" * 10_000),
                       ("a terminal escape", "kb\x1b[2J")):
        result = cli("corpus", "ingest", name, str(path))
        line = one_error_line(scenario, f"corpus name: {case}", result, "invalid corpus name")
        scenario.check(f"corpus name: {case}: the message is short and plain",
                       len(line) < 300 and "\x1b" not in line, line)
