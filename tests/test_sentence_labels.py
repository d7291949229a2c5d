"""Sentence labels in the store (issue 57): versions, idempotent submits, races and undo as
for answer labels; refused spans, values and changed answers; the answer's label that follows
from its sentences, in the run's tables under truth "human"; on SQLite and PostgreSQL."""

from __future__ import annotations

import re
import threading

import pytest
from sqlalchemy import func, select

from ragshield.claims import split_claims
from ragshield.evaluation import run_tables
from ragshield.pipeline import RunModels, execute_run, start_run
from ragshield.run_config import RunConfig
from ragshield.store.database import Store
from ragshield.store.label_undo import undo
from ragshield.store.labels import (LabelValueError, RequestIdReusedError, add_annotator,
                                    add_label, skip)
from ragshield.services.annotation.sentence_agreement import sentence_agreement
from ragshield.services.annotation.sentence_labelling import label_sentence, sentence_view
from ragshield.store.models import AnswerRow, SentenceLabel, VerdictRow
from ragshield.store.sample_import import import_samples
from ragshield.store.sentence_labels import (AnswerChangedError, add_sentence_label,
                                             answer_flag, current_sentence_labels,
                                             sentence_labels_of)
from ragshield.types import Passage, Sample
from tests.concurrency import at_once
from tests.fakes import ScriptedLLM

ANSWER = "Paris is the capital of France. It has two million people."


@pytest.fixture
def answered(store: Store, settings) -> Store:
    """Three samples answered with ANSWER by a run; three annotators."""
    import_samples(store, "toy", [Sample(id=f"s{i}", question=f"q{i}?",
                                         passages=[Passage(text="Paris is in France.")])
                                  for i in range(3)])
    for name in ("ann", "bob", "cid"):
        add_annotator(store, name)
    run = start_run(store, RunConfig(dataset="toy", judges=["trivial"], rule="trivial"))
    execute_run(store, run, settings,
                models=RunModels(main=ScriptedLLM(respond=lambda m: f"Answer: {ANSWER}")),
                progress=False)
    return store


def answer_of(store: Store, sample: str) -> tuple[int, str]:
    with store.session() as session:
        row = session.execute(select(AnswerRow.id, AnswerRow.text)
                              .where(AnswerRow.sample_id == int(sample[1:]) + 1)).one()
    return row.id, row.text


SPANS = [(c.start, c.end) for c in split_claims(ANSWER)]


def label(store: Store, who: str, sentence: int, value: str, sample: str = "s0", **kwargs):
    answer_id, text = answer_of(store, sample)
    start, end = SPANS[sentence]
    return add_sentence_label(store, "toy", sample, who, answer_id=answer_id, start=start,
                              end=end, label=value, answer_text=text, **kwargs)


def mine(store: Store, who_id: int, sample: str = "s0") -> dict[tuple[int, int], str]:
    return {(l.start, l.end): l.label
            for _, l in sentence_labels_of(store, "toy", sample, ANSWER)
            if l.annotator_id == who_id}


def test_a_change_adds_a_version_and_a_resubmit_or_retried_request_stores_nothing(answered):
    assert len(SPANS) == 2
    first = label(answered, "ann", 0, "supported")
    again = label(answered, "ann", 0, "supported")
    assert first.stored and not again.stored and again.id == first.id
    assert first.sentence == "Paris is the capital of France."
    changed = label(answered, "ann", 0, "unsupported", request_id="r-1")
    retried = label(answered, "ann", 0, "unsupported", request_id="r-1")
    assert changed.stored and not retried.stored and retried.id == changed.id
    with pytest.raises(RequestIdReusedError):
        label(answered, "ann", 1, "unsupported", request_id="r-1")
    assert mine(answered, 1) == {SPANS[0]: "unsupported"}


def test_bad_input_is_refused_naming_the_field_and_nothing_is_stored(answered):
    answer_id, text = answer_of(answered, "s0")
    cases = [
        (dict(start=0, end=len(text) + 1, label="supported"), "outside the answer"),
        (dict(start=-1, end=3, label="supported"), "outside the answer"),
        (dict(start=5, end=5, label="supported"), "outside the answer"),
        (dict(start=0, end=5, label="true"), "field 'label' must be one of supported"),
        (dict(start=0, end=5, label="supported", answer_text=text + " Edited."),
         "changed since it was shown"),
    ]
    for fields, message in cases:
        fields.setdefault("answer_text", text)
        with pytest.raises(LabelValueError, match=message):
            add_sentence_label(answered, "toy", "s0", "ann", answer_id=answer_id, **fields)
    other_answer, _ = answer_of(answered, "s1")
    with pytest.raises(LabelValueError, match="field 'answer_id'.*not an answer of this sample"):
        add_sentence_label(answered, "toy", "s0", "ann", answer_id=other_answer, start=0,
                           end=5, label="supported")
    with answered.session() as session:
        assert session.scalar(select(func.count(SentenceLabel.id))) == 0


def test_a_label_is_refused_once_the_answer_text_changed(answered):
    answer_id, text = answer_of(answered, "s0")
    with answered.session() as session:
        session.get(AnswerRow, answer_id).text = "Lyon is the capital."
    with pytest.raises(AnswerChangedError, match="changed since it was shown"):
        add_sentence_label(answered, "toy", "s0", "ann", answer_id=answer_id, start=0, end=5,
                           label="supported", answer_text=text)


def test_undo_takes_back_the_newest_step_of_any_kind_one_at_a_time(answered):
    add_label(answered, "toy", "s0", "ann", "answerable")
    label(answered, "ann", 0, "supported")
    label(answered, "ann", 0, "unsupported")
    skip(answered, "toy", "s2", "ann")
    assert undo(answered, "toy", "ann") == "s2"  # the skip
    assert undo(answered, "toy", "ann") == "s0"  # unsupported -> supported
    assert mine(answered, 1) == {SPANS[0]: "supported"}
    assert undo(answered, "toy", "ann") == "s0"  # the first sentence label: retracted
    assert mine(answered, 1) == {}
    assert undo(answered, "toy", "ann") == "s0"  # the answer label
    assert undo(answered, "toy", "ann") is None


def test_two_clicks_at_once_store_one_label_and_people_never_overwrite_each_other(answered):
    clicks = at_once(lambda: label(answered, "ann", 1, "supported"), 4)
    assert sum(r.stored for r in clicks) == 1
    turns, lock = iter(["bob", "cid", "bob", "cid"]), threading.Lock()
    values = {"bob": "unsupported", "cid": "unsure"}

    def someone() -> object:
        with lock:
            who = next(turns)
        return label(answered, who, 1, values[who])

    assert sum(r.stored for r in at_once(someone, 4)) == 2
    with answered.session() as session:
        assert session.scalar(select(func.count(SentenceLabel.id))) == 3
    current = {l.annotator_id: l.label for l in current_sentence_labels(answered, 1)[1]}
    assert current == {1: "supported", 2: "unsupported", 3: "unsure"}


def test_the_answer_label_follows_from_its_sentences():
    def rows(*labels):
        from ragshield.store.sentence_labels import CurrentSentenceLabel, text_digest

        return [CurrentSentenceLabel(1, text_digest(ANSWER), *SPANS[i], value)
                for i, value in labels]

    assert answer_flag(ANSWER, rows((0, "supported"), (1, "supported"))) is True
    assert answer_flag(ANSWER, rows((0, "supported"))) is None  # one sentence unread
    assert answer_flag(ANSWER, rows((0, "supported"), (1, "unsure"))) is None
    assert answer_flag(ANSWER, rows((1, "unsupported"))) is False
    assert answer_flag("Another text.", rows((0, "unsupported"))) is None  # not its labels


def test_sentence_labels_decide_the_human_truth_and_a_direct_flag_wins(answered):
    auto = run_tables(answered, 1, truth="auto").samples.set_index("sample_id")
    label(answered, "ann", 0, "supported", sample="s0")
    label(answered, "ann", 1, "supported", sample="s0")
    label(answered, "ann", 1, "unsupported", sample="s1")
    label(answered, "bob", 0, "unsupported", sample="s2")
    add_label(answered, "toy", "s2", "bob", "answerable", answer_correct=True,
              answer_id=answer_of(answered, "s2")[0])
    human = run_tables(answered, 1, truth="human").samples.set_index("sample_id")
    flags = human["human_answer_correct"].to_dict()
    assert flags == {"s0": True, "s1": False, "s2": True}  # s2: bob's own word on the answer
    assert list(human["annotators"]) == [1, 1, 1]
    assert bool(human.loc["s1", "answer_correct"]) is False
    assert auto.loc["s1", "human_answer_correct"] is None


def add_support_verdict(store: Store, sample: str, scores: list[float]) -> None:
    """A support verdict on the sample's answer that marks its two sentences with `scores`
    (threshold 0.5), as the support judge stores them."""
    answer_id, _ = answer_of(store, sample)
    claims = [{"start": start, "end": end, "score": score, "supported": score >= 0.5}
              for (start, end), score in zip(SPANS, scores)]
    with store.session() as session:
        session.add(VerdictRow(answer_id=answer_id, judge="support", keep=min(scores) >= 0.5,
                               score=min(scores), details={"claims": claims}))


def test_the_view_shows_the_judges_marks_and_others_labels_unless_blind(answered):
    add_support_verdict(answered, "s0", [0.9, 0.2])
    label(answered, "bob", 1, "unsupported")
    label(answered, "ann", 0, "supported")
    view = sentence_view(answered, "toy", "s0", "ann")
    assert [(s.index, s.text) for s in view.sentences] == [
        (1, "Paris is the capital of France."), (2, "It has two million people.")]
    assert [(s.score, s.supported, s.mine, s.others) for s in view.sentences] == [
        (0.9, True, "supported", {}), (0.2, False, None, {"bob": "unsupported"})]
    blind = sentence_view(answered, "toy", "s0", "ann", blind=True)
    assert [(s.score, s.supported, s.mine, s.others) for s in blind.sentences] == [
        (None, None, "supported", {}), (None, None, None, {})]
    stored = label_sentence(answered, "toy", "s0", "cid", "unsure", index=2, answer_text=ANSWER)
    assert (stored.start, stored.end) == SPANS[1]
    with pytest.raises(LabelValueError, match="number or its span"):
        label_sentence(answered, "toy", "s0", "cid", "unsure")


def test_agreement_on_sentences_and_the_judge_against_the_majority(answered):
    for sample, scores in (("s0", [0.9, 0.2]), ("s1", [0.8, 0.7]), ("s2", [0.3, 0.6])):
        add_support_verdict(answered, sample, scores)
    votes = {"s0": ["supported", "unsupported"], "s1": ["supported", "supported"],
             "s2": ["unsupported", "unsupported"]}
    for sample, values in votes.items():
        for sentence, value in enumerate(values):
            label(answered, "ann", sentence, value, sample=sample)
            label(answered, "bob", sentence, value if sample != "s2" else "supported",
                  sample=sample)
    agreed = sentence_agreement(answered, "toy")
    assert agreed.sentences == 6 and agreed.people == 2
    assert agreed.pairs["ann", "bob"].shared == 6
    assert agreed.among["percent"] == pytest.approx(4 / 6)
    low, high = agreed.among["gwet_ac1_interval"]
    assert low <= agreed.among["gwet_ac1"] <= high
    judge = agreed.judge
    # The s2 sentences are ties (left out); on the four left the judge ranks and marks all
    # right: supported 0.9, 0.8, 0.7 against not supported 0.2.
    assert (judge["n"], judge["supported"]) == (4, 3)
    assert judge["auroc"] == 1.0 and judge["balanced_accuracy"] == 1.0


def test_the_majority_and_the_judges_figures_on_plain_mappings():
    from ragshield.metrics.sentence_agreement import judge_against_majority, sentence_majority

    assert sentence_majority(["supported", "unsure", "unsupported"]) is None
    assert sentence_majority(["supported", "supported", "unsupported"]) == "supported"
    assert sentence_majority(["unsure"]) is None
    majority = {1: "supported", 2: "supported", 3: "unsupported", 4: "unsupported", 5: None}
    scores = {1: 0.9, 2: 0.4, 3: 0.4, 4: 0.1, 5: 0.0}
    marks = {1: True, 2: False, 3: False, 4: False, 5: False}
    result = judge_against_majority(scores, marks, majority)
    assert result["n"] == 4 and result["supported"] == 2
    assert result["auroc"] == pytest.approx((1 + 1 + 0.5 + 1) / 4)  # the 0.4 tie counts half
    assert result["balanced_accuracy"] == pytest.approx((0.5 + 1) / 2)
    low, high = result["auroc_interval"]
    assert 0 <= low <= result["auroc"] <= high <= 1
    one_class = judge_against_majority(scores, marks, {1: "supported", 2: "supported"})
    assert one_class["auroc"] is None and one_class["auroc_interval"] is None


def test_a_policy_fits_on_answers_labelled_by_their_sentences(answered):
    """Issue 57, item 4: sentence labels are people's truth for a policy's calibration: an
    answer every sentence of which is supported is good (its passages support it), one with
    an unsupported sentence is not."""
    from ragshield.services.learning.policies import run_calibration

    for sample, scores in (("s0", [0.9, 0.8]), ("s1", [0.7, 0.2]), ("s2", [0.6, 0.6])):
        add_support_verdict(answered, sample, scores)
    label(answered, "ann", 0, "supported", sample="s0")
    label(answered, "ann", 1, "supported", sample="s0")
    label(answered, "ann", 0, "unsupported", sample="s1")
    label(answered, "ann", 0, "supported", sample="s2")  # one sentence only: says nothing
    calibration = run_calibration(answered, 1, "support", holdout=0.0)
    data = dict(zip(calibration.data.sample_ids, zip(calibration.data.good,
                                                     calibration.data.source)))
    assert data == {"s0": (True, "person"), "s1": (False, "person")}


# -- import and export ----------------------------------------------------------------------

def test_export_then_import_into_another_store_keeps_every_version(answered, tmp_path):
    from ragshield.store.database import open_store
    from ragshield.store.sentence_label_transfer import (export_sentence_labels,
                                                         export_sentence_rows,
                                                         import_sentence_labels)

    label(answered, "ann", 0, "supported")
    label(answered, "ann", 0, "unsupported")
    label(answered, "bob", 1, "unsure", sample="s1")
    rows = export_sentence_rows(answered)
    for format in ("csv", "jsonl", "parquet"):
        path = tmp_path / f"sentences.{format}"
        assert export_sentence_labels(answered, path, format) == 3
        other = open_store(f"sqlite:///{tmp_path / f'other-{format}.db'}")
        import_samples(other, "toy", [Sample(id=f"s{i}", question=f"q{i}?",
                                             passages=[Passage(text="Paris is in France.")])
                                      for i in range(3)])
        assert import_sentence_labels(other, path) == (3, 0)
        assert import_sentence_labels(other, path) == (0, 3)  # a second import adds nothing
        again = export_sentence_rows(other)
        assert [{k: r[k] for k in r if k != "answer"} for r in again] == [
            {k: r[k] for k in r if k != "answer"} for r in rows]
        current = current_sentence_labels(other, 1)
        assert sorted(l.label for rows_ in current.values() for l in rows_) == [
            "unsupported", "unsure"]
        other.close()


def test_a_formula_in_a_sentence_is_written_as_text_and_read_back_as_it_was(store, settings,
                                                                            tmp_path):
    from ragshield.store.sentence_label_transfer import (export_sentence_labels,
                                                         import_sentence_labels)

    import_samples(store, "toy", [Sample(id="s0", question="q?", passages=[Passage(text="p")])])
    add_annotator(store, "ann")
    run = start_run(store, RunConfig(dataset="toy", judges=["trivial"], rule="trivial"))
    execute_run(store, run, settings, progress=False, models=RunModels(
        main=ScriptedLLM(respond=lambda m: "Answer: =HYPERLINK(1) is it. Fine.")))
    with store.session() as session:
        answer_id, text = session.execute(select(AnswerRow.id, AnswerRow.text)).one()
    add_sentence_label(store, "toy", "s0", "ann", answer_id=answer_id, start=0,
                       end=text.index(".") + 1, label="supported")
    path = tmp_path / "s.csv"
    export_sentence_labels(store, path, "csv")
    assert ",'=HYPERLINK(1) is it.," in path.read_text()
    assert import_sentence_labels(store, path) == (0, 1)  # the same label, read back whole


def write_jsonl(path, rows) -> None:
    import json

    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def test_a_bad_row_is_named_by_line_and_field_and_nothing_is_stored(answered, tmp_path):
    from ragshield.store.label_transfer import LabelImportError
    from ragshield.store.sentence_label_transfer import import_sentence_labels

    good = {"dataset": "toy", "sample_id": "s0", "annotator": "ann", "label": "supported",
            "sentence_index": 1}
    cases = [({"label": "true"}, "line 2: field 'label' must be one of supported"),
             ({"start": 0, "end": 999, "sentence_index": None}, "line 2: fields 'start' and "
              "'end': span 0..999 is outside the answer"),
             ({"sentence_index": None, "sentence": "Lyon is big."},
              "line 2: field 'sentence': 'Lyon is big.' is not in the answer"),
             ({"sentence_index": 3}, "line 2: field 'sentence_index': the answer has 2"),
             ({"sample_id": "s9"}, "line 2: no sample 's9' in dataset 'toy'"),
             ({"annotator": None}, "line 2: field 'annotator' is missing")]
    for change, message in cases:
        path = tmp_path / "bad.jsonl"
        write_jsonl(path, [good, {**good, **change}])
        with pytest.raises(LabelImportError, match=re.escape(f"{path}, {message}")):
            import_sentence_labels(answered, path)
    with answered.session() as session:
        assert session.scalar(select(func.count(SentenceLabel.id))) == 0


def test_lfqa_verification_rows_become_one_label_per_annotator_and_sentence(answered, tmp_path):
    """LFQA-Verification's shape (sentences with their annotators' labels, 'partially'
    counted as unsupported), on answers the row carries; our own example text."""
    from ragshield.store.sentence_label_transfer import import_sentence_labels

    path = tmp_path / "lfqa.jsonl"
    write_jsonl(path, [{"id": "s2", "answer": ANSWER, "label": False, "sentences": [
        {"text": "Paris is the capital of France.",
         "annotator_labels": ["supported", "supported", "partially"]},
        {"text": "It has two million people.",
         "annotator_labels": ["not_supported", "supported", "not_supported"]}]}])
    assert import_sentence_labels(answered, path, dataset="toy") == (6, 0)
    labels = {(who, l.start, l.label) for _, l in sentence_labels_of(answered, "toy", "s2", ANSWER)
              for who in [l.annotator_id]}
    ids = {name: i for i, name in enumerate(["ann", "bob", "cid", "lfqa-1", "lfqa-2", "lfqa-3"],
                                            start=1)}
    assert labels == {(ids["lfqa-1"], 0, "supported"), (ids["lfqa-2"], 0, "supported"),
                      (ids["lfqa-3"], 0, "unsupported"), (ids["lfqa-1"], 32, "unsupported"),
                      (ids["lfqa-2"], 32, "supported"), (ids["lfqa-3"], 32, "unsupported")}
    agreed = sentence_agreement(answered, "toy")
    assert agreed.people == 3 and agreed.sentences == 2


def test_the_uncertain_sentence_queue_hands_out_the_answer_nearest_the_threshold(answered):
    from ragshield.store.annotation_queue import next_sample

    for sample, scores in (("s0", [0.9, 0.1]), ("s1", [0.9, 0.55]), ("s2", [0.8, 0.7])):
        add_support_verdict(answered, sample, scores)

    def queue(who: str) -> str | None:
        return next_sample(answered, "toy", who, strategy="uncertain_sentence")

    assert queue("ann") == "s1"  # weakest 0.55: nearest 0.5, then s2 (0.7), then s0 (0.1)
    label(answered, "ann", 1, "supported", sample="s1")
    assert queue("ann") == "s2" and queue("bob") == "s1"
    label(answered, "ann", 0, "supported", sample="s2")
    label(answered, "ann", 0, "supported", sample="s0")
    assert queue("ann") == "s0"  # every judged answer done: the unlabelled queue's first
