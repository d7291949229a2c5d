"""Conversations in the data (issue 57, item 5): a dataset row's `history` read from the
unified JSONL and from a mapped table column, refused with its line and field when bad, kept
through an export, read by a run's judges as /v1/judge reads a request's, and shown above the
question in Annotate and in the case study."""

from __future__ import annotations

import json

import pytest

from ragshield.conversation import in_conversation
from ragshield.datasets import DatasetFormatError, load_dataset
from ragshield.datasets.column_mapping import parse_mapping
from ragshield.datasets.formats.unified import to_record
from ragshield.pipeline import RunModels, execute_run, start_run
from ragshield.run_config import RunConfig
from ragshield.services.data.datasets import import_file
from ragshield.store.annotation_item import annotation_item
from ragshield.store.labels import add_annotator
from ragshield.types import Sample
from ragshield.ui.annotate_tab import item_html
from tests.fakes import ScriptedLLM, ScriptedReply

HISTORY = [{"role": "user", "content": "Which river runs through <b>Paris</b>?"},
           {"role": "assistant", "content": "The Seine."}]


def unified_row(**fields) -> dict:
    return {"id": "c1", "question": "How long is it?", "reference_answers": ["777 km"],
            "passages": [{"title": "Seine", "text": "The Seine is 777 km long."}], **fields}


def write(path, rows) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def test_a_unified_row_carries_its_history_and_writes_it_back(tmp_path):
    path = tmp_path / "chat.jsonl"
    write(path, [unified_row(history=HISTORY), unified_row(id="c2")])
    first, second = load_dataset(path, "unified")
    assert first.meta["history"] == HISTORY and "history" not in second.meta
    assert to_record(first)["history"] == HISTORY and "history" not in to_record(second)
    assert "history" not in to_record(first)["extra"]


@pytest.mark.parametrize("history, field, message", [
    ([{"role": "robot", "content": "hi"}], "history[0].role", "expected one of user"),
    ([{"role": "user"}], "history[0].content", "missing"),
    ("not json", "history", "expected a list of {role, content} turns"),
    ([{"role": "user", "content": "x" * 20_001}], "history[0].content", "at most 20,000"),
])
def test_a_bad_history_is_refused_with_its_line_and_field(tmp_path, history, field, message):
    path = tmp_path / "chat.jsonl"
    write(path, [unified_row(id="ok"), unified_row(history=history)])
    with pytest.raises(DatasetFormatError) as caught:
        list(load_dataset(path, "unified"))
    assert caught.value.where == "line 2" and caught.value.field == field
    assert message in str(caught.value)


def test_a_mapped_csv_column_holds_the_history_as_json_text(tmp_path):
    import csv

    path = tmp_path / "chat.csv"
    with open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(["q", "context", "turns"])
        writer.writerow(["How long is it?", "The Seine is 777 km long.", json.dumps(HISTORY)])
        writer.writerow(["Where is Paris?", "Paris is in France.", ""])
    first, second = load_dataset(path, "csv", mapping=parse_mapping(
        "question=q,passages=context,history=turns"))
    assert first.meta["history"] == HISTORY and "history" not in second.meta


def test_a_follow_up_is_read_with_the_turns_it_leans_on_and_a_standalone_one_alone():
    follow_up = Sample(id="a", question="How long is it?", meta={"history": HISTORY})
    read = in_conversation(follow_up).question
    assert read.startswith("Earlier in the conversation:\nUser: Which river runs through")
    assert read.endswith("\nQuestion now: How long is it?")
    alone = Sample(id="b", question="How long is the river Seine in France?",
                   meta={"history": HISTORY})
    assert in_conversation(alone).question == alone.question
    odd = Sample(id="c", question="And it?", meta={"history": [{"role": 3}, "x"]})
    assert in_conversation(odd).question == "And it?"  # nothing readable: the question alone


def test_a_run_judges_a_follow_up_with_its_history_and_the_tabs_show_it(store, settings,
                                                                        tmp_path):
    path = tmp_path / "chat.jsonl"
    write(path, [unified_row(history=HISTORY)])
    import_file(store, "chat", path, format="unified")
    prompts: list[str] = []

    def respond(messages) -> ScriptedReply:
        prompts.append(" ".join(m["content"] for m in messages))
        if "yes" in messages[-1]["content"].lower():
            return ScriptedReply("yes", top={"yes": -0.1, "no": -2.5})
        return ScriptedReply("Answer: 777 km")

    run = start_run(store, RunConfig(dataset="chat", judges=["p_true"], rule="p_true"))
    execute_run(store, run, settings, models=RunModels(main=ScriptedLLM(respond=respond)),
                progress=False)
    assert prompts and all("User: Which river runs through <b>Paris</b>?" in p
                           for p in prompts)
    add_annotator(store, "ann")
    item = annotation_item(store, "chat", "c1", "ann")
    page = item_html(item, show_answer=True)
    assert "Earlier in the conversation" in page and "The Seine." in page
    assert "&lt;b&gt;Paris&lt;/b&gt;" in page and "<b>Paris</b>" not in page
    assert page.index("Earlier in the conversation") < page.index("How long is it?")
    from ragshield.services.runs.browse import BrowseFrames
    from ragshield.services.runs.case_studies import case_study
    from ragshield.services.runs.run_tables import RunTablesCache
    from ragshield.ui.case_study import case_study_html

    study = case_study_html(case_study(store, RunTablesCache(store), BrowseFrames(), run,
                                       "auto", "c1"))
    assert '<div class="rs-conversation"><b>Earlier in the conversation</b> (2 turns)' in study
