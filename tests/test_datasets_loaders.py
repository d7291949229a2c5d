"""Every dataset loader on real rows (the small subsets of the public files in tests/data, in
their original formats; see tests/data/README.md), plus format detection."""

from __future__ import annotations

import bz2
import csv
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from ragshield.datasets import (
    DatasetError,
    UnknownFormatError,
    detect_format,
    load_dataset,
    parse_mapping,
)
from ragshield.datasets.formats.unified import to_record
from tests.conftest import TEST_DATA

RAW = TEST_DATA / "raw"


def counts(samples) -> tuple[int, int, int, int]:
    by_label = Counter(s.answerable for s in samples)
    return len(samples), by_label[True], by_label[False], by_label[None]


@pytest.mark.parametrize(
    ("path", "format", "expected"),
    [
        (TEST_DATA / "squad2_dev_part_a.jsonl", "unified", (180, 90, 90, 0)),
        (TEST_DATA / "clapnq_dev.jsonl", "unified", (95, 55, 40, 0)),
        (TEST_DATA / "halueval_qa500.jsonl", "unified", (10, 10, 0, 0)),
        (TEST_DATA / "nq_open_oracle.jsonl", "unified", (10, 10, 0, 0)),
        (RAW / "squad2_dev_part_a_squad_format.json", "squad2", (180, 90, 90, 0)),
        (RAW / "clapnq_dev_answerable.jsonl", "clapnq", (55, 55, 0, 0)),
        (RAW / "clapnq_dev_unanswerable.jsonl", "clapnq", (40, 0, 40, 0)),
        (RAW / "NQ-open.dev.jsonl", "nq_open", (20, 0, 0, 20)),
        (RAW / "halueval_qa_one-turn_data.json", "halueval", (10, 10, 0, 0)),
        (RAW / "hotpot_dev_distractor_first53.json", "hotpotqa", (6, 6, 0, 0)),
    ],
    ids=lambda value: value.name if isinstance(value, Path) else None,
)
def test_real_file_is_detected_and_loads_with_its_counts(path, format, expected):
    assert detect_format(path) == format
    samples = list(load_dataset(path))
    assert counts(samples) == expected
    assert len({s.id for s in samples}) == len(samples)
    assert all(s.question.strip() for s in samples)


def test_raw_squad2_agrees_with_the_unified_conversion():
    raw = {s.id: s for s in load_dataset(RAW / "squad2_dev_part_a_squad_format.json", "squad2")}
    unified = {s.id.removeprefix("squad2:"): s for s in load_dataset(
        TEST_DATA / "squad2_dev_part_a.jsonl", "unified")}
    assert raw.keys() == unified.keys()
    for key, sample in raw.items():
        other = unified[key]
        assert (sample.question, sample.answerable) == (other.question, other.answerable)
        assert sorted(sample.reference_answers) == sorted(other.reference_answers)
        assert [p.text for p in sample.passages] == [p.text for p in other.passages]
        assert sorted(sample.meta.get("plausible_answers", [])) == sorted(
            other.meta["plausible_answers"])


def test_squad2_unanswerable_questions_keep_their_plausible_answers():
    samples = list(load_dataset(RAW / "squad2_dev_part_a_squad_format.json"))
    unanswerable = [s for s in samples if s.answerable is False]
    assert all(not s.reference_answers and s.meta["plausible_answers"] for s in unanswerable)
    answerable = [s for s in samples if s.answerable]
    assert all(s.reference_answers and len(s.passages) == 1 for s in answerable)
    assert answerable[0].passages[0].title == "Normans"


def test_raw_clapnq_agrees_with_the_unified_conversion():
    unified = {s.id.removeprefix("clapnq:"): s
               for s in load_dataset(TEST_DATA / "clapnq_dev.jsonl")}
    raw = [s for name in ("clapnq_dev_answerable.jsonl", "clapnq_dev_unanswerable.jsonl")
           for s in load_dataset(RAW / name)]
    assert {s.id for s in raw} == unified.keys()
    for sample in raw:
        other = unified[sample.id]
        assert sample.answerable == other.answerable
        # the unified file keeps the annotators' "no answer" marks and repeats
        assert sample.reference_answers == list(dict.fromkeys(
            a for a in other.reference_answers if a not in {"NA", ".", ""}))
        assert [(p.title, p.text) for p in sample.passages] == [
            (p.title, p.text) for p in other.passages]
    assert not any(s.reference_answers for s in raw if not s.answerable)


def test_nq_open_has_questions_and_answers_but_no_passages():
    samples = list(load_dataset(RAW / "NQ-open.dev.jsonl"))
    first = samples[0]
    assert first.question == "when was the last time anyone was on the moon"
    assert first.reference_answers == ["14 December 1972 UTC", "December 1972"]
    assert all(not s.passages and s.reference_answers for s in samples)
    assert [s.id for s in samples[:3]] == ["0", "1", "2"]


def test_halueval_keeps_knowledge_as_passage_and_the_hallucinated_answer():
    first = next(load_dataset(RAW / "halueval_qa_one-turn_data.json"))
    assert first.reference_answers == ["Arthur's Magazine"]
    assert first.passages[0].text.startswith("Arthur's Magazine (1844–1846)")
    assert first.meta["hallucinated_answer"] == "First for Women was started first."


def test_hotpotqa_marks_supporting_paragraphs_and_keeps_the_facts():
    samples = list(load_dataset(RAW / "hotpot_dev_distractor_first53.json"))
    assert Counter(len(s.passages) for s in samples) == {10: 5, 2: 1}
    for sample in samples:
        titles = {title for title, _ in sample.meta["supporting_facts"]}
        assert {p.title for p in sample.passages if p.meta["supporting"]} == titles
        assert sample.meta["type"] in {"comparison", "bridge"} and sample.meta["level"]
    first = samples[0]
    assert first.id == "5a8b57f25542995d1e6f1371" and first.reference_answers == ["yes"]
    assert first.passages[0].text.startswith("Ed Wood is a 1994 American")
    assert " He " not in first.passages[0].text[:5]  # sentences joined with their own spaces


CRAG = RAW / "crag_example_dev_data.jsonl.bz2"  # 2 of the 10 records (tests/data/README.md)
PREMISE = "ecc1e84c-b979-4479-8275-eaa62020643f"  # sports, a false premise
SNIPPETS = "d535abd8-1361-4ad8-a82e-006ccdfc0cfb"  # movie, three pages without text


@pytest.fixture(scope="module")
def crag_samples():
    return list(load_dataset(CRAG))


def test_crag_pages_become_markdown_passages(crag_samples):
    assert detect_format(CRAG) == "crag"
    assert [s.id for s in crag_samples] == [PREMISE, SNIPPETS]
    passages = [p for s in crag_samples for p in s.passages]
    assert len(passages) == 10  # pages without text fall back to their snippets
    assert all(p.text.strip() and p.doc_id.startswith("http") and p.title for p in passages)
    assert not any(re.search(r"<(div|script|html|span)\b", p.text) for p in passages)
    assert any(re.search(r"^#{1,6} ", p.text, re.MULTILINE) for p in passages)  # headings
    by_id = {s.id: s for s in crag_samples}
    assert [p.meta["from_snippet"] for p in by_id[SNIPPETS].passages] == [
        False, True, True, False, True]
    assert not any(p.meta["from_snippet"] for p in by_id[PREMISE].passages)
    assert all(s.passages == sorted(s.passages, key=lambda p: p.meta["page_index"])
               for s in crag_samples)


def test_crag_keeps_its_metadata_and_scores_false_premise_as_invalid(crag_samples):
    for sample in crag_samples:
        assert {"domain", "question_type", "static_or_dynamic", "query_time"} <= sample.meta.keys()
        assert sample.answerable is None
    by_id = {s.id: s for s in crag_samples}
    premise = by_id[PREMISE]
    assert premise.meta["question_type"] == "false_premise"
    assert premise.reference_answers == ["invalid question"]
    assert premise.meta["original_answer"].startswith("rory mcilroy has never won")
    other = by_id[SNIPPETS]
    assert other.meta["question_type"] == "multi-hop" and "original_answer" not in other.meta
    assert other.reference_answers[0].startswith("carol forman was the first actor")
    assert Counter(s.meta["domain"] for s in crag_samples) == {"sports": 1, "movie": 1}


def test_crag_answers_nan_means_no_reference_and_short_answers_stay(tmp_path):
    """CRAG's export writes "nan" for an answer it does not have; a short real answer such
    as a language code stays. Shown on copies of a real record with those answers."""
    with bz2.open(CRAG, "rt", encoding="utf-8") as handle:
        record = json.loads(handle.readline())
    record["question_type"] = "simple"
    copies = [{**record, "interaction_id": "nan", "answer": "nan", "alternative_answers": []},
              {**record, "interaction_id": "en", "answer": "en", "alternative_answers": "[]"}]
    path = tmp_path / "crag.jsonl.bz2"
    path.write_bytes(bz2.compress("".join(json.dumps(c) + "\n" for c in copies).encode()))
    missing, short = load_dataset(path)
    assert (missing.reference_answers, short.reference_answers) == ([], ["en"])


def write_lines(path: Path, records: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


NOMIRACL = [
    {"query_id": "q1", "query": "Where is the Eiffel Tower?",
     "positive_passages": [{"docid": "d1", "title": "Eiffel Tower", "text": "It is in Paris."}],
     "negative_passages": [{"docid": f"n{i}", "title": "Other", "text": f"Filler {i}."}
                           for i in range(5)]},
    {"query_id": "q2", "query": "Who wrote Faust?", "positive_passages": [],
     "negative_passages": [{"docid": "n9", "title": "Goethe House", "text": "A museum."}]},
]


def test_nomiracl_answerable_means_some_passage_is_relevant(tmp_path):
    path = write_lines(tmp_path / "nomiracl.jsonl", NOMIRACL)
    assert detect_format(path) == "nomiracl"
    first, second = load_dataset(path)
    assert (first.answerable, second.answerable) == (True, False)
    assert [p.doc_id for p in first.passages if p.meta["relevant"]] == ["d1"]
    assert sorted(p.doc_id for p in first.passages) == ["d1", "n0", "n1", "n2", "n3", "n4"]
    assert [p.doc_id for p in next(load_dataset(path)).passages] == [
        p.doc_id for p in first.passages]  # same order on every load
    assert second.passages[0].title == "Goethe House" and not second.passages[0].meta["relevant"]


def test_csv_with_a_column_mapping(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text(
        "q,ans,ctx,label,topic\n"
        'Who wrote Faust?,Goethe,"Faust is a play by Goethe.",yes,literature\n'
        '"Capital of France, today?","[""Paris"", ""paris""]",'
        '"[{""title"": ""France"", ""text"": ""Paris is the capital.""}, ""Second text.""]",'
        "no,\n"
        "What is 2+2?,,,,maths\n",
        encoding="utf-8",
    )
    mapping = parse_mapping("question=q, answers=ans, passages=ctx, answerable=label")
    assert detect_format(path) == "csv"
    with pytest.raises(DatasetError, match=r"line 3, field 'ctx\[1\]': expected an object"):
        list(load_dataset(path, mapping=mapping))  # a list mixing objects and strings
    path.write_text(path.read_text().replace(', ""Second text.""]', "]"), encoding="utf-8")
    first, second, third = load_dataset(path, mapping=mapping)
    assert (first.id, first.question, first.reference_answers) == ("line-2", "Who wrote Faust?",
                                                                   ["Goethe"])
    assert [p.text for p in first.passages] == ["Faust is a play by Goethe."]
    assert first.answerable is True and first.meta == {"topic": "literature"}
    assert second.reference_answers == ["Paris", "paris"] and second.answerable is False
    assert (second.passages[0].title, second.passages[0].text) == (
        "France", "Paris is the capital.")
    assert (third.reference_answers, third.passages, third.answerable) == ([], [], None)


def test_csv_cells_that_are_not_json_lists_and_cells_over_csv_s_own_limit(tmp_path):
    """Text in brackets is text, not broken JSON; and a passage longer than the 131,072
    characters Python's csv takes by default is read whole, as JSON lines read it."""
    path = tmp_path / "mine.csv"
    long_passage = "Paris is the capital of France. " * 7_000
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([
            ["q", "ans", "ctx"],
            ["Capital of France?", "[citation needed]", "[Source: Wikipedia] Paris it is."],
            ["Again?", '["Paris"]', long_passage]])
    mapping = parse_mapping("question=q, answers=ans, passages=ctx")
    first, second = load_dataset(path, mapping=mapping)
    assert first.reference_answers == ["[citation needed]"]
    assert [p.text for p in first.passages] == ["[Source: Wikipedia] Paris it is."]
    assert second.reference_answers == ["Paris"]
    assert [p.text for p in second.passages] == [long_passage]


def test_jsonl_with_a_column_mapping_and_same_named_columns(tmp_path):
    path = write_lines(tmp_path / "mine.jsonl", [
        {"key": 7, "prompt": "Q one?", "answers": "A", "passages": ["p1", "p2"], "answerable": 1},
        {"key": "k2", "prompt": "Q two?", "gold": None},
    ])
    first, second = load_dataset(path, "jsonl", mapping=parse_mapping("id=key,question=prompt"))
    assert (first.id, first.reference_answers, first.answerable) == ("7", ["A"], True)
    assert [p.text for p in first.passages] == ["p1", "p2"]
    assert (second.id, second.passages, second.meta) == ("k2", [], {})
    assert detect_format(path, mapped=True) == "jsonl"


def test_a_json_array_of_objects_is_read_with_a_column_mapping(tmp_path):
    """The form many tools export: one pretty-printed array (here after a byte-order mark)."""
    path = tmp_path / "export.json"
    records = [{"prompt": "Q one?", "gold": ["A"]}, {"prompt": "Q two?", "gold": []}]
    path.write_bytes(b"\xef\xbb\xbf\n  " + json.dumps(records, indent=2).encode())
    mapping = parse_mapping("question=prompt, answers=gold")
    first, second = load_dataset(path, mapping=mapping)
    assert (first.id, first.question, first.reference_answers) == ("item-1", "Q one?", ["A"])
    assert (second.id, second.reference_answers) == ("item-2", [])
    path.write_text(json.dumps([records[0], "not an object"]))
    with pytest.raises(DatasetError, match=r"export\.json, item 2: expected an object"):
        list(load_dataset(path, mapping=mapping))


def test_limit_stops_early(tmp_path):
    samples = list(load_dataset(RAW / "NQ-open.dev.jsonl", limit=5))
    assert [s.id for s in samples] == ["0", "1", "2", "3", "4"]


def test_unified_round_trip(tmp_path):
    originals = list(load_dataset(TEST_DATA / "squad2_dev_part_a.jsonl", limit=20))
    path = write_lines(tmp_path / "copy.jsonl", [to_record(s) for s in originals])
    assert list(load_dataset(path)) == originals


def test_detection_reports_ambiguity_unknown_shapes_and_suffixes(tmp_path):
    both = {**NOMIRACL[0], "id": "x", "question": "q?", "passages": [], "answerable": None}
    with pytest.raises(UnknownFormatError, match="ambiguous.*unified and nomiracl"):
        detect_format(write_lines(tmp_path / "both.jsonl", [both]))
    with pytest.raises(UnknownFormatError, match=r"no known format.*keys \['prompt', 'x'\]"):
        detect_format(write_lines(tmp_path / "odd.jsonl", [{"prompt": "q", "x": 1}]))
    (tmp_path / "data.xlsx").write_bytes(b"PK")
    with pytest.raises(UnknownFormatError, match="suffix '.xlsx'"):
        detect_format(tmp_path / "data.xlsx")
    (tmp_path / "data.parquet").write_bytes(b"PAR1")
    assert detect_format(tmp_path / "data.parquet") == "parquet"
    with pytest.raises(UnknownFormatError, match="unknown dataset format 'nope'"):
        load_dataset(RAW / "NQ-open.dev.jsonl", "nope")
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps([{"_id": "a", "question": "q?", "context": []}], indent=2))
    assert detect_format(pretty) == "hotpotqa"
