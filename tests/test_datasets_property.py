"""Whatever a file holds, the unified loader raises nothing but DatasetFormatError (and format
detection nothing else but UnknownFormatError)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ragshield.datasets import DatasetFormatError, UnknownFormatError, detect_format, load_dataset

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
FIELDS = ["id", "question", "passages", "reference_answers", "answerable", "extra", "source",
          "label", "title", "text", "answer", "answer_model", "answer_logprobs",
          "cited_passages"]
# Objects shaped like unified records, every field drawn from anything JSON can hold.
RECORDS = st.dictionaries(
    st.sampled_from(FIELDS), JSON_VALUES, max_size=len(FIELDS)
) | st.fixed_dictionaries(
    {"id": st.text(max_size=5) | st.integers(), "question": st.text(max_size=10),
     "passages": st.lists(st.dictionaries(st.sampled_from(["title", "text", "id", "score"]),
                                          JSON_VALUES, max_size=4), max_size=3),
     "reference_answers": st.lists(st.text(max_size=5), max_size=2) | JSON_VALUES,
     "answerable": st.none() | st.booleans()},
    optional={"answer": st.text(max_size=5) | JSON_VALUES,
              "answer_logprobs": st.lists(st.one_of(
                  st.tuples(st.text(max_size=3), st.floats(max_value=0, allow_nan=False)).map(list),
                  st.fixed_dictionaries({"token": st.text(max_size=3),
                                         "logprob": st.floats(allow_nan=False)}),
                  JSON_VALUES), max_size=3) | JSON_VALUES,
              "cited_passages": st.lists(st.integers(-1, 3), max_size=3) | JSON_VALUES},
)
# Well-typed records, so that some files load; blank questions and repeated ids still occur.
WELL_TYPED = st.fixed_dictionaries(
    {"id": st.text(min_size=1, max_size=3), "question": st.text(max_size=10),
     "passages": st.lists(st.fixed_dictionaries({"title": st.text(max_size=5),
                                                 "text": st.text(max_size=10)}), max_size=2),
     "reference_answers": st.lists(st.text(max_size=5), max_size=2),
     "answerable": st.none() | st.booleans(), "extra": st.dictionaries(st.text(max_size=3),
                                                                      JSON_VALUES, max_size=2)},
)
LINES = st.one_of(
    RECORDS.map(json.dumps),
    JSON_VALUES.map(json.dumps),
    st.text(max_size=30),
    st.sampled_from(['{"id": "a", "question": ', "\ufeff{}", "NaN", "[[[[", "{\"id\": 1e999}"]),
)
CONTENTS = st.one_of(
    st.binary(max_size=300),
    st.lists(WELL_TYPED.map(json.dumps), min_size=1, max_size=4).map(
        lambda lines: "\n".join(lines).encode()),
    st.lists(LINES, max_size=6).map(lambda lines: "\n".join(lines).encode()),
    st.lists(LINES, min_size=1, max_size=4).flatmap(
        lambda lines: st.binary(max_size=4).map(lambda junk: "\n".join(lines).encode() + junk)),
)


@settings(max_examples=150, deadline=None)
@given(content=CONTENTS)
def test_unified_loader_raises_only_dataset_format_errors(content):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "random.jsonl"
        path.write_bytes(content)
        try:
            samples = list(load_dataset(path, "unified"))
        except DatasetFormatError:
            pass
        else:
            assert samples and all(s.question.strip() for s in samples)
            assert len({s.id for s in samples}) == len(samples)
        try:
            detect_format(path)
        except (DatasetFormatError, UnknownFormatError):
            pass
