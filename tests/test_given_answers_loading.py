"""Given answers in dataset files (issue 15): the unified JSONL fields and the generic CSV and
JSONL mapping keys read, every bad field named by file, line and field, nothing stored from a
bad file, and the round trip through the store on SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import json
from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import text

from ragshield.datasets import DatasetError, DatasetFormatError, load_dataset, parse_mapping
from ragshield.datasets.formats.unified import to_record
from ragshield.services.data.datasets import import_file
from ragshield.store.database import alembic_config, create_store_engine, open_store
from ragshield.store.sample_import import import_samples
from ragshield.store.samples import has_dataset, iter_samples, load_sample
from ragshield.types import GivenAnswer, Passage, Sample, TokenLogprob

QUESTION = {"id": "a", "question": "What is the capital of France?",
            "passages": [{"title": "Paris", "text": "Paris is the capital of France."},
                         {"text": "Lyon is a city in France."}],
            "reference_answers": ["Paris"], "answerable": True}
ANSWERED = {**QUESTION, "id": "b", "answer": "Paris", "answer_model": "acme-rag-7b",
            "answer_logprobs": [{"token": "Par", "logprob": -0.1, "bytes": [80]},
                                {"token": "is", "logprob": -0.3}],
            "cited_passages": [0]}


def write_lines(path: Path, *records: dict) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def write_csv(path: Path, rows: list[list[str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)
    return path


def load_error(path: Path, format: str = "unified", **options) -> DatasetFormatError:
    with pytest.raises(DatasetFormatError) as caught:
        list(load_dataset(path, format, **options))
    return caught.value


# -- unified JSONL -------------------------------------------------------------------------

def test_unified_rows_carry_given_answers_in_every_accepted_shape(tmp_path):
    pairs = {**ANSWERED, "id": "c", "answer_logprobs": [["Par", -0.1], ["is", 0]],
             "answer_model": None, "cited_passages": 1}
    openai = {**ANSWERED, "id": "d", "cited_passages": [],
              "answer_logprobs": {"content": [{"token": "Lyon", "logprob": -2,
                                               "top_logprobs": []}]}}
    scored = {**QUESTION, "id": "e", "answer": "", "answer_logprobs": [],
              "passages": [{"text": "Paris.", "score": 0.75}, {"text": "Lyon.", "score": 3}]}
    plain, answered, paired, from_openai, empty = load_dataset(
        write_lines(tmp_path / "d.jsonl", QUESTION, ANSWERED, pairs, openai, scored))
    assert plain.given_answer is None and plain.passages[0].score is None
    assert answered.given_answer == GivenAnswer(
        "Paris", "acme-rag-7b", [TokenLogprob("Par", -0.1), TokenLogprob("is", -0.3)], [0])
    assert paired.given_answer == GivenAnswer(
        "Paris", None, [TokenLogprob("Par", -0.1), TokenLogprob("is", 0.0)], [1])
    assert from_openai.given_answer == GivenAnswer("Paris", "acme-rag-7b",
                                                   [TokenLogprob("Lyon", -2.0)], [])
    assert empty.given_answer == GivenAnswer("")  # an empty reply; no log-probs
    assert [p.score for p in empty.passages] == [0.75, 3.0]
    assert "answer" not in answered.meta


def test_unified_records_written_back_load_the_same(tmp_path):
    originals = list(load_dataset(write_lines(tmp_path / "d.jsonl", QUESTION, ANSWERED, {
        **QUESTION, "id": "c", "passages": [{"text": "Paris.", "score": -1.5}]})))
    copy = write_lines(tmp_path / "copy.jsonl", *(to_record(s) for s in originals))
    assert list(load_dataset(copy)) == originals


@pytest.mark.parametrize(("change", "field", "reason"), [
    ({"answer": 3}, "answer", "expected a string, found a number"),
    ({"answer": None}, "answer_model", "set, but the row has no answer in 'answer'"),
    ({"answer_model": 5}, "answer_model", "expected a string, found a number"),
    ({"answer_model": "m" * 301}, "answer_model", "longer than 300 characters"),
    ({"answer": "Par\x00is"}, "answer", "NUL character"),
    ({"answer_logprobs": "Par -0.1"}, "answer_logprobs", "expected a list, found a string"),
    ({"answer_logprobs": [["Par", -0.1], ["is"]]}, "answer_logprobs[1]",
     "expected a [token, logprob] pair, found 1 items"),
    ({"answer_logprobs": [["Par", "low"]]}, "answer_logprobs[0][1]",
     "expected a number, found a string"),
    ({"answer_logprobs": [[7, -0.1]]}, "answer_logprobs[0][0]",
     "expected a string, found a number"),
    ({"answer_logprobs": [{"token": "Par", "logprob": 0.5}]}, "answer_logprobs[0].logprob",
     "a log-probability is at most 0, found 0.5"),
    ({"answer_logprobs": [{"token": "Par"}]}, "answer_logprobs[0].logprob", "missing"),
    ({"answer_logprobs": [{"token": "Par", "logprob": True}]}, "answer_logprobs[0].logprob",
     "expected a number, found a boolean"),
    ({"answer_logprobs": [0.5]}, "answer_logprobs[0]", "expected an object, found a number"),
    ({"answer_logprobs": {"content": "Par"}}, "answer_logprobs.content",
     "expected a list, found a string"),
    ({"answer_logprobs": {"tokens": ["Par"]}}, "answer_logprobs.content", "missing"),
    ({"answer_logprobs": [{"token": "\ud800", "logprob": -1}]}, "answer_logprobs[0].token",
     "lone surrogate"),
    ({"cited_passages": [0, 2]}, "cited_passages[1]",
     "passage index 2 is out of range: the row has 2 passage(s), counted from 0"),
    ({"cited_passages": -1}, "cited_passages", "passage index -1 is out of range"),
    ({"cited_passages": ["Passage-0"]}, "cited_passages[0]",
     "expected a passage index (an integer), found a string"),
    ({"cited_passages": [True]}, "cited_passages[0]", "found a boolean"),
    ({"passages": [{"text": "Paris.", "score": "high"}]}, "passages[0].score",
     "expected a number, found a string"),
    ({"passages": [{"text": "Paris.", "score": 10 ** 400}]}, "passages[0].score",
     "expected a finite number"),
])
def test_a_bad_given_answer_field_is_named_with_its_file_and_line(tmp_path, change, field,
                                                                  reason):
    path = write_lines(tmp_path / "d.jsonl", QUESTION, {**ANSWERED, **change})
    error = load_error(path)
    assert (error.path, error.where, error.field) == (path, "line 2", field)
    assert reason in error.reason
    assert str(error).startswith(f"{path}, line 2, field {field!r}: ")


# -- generic CSV and JSONL with a column mapping -------------------------------------------

CSV_MAPPING = ("question=q,answers=gold,passages=ctx,answer=response,answer_model=model,"
               "answer_logprobs=lp,cited_passages=cites,passage_scores=scores")
HEADER = ["q", "gold", "ctx", "response", "model", "lp", "cites", "scores", "topic"]


def test_csv_reads_the_mapped_given_answer_columns(tmp_path):
    path = write_csv(tmp_path / "d.csv", [
        HEADER,
        ["Capital of France?", "Paris", '["Paris is the capital.", "Lyon is a city."]',
         "Paris", "acme", '[["Par", -0.1], ["is", -0.2]]', "[0]", "[0.9, null]", "geo"],
        ["Capital of Italy?", "Rome", "Rome is the capital.", "Rome", "", "", "0", "", ""],
        ["Capital of Spain?", "Madrid", "", "", "", "", "", "", "geo"],
    ])
    first, second, third = load_dataset(path, "csv", mapping=parse_mapping(CSV_MAPPING))
    assert first.given_answer == GivenAnswer(
        "Paris", "acme", [TokenLogprob("Par", -0.1), TokenLogprob("is", -0.2)], [0])
    assert [p.score for p in first.passages] == [0.9, None]
    assert first.meta == {"topic": "geo"}  # the mapped columns are not meta
    assert second.given_answer == GivenAnswer("Rome", cited=[0])
    assert third.given_answer is None  # an empty answer cell: no given answer


def test_an_unmapped_answer_column_stays_meta(tmp_path):
    path = write_csv(tmp_path / "d.csv", [["q", "answer"], ["Capital of France?", "Paris"]])
    (sample,) = load_dataset(path, "csv", mapping=parse_mapping("question=q"))
    assert sample.given_answer is None and sample.meta == {"answer": "Paris"}


@pytest.mark.parametrize(("cells", "field", "reason"), [
    ({"lp": "[[Par, -0.1]]"}, "lp", "invalid JSON"),
    ({"lp": '[{"token": "Par", "logprob": 1}]'}, "lp[0].logprob", "at most 0"),
    ({"cites": "[3]"}, "cites[0]", "passage index 3 is out of range: the row has 2"),
    ({"scores": "[0.9]"}, "scores", "expected one score per passage (2), found 1"),
    ({"scores": '[0.9, "high"]'}, "scores[1]", "expected a number, found a string"),
    ({"response": "", "model": "acme"}, "model", "set, but the row has no answer in 'response'"),
])
def test_csv_names_the_bad_given_answer_cell(tmp_path, cells, field, reason):
    good = dict(zip(HEADER, ["Capital of France?", "Paris", '["Paris.", "Lyon."]', "Paris",
                             "acme", "[]", "[1]", "[0.5, 0.25]", ""]))
    path = write_csv(tmp_path / "d.csv", [HEADER, list(good.values()),
                                          list({**good, **cells}.values())])
    error = load_error(path, "csv", mapping=parse_mapping(CSV_MAPPING))
    assert (error.where, error.field) == ("line 3", field)
    assert reason in error.reason and str(path) in str(error)


def test_jsonl_reads_mapped_given_answers(tmp_path):
    path = write_lines(tmp_path / "d.jsonl", {
        "prompt": "Capital of France?", "passages": [{"text": "Paris.", "score": 1.5}],
        "reply": "Paris", "logprobs": {"content": [{"token": "Paris", "logprob": -0.05}]},
        "evidence": [0]})
    (sample,) = load_dataset(path, "jsonl", mapping=parse_mapping(
        "question=prompt,answer=reply,answer_logprobs=logprobs,cited_passages=evidence"))
    assert sample.given_answer == GivenAnswer("Paris", None, [TokenLogprob("Paris", -0.05)], [0])
    assert sample.passages[0].score == 1.5 and sample.meta == {}


def write_parquet(path: Path, rows: list[dict]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


PARQUET_MAPPING = ("question=q,passages=ctx,answer=reply,answer_model=model,"
                   "answer_logprobs=lp,cited_passages=cites")


def test_parquet_reads_given_answers_from_structs_lists_and_json_text(tmp_path):
    path = write_parquet(tmp_path / "d.parquet", [
        {"q": "Capital of France?", "ctx": [{"text": "Paris.", "title": "P", "score": 0.5}],
         "reply": "Paris", "model": "acme", "lp": [{"token": "Paris", "logprob": -0.2}],
         "cites": [0], "asked": date(2024, 5, 1), "weight": float("nan")},
        {"q": "Capital of Italy?", "ctx": [{"text": "Rome.", "title": None, "score": None}],
         "reply": None, "model": None, "lp": None, "cites": None,
         "asked": date(2024, 5, 2), "weight": 2.0},
    ])
    first, second = load_dataset(path, mapping=parse_mapping(PARQUET_MAPPING))
    assert first.given_answer == GivenAnswer("Paris", "acme", [TokenLogprob("Paris", -0.2)], [0])
    assert (first.passages[0].title, first.passages[0].score) == ("P", 0.5)
    assert first.meta == {"asked": "2024-05-01"}  # NaN is none
    assert second.given_answer is None and second.meta == {"asked": "2024-05-02", "weight": 2.0}
    text = write_parquet(tmp_path / "text.parquet", [
        {"q": "Capital of France?", "ctx": '["Paris.", "Lyon."]', "reply": "Paris",
         "model": "", "lp": '[["Par", -0.1]]', "cites": "1"}])
    (sample,) = load_dataset(text, "parquet", mapping=parse_mapping(PARQUET_MAPPING))
    assert sample.given_answer == GivenAnswer("Paris", None, [TokenLogprob("Par", -0.1)], [1])


def test_parquet_names_the_row_and_field_at_fault(tmp_path):
    good = {"q": "Capital of France?", "ctx": [{"text": "Paris."}], "reply": "Paris",
            "model": "acme", "lp": [{"token": "Paris", "logprob": -0.2}], "cites": [0]}
    path = write_parquet(tmp_path / "d.parquet", [good, {**good, "cites": [4]}])
    error = load_error(path, "parquet", mapping=parse_mapping(PARQUET_MAPPING))
    assert (error.where, error.field) == ("row 2", "cites[0]")
    assert "passage index 4 is out of range" in error.reason
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(path.read_bytes()[:-40])
    assert "Parquet" in load_error(broken, "parquet", mapping=parse_mapping("question=q")).reason


def test_mappings_name_the_given_answer_fields():
    assert parse_mapping("question=q,answer=r,answer_model=m")["answer_model"] == "m"
    with pytest.raises(DatasetError, match="names answer_logprobs but no answer column"):
        parse_mapping("question=q,answer_logprobs=lp")
    with pytest.raises(DatasetError, match="the fields are .*answer, answer_model, "
                                           "answer_logprobs, cited_passages, passage_scores"):
        parse_mapping("response=r")


# -- the store ---------------------------------------------------------------------------

def _samples() -> list[Sample]:
    return [
        Sample(id="q1", question="Capital of France?",
               passages=[Passage("Paris is the capital.", title="Paris", score=0.9),
                         Passage("Lyon is a city.", score=-2.0)],
               reference_answers=["Paris"], answerable=True,
               given_answer=GivenAnswer("Paris", "acme", [TokenLogprob("Paris", -0.25)], [0])),
        Sample(id="q2", question="Capital of Italy?", passages=[Passage("Rome.")],
               given_answer=GivenAnswer("Rome")),
        Sample(id="q3", question="Capital of Spain?", passages=[Passage("Madrid.")]),
    ]


def test_given_answers_and_passage_scores_survive_the_store(store):
    samples = _samples()
    assert import_samples(store, "given", samples).added == 3
    assert list(iter_samples(store, "given")) == samples
    assert load_sample(store, "given", "q1") == samples[0]
    again = import_samples(store, "given", samples)
    assert (again.added, again.updated, again.unchanged) == (0, 0, 3)
    changed = [samples[0], replace(samples[1], given_answer=None),
               replace(samples[2], given_answer=GivenAnswer("Madrid", cited=[]))]
    result = import_samples(store, "given", changed)
    assert (result.updated, result.unchanged) == (2, 1)
    assert list(iter_samples(store, "given")) == changed


def test_a_bad_row_stores_nothing(store, tmp_path):
    bad = write_lines(tmp_path / "bad.jsonl", ANSWERED,
                      {**ANSWERED, "id": "c", "cited_passages": [9]})
    with pytest.raises(DatasetFormatError, match="line 2, field 'cited_passages\\[0\\]'"):
        import_file(store, "bad", bad)
    assert not has_dataset(store, "bad")
    import_file(store, "kept", write_lines(tmp_path / "good.jsonl", QUESTION))
    with pytest.raises(DatasetFormatError):
        import_file(store, "kept", bad)
    assert load_sample(store, "kept", "a").given_answer is None
    assert [s.id for s in iter_samples(store, "kept")] == ["a"]


def test_a_dataset_stored_before_given_answers_imports_unchanged(store_url, tmp_path):
    """A sample written before revision 0007 reads back without a given answer, and the
    file it came from imported again changes nothing."""
    engine = create_store_engine(store_url)
    with engine.begin() as connection:
        command.upgrade(alembic_config(connection), "0006")
        connection.execute(text(
            "INSERT INTO datasets (id, name, created_at) VALUES (1, 'old', '2024-01-01')"))
        connection.execute(text(
            "INSERT INTO samples (id, dataset_id, external_id, question, reference_answers, "
            "answerable, meta) VALUES (1, 1, 'a', :question, '[\"Paris\"]', TRUE, '{}')"),
            {"question": QUESTION["question"]})
        connection.execute(text(
            "INSERT INTO passages (sample_id, position, title, text, meta) "
            "VALUES (1, :position, :title, :text, '{}')"),
            [{"position": i, "title": p.get("title"), "text": p["text"]}
             for i, p in enumerate(QUESTION["passages"])])
    engine.dispose()
    store = open_store(store_url)
    try:
        assert load_sample(store, "old", "a").given_answer is None
        result = import_file(store, "old", write_lines(tmp_path / "d.jsonl", QUESTION))
        assert (result.updated, result.unchanged) == (0, 1)
    finally:
        store.close()
