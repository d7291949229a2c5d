"""Hostile dataset files: every loader (and format detection, and the import into the store)
fuzzed with files shaped like its format, whose fields hold anything JSON can, compressed,
truncated or not. Nothing may escape but DatasetError. (tests/test_datasets_property.py
fuzzes the unified loader alone; this covers the other formats and the import, on SQLite
and PostgreSQL.)"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragshield.datasets import FORMATS, DatasetError, detect_format, load_dataset, parse_mapping
from ragshield.services.data.datasets import import_file
from tests.reliability.scale import sized

EXAMPLES = sized(40, 400)

# Text that breaks naive code: NUL, a lone surrogate (valid as a JSON escape), controls,
# right-to-left marks, long runs, markup.
NASTY = st.sampled_from(["", " ", "\x00", "\ud800", "a\udfffb", "\u202e\u200b", "\r\n",
                         "x" * 300, "<script>alert(1)</script>", "NaN", "[1,", "\\", '"'])
TEXT = st.one_of(st.text(min_size=1, max_size=12), st.text(min_size=1, max_size=12), NASTY)
ANY = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)


def mostly(good: st.SearchStrategy) -> st.SearchStrategy:
    """Mostly `good`, sometimes anything JSON can hold."""
    return st.one_of(good, good, good, good, ANY)


@dataclass(frozen=True)
class Grammar:
    """How a file's fields are drawn: well-formed (so that files load and get imported) or
    hostile (any field of any type, nasty text, ids that repeat)."""

    text: st.SearchStrategy
    ids: st.SearchStrategy
    wrap: Callable[[st.SearchStrategy], st.SearchStrategy]
    least: int  # items in a list

    def many(self, item: st.SearchStrategy, most: int) -> st.SearchStrategy:
        return st.lists(item, min_size=self.least, max_size=most)

    def obj(self, required: dict[str, st.SearchStrategy],
            optional: dict[str, st.SearchStrategy] | None = None) -> st.SearchStrategy:
        return self.wrap(st.fixed_dictionaries(
            {k: self.wrap(v) for k, v in required.items()},
            optional={k: self.wrap(v) for k, v in (optional or {}).items()}))


WELL_FORMED = Grammar(
    text=st.text(st.characters(categories=["L", "N", "P"]), min_size=1, max_size=12),
    ids=st.uuids().map(str), wrap=lambda strategy: strategy, least=1)
HOSTILE = Grammar(text=TEXT, ids=st.one_of(st.text(min_size=1, max_size=6), st.integers(), NASTY),
                  wrap=mostly, least=0)


def records(g: Grammar) -> dict[str, st.SearchStrategy]:
    """A strategy for one record (a whole document for the JSON formats) of each format."""
    text, ids = g.text, g.ids
    texts = g.many(text, 3)
    passage = g.obj({"text": text}, {"title": text, "id": ids, "docid": ids})
    return {
        "clapnq": g.obj({"id": ids, "input": text, "passages": g.many(passage, 2),
                         "output": g.many(g.obj({}, {"answer": text}), 2)}),
        "nq_open": g.obj({"question": text, "answer": texts}, {"id": ids}),
        "halueval": g.obj({"knowledge": text, "question": text, "right_answer": text},
                          {"hallucinated_answer": text}),
        "crag": g.obj(
            {"interaction_id": ids, "query": text},
            {"answer": text, "alternative_answers": st.one_of(texts, texts.map(str)),
             "question_type": st.sampled_from(["simple", "false_premise"]), "domain": text,
             "search_results": g.many(g.obj({}, {
                 "page_name": text, "page_url": text, "page_snippet": text,
                 "page_result": st.one_of(text, st.just("<html><p>Paris <b>is</b></html>")),
                 "page_last_modified": text}), 2)}),
        "nomiracl": g.obj({"query_id": ids, "query": text},
                          {"positive_passages": g.many(passage, 2),
                           "negative_passages": g.many(passage, 2)}),
        "jsonl": g.obj({"question": text}, {"id": ids, "answers": texts, "passages": st.one_of(
            text, texts, g.many(passage, 2)), "answerable": st.one_of(
            st.booleans(), st.sampled_from(["yes", "no", "maybe", "1", ""]))}),
        "squad2": g.obj({"data": g.many(g.obj({"paragraphs": g.many(g.obj(
            {"context": text, "qas": g.many(g.obj(
                {"id": ids, "question": text},
                {"answers": g.many(g.obj({"text": text}), 2),
                 "is_impossible": st.booleans(),
                 "plausible_answers": g.many(g.obj({"text": text}), 1)}), 2)}), 2)},
            {"title": text}), 2)}),
        # Spans of a Phoenix export: span ids from a small set, so parents and roots meet.
        "openinference": g.obj(
            {"context": g.obj({"trace_id": st.sampled_from(["t1", "t2"]),
                               "span_id": st.sampled_from(["s1", "s2", "s3"])}),
             "attributes": g.obj({"input.value": text, "output.value": text}, {
                 "llm.model_name": text,
                 "openinference.span.kind": st.sampled_from(["CHAIN", "RETRIEVER", "LLM"]),
                 "retrieval.documents": g.many(g.obj({"document.content": text}, {
                     "document.id": ids, "document.score": st.floats()}), 2)})},
            {"parent_id": st.one_of(st.none(), st.sampled_from(["s1", "s2"])),
             "span_kind": st.sampled_from(["CHAIN", "RETRIEVER", "LLM"])}),
        "hotpotqa": g.many(g.obj(
            {"_id": ids, "question": text,
             "context": g.many(st.tuples(text, texts).map(list), 2)},
            {"answer": text, "supporting_facts": g.many(
                st.tuples(text, st.integers(-1, 3)).map(list), 2),
             "type": text, "level": text}), 3),
    }


JSON_DOCUMENTS = {"squad2", "hotpotqa"}
SUFFIX = {"squad2": ".json", "hotpotqa": ".json", "csv": ".csv", "parquet": ".parquet"}
MAPPINGS = {"csv": "question=q,answers=ans,passages=ctx,answerable=label",
            "jsonl": "question=question",
            "parquet": "question=q,answers=ans,passages=ctx,answerable=label,answer=reply,"
                       "answer_logprobs=lp,cited_passages=cites,passage_scores=scores"}


def csv_table(g: Grammar) -> st.SearchStrategy[bytes]:
    """Well-formed: the mapped columns (and maybe more), rows of the header's width with
    cells fit for their column. Hostile: any header, rows of any width, any cells."""
    extra = st.sampled_from(["id", "extra", "other"])
    lists = st.sampled_from(['["a", "b"]', '[{"text": "t", "title": "x"}]'])
    if g is WELL_FORMED:
        cells = {"q": g.text, "ans": g.text | lists, "ctx": g.text | lists,
                 "label": st.sampled_from(["yes", "no", "1", "0", ""])}
        header = st.lists(extra, max_size=2, unique=True).map(lambda more: [*cells, *more])
        return header.flatmap(lambda columns: g.many(
            st.tuples(*(cells.get(c, g.text) for c in columns)).map(list), 3).map(
            lambda rows: _csv([columns, *rows])))
    names = st.sampled_from(["q", "ans", "ctx", "label", ""]) | extra
    cell = st.one_of(g.text, lists, st.just("[x"), st.just("maybe"))
    return st.lists(names, min_size=1, max_size=5).flatmap(lambda columns: st.lists(
        st.lists(cell, min_size=len(columns) - 1, max_size=len(columns) + 1), max_size=3).map(
        lambda rows: _csv([columns, *rows])))


# Parquet text is UTF-8: no lone surrogates.
PARQUET_TEXT = st.one_of(st.text(st.characters(blacklist_categories=["Cs"]), max_size=12),
                         st.sampled_from(["", " ", "\x00", "\u202e\u200b", "x" * 300, "[1,",
                                          '[["a", -0.5]]', "[0]", "NaN", "yes"]))


def parquet_table(g: Grammar) -> st.SearchStrategy[bytes]:
    """Well-formed: the mapped columns with values fit for them (a given answer in some
    rows). Hostile: any of the mapped and other names, each column of one type drawn from
    text, numbers (NaN and infinities too), lists of text and lists of structs."""
    token = st.fixed_dictionaries({"token": PARQUET_TEXT, "logprob": st.floats(max_value=0)})
    passage = st.fixed_dictionaries({"text": PARQUET_TEXT, "title": PARQUET_TEXT})
    if g is WELL_FORMED:
        cells = {"q": g.text, "ans": st.lists(g.text, max_size=2),
                 "ctx": st.lists(passage, min_size=1, max_size=2),
                 "label": st.sampled_from(["yes", "no", ""]),
                 "reply": st.none() | g.text, "lp": st.none() | st.lists(token, max_size=3),
                 "cites": st.none() | st.just([0]), "scores": st.none()}
        rows = st.lists(st.fixed_dictionaries(cells), min_size=1, max_size=3)
        return rows.map(_parquet)
    kinds = st.sampled_from([PARQUET_TEXT, st.integers(-3, 3), st.floats(),
                             st.lists(PARQUET_TEXT, max_size=2), st.lists(token, max_size=2),
                             st.lists(passage, max_size=2)])
    names = st.lists(st.sampled_from(["q", "ans", "ctx", "label", "reply", "lp", "cites",
                                      "scores", "other"]), min_size=1, max_size=6, unique=True)
    return st.tuples(names, st.integers(0, 3)).flatmap(lambda shape: st.tuples(
        *(kinds.flatmap(lambda kind: st.lists(st.none() | kind, min_size=shape[1],
                                              max_size=shape[1])) for _ in shape[0])).map(
        lambda columns: _parquet([dict(zip(shape[0], row)) for row in zip(*columns)]
                                 if shape[1] else [])))


def _parquet(rows: list[dict]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = io.BytesIO()
    empty = pa.table({"q": pa.array([], pa.string())})
    pq.write_table(pa.Table.from_pylist(rows) if rows else empty, out)
    return out.getvalue()


def _csv(rows: list[list[str]]) -> bytes:
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    return out.getvalue().encode("utf-8", "surrogatepass")


def contents(fmt: str) -> st.SearchStrategy[bytes]:
    """A file of the format, well-formed or hostile."""
    def of(g: Grammar) -> st.SearchStrategy[bytes]:
        if fmt == "csv":
            return csv_table(g)
        if fmt == "parquet":
            return parquet_table(g)
        record = records(g)[fmt]
        if fmt in JSON_DOCUMENTS:
            return record.map(lambda doc: json.dumps(doc).encode())
        return st.lists(record, min_size=1, max_size=4).map(
            lambda lines: "\n".join(map(json.dumps, lines)).encode())
    return st.one_of(of(WELL_FORMED), of(HOSTILE))


def damaged(data: st.DataObject, raw: bytes) -> tuple[bytes, str]:
    """The bytes, maybe truncated, maybe compressed (rightly or not), and the extra suffix."""
    if raw and data.draw(st.integers(0, 3)) == 3:  # cut off the end, a byte or more
        raw = raw[: len(raw) - data.draw(st.integers(1, len(raw)))]
    packing: dict[str, Callable[[bytes], bytes]] = {
        "": lambda b: b, ".gz": gzip.compress, ".bz2": bz2.compress,
        ".gz ": lambda b: b,  # plain bytes under a .gz name
    }
    suffix = data.draw(st.sampled_from(["", "", "", ".gz", ".bz2", ".gz "]))
    return packing[suffix](raw), suffix.strip()


@pytest.mark.scenario("Hostile dataset files: every loader and the import fuzzed")
@pytest.mark.parametrize("fmt", sorted(set(FORMATS) - {"unified"}))
def test_loading_and_importing_raise_only_dataset_errors(fmt, store, scenario):
    loaded = imported = 0

    @settings(max_examples=EXAMPLES, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        nonlocal loaded, imported
        raw, packed = damaged(data, data.draw(contents(fmt)))
        mapping = parse_mapping(MAPPINGS[fmt]) if fmt in MAPPINGS else None
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / f"fuzz{SUFFIX.get(fmt, '.jsonl')}{packed}"
            path.write_bytes(raw)
            try:
                detect_format(path, mapped=mapping is not None)
            except DatasetError:
                pass
            try:
                samples = list(load_dataset(path, fmt, mapping=mapping))
            except DatasetError:
                return
            loaded += 1
            assert samples and all(s.question.strip() for s in samples)
            assert len({s.id for s in samples}) == len(samples)
            try:
                import_file(store, f"fuzz-{loaded}", path, format=fmt, mapping=mapping)
            except DatasetError:
                return
            imported += 1

    check()
    scenario.figure(f"{fmt}: files tried", EXAMPLES)
    scenario.figure(f"{fmt}: files loaded / imported", f"{loaded} / {imported}")
    scenario.check(f"{fmt}: loading, detection and import raise nothing but DatasetError", True)


@pytest.mark.scenario("Hostile dataset files: every loader and the import fuzzed")
def test_column_mappings_raise_only_dataset_errors(scenario):
    @settings(max_examples=EXAMPLES * 5, deadline=None)
    @given(st.text(alphabet=st.sampled_from("question=,answers id q\x00\ud800"), max_size=30)
           | st.text(max_size=30))
    def check(text: str) -> None:
        try:
            mapping = parse_mapping(text)
        except DatasetError:
            return
        assert mapping and all(isinstance(v, str) and v for v in mapping.values())

    check()
    scenario.check("column mappings: nothing but DatasetError, else a usable mapping", True)

