"""The Browse tab's handlers on a real store: a small hand-built run (pipeline + scripted
model) whose folds, disagreements and label differences are worked out by hand, the case
study with its traces and counterfactual scenarios, escaping, error messages, the frame
cache, and a synthetic run from tests/ui_fixtures.py."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Iterator

import gradio as gr
import pytest
from gradio_client import Client

from ragshield.config import Settings
from ragshield.judging import decide, rule_of
from ragshield.pipeline import RunModels, execute_run, start_run
from ragshield.run_config import RunConfig
from ragshield.services.runs.browse import (DECISION, BrowseFilters, BrowseFrames, build_frame,
                                            filter_rows, fold_column, keep_column, shown_table)
from ragshield.services.runs.case_studies import case_study
from ragshield.services.runs.run_choices import ALL_DATASETS
from ragshield.store.database import Store, open_store
from ragshield.store.labels import add_annotator, add_label
from ragshield.store.runs import add_verdicts, iter_main_answers
from ragshield.store.sample_import import import_samples
from ragshield.testing.synthetic_run import fill_synthetic_run
from ragshield.types import Passage, Sample, Verdict
from ragshield.ui.browse_tab import (TITLE, browse_detail, browse_filter, browse_row,
                                     browse_runs, build)
from ragshield.ui.case_study import call_html, passages_html
from ragshield.services.annotation.people import Access
from ragshield.ui.context import UiContext
from tests.conftest import free_port
from tests.fakes import ScriptedLLM, ScriptedReply

XSS_QUESTION = "<script>alert(1)</script> What colour is the sky?"
XSS_PASSAGE = "<img src=x onerror=alert(2)> The sky is blue."
XSS_ANSWER = "blue <script>alert(3)</script>"

# sample: question, passage, references, dataset flag, base answer, cf-quality reply,
# cf-usage reply, p_true says yes
CASES = {
    "s0": ("What is the capital of France?", "Paris is the capital of France.", ["Paris"],
           True, "Paris", "Answer: Paris\nEvidence: ## Passage-0 ##", "Answer: Paris", True),
    "s1": ("Who wrote Hamlet?", "Hamlet is a play in five acts.", ["Shakespeare"], False,
           "Marlowe", "Answer: Shakespeare\nEvidence: ## Passage-0 ##", "Answer: Marlowe", True),
    "s2": (XSS_QUESTION, XSS_PASSAGE, ["blue"], True, XSS_ANSWER,
           f"Answer: {XSS_ANSWER}\nEvidence: ## Passage-0 ##", f"Answer: {XSS_ANSWER}", False),
    "s3": ("What is two plus two?", "Two plus two is four.", ["four"], True, "I don't know",
           "", "", False),
}
# By hand: answer correct (answerable) s0 yes, s1 no, s2 yes, s3 no (a refusal).
# counterfactual: s0 keep; s1 quality changes, usage same, direct fusion discards; s2 keep;
# s3 refusal, discarded without a call. p_true: yes, yes, no, no. trivial always keeps.
FOLDS_AUTO = {
    "counterfactual": {"s0": "AK", "s1": "UD", "s2": "AK", "s3": "UD"},
    "p_true": {"s0": "AK", "s1": "UK", "s2": "AD", "s3": "UD"},
    "trivial": {"s0": "AK", "s1": "UK", "s2": "AK", "s3": "UK"},
}
DISAGREE = {"s1", "s2", "s3"}
NORAG_REPLY = "No-RAG guess"


def case_of(messages) -> tuple:
    text = "\n".join(m["content"] for m in messages)
    return next(case for case in CASES.values() if case[0] in text)


def respond(messages):
    last = messages[-1]["content"]
    case = case_of(messages)
    if "$$keep$$" in last:
        return "$$discard$$"
    if "poor quality" in last:
        return case[5]
    if "used the passages improperly" in last:
        return case[6]
    if "Is the proposed answer to the question true?" in last:
        return ScriptedReply("yes", top={"yes": -0.1, "no": -2.5}) if case[7] else \
            ScriptedReply("no", top={"no": -0.1, "yes": -2.5})
    if "No passages are given" in last:
        return NORAG_REPLY
    return f"Answer: {case[4]}\nEvidence: ## Passage-0 ##"


def make_toy_run(store: Store, settings: Settings) -> int:
    import_samples(store, "toy", [
        Sample(id=sid, question=q, passages=[Passage(text=p)], reference_answers=refs,
               answerable=flag)
        for sid, (q, p, refs, flag, *_) in CASES.items()])
    run_id = start_run(store, RunConfig(dataset="toy", judges=["trivial", "p_true",
                                                               "counterfactual"],
                                        rule="counterfactual", fallback=True))
    outcome = execute_run(store, run_id, settings,
                          models=RunModels(main=ScriptedLLM(respond=respond)), progress=False)
    assert outcome.status == "done" and outcome.done == 4
    return run_id


@pytest.fixture
def toy_run(store, settings) -> int:
    """The toy run in a fresh store (SQLite and PostgreSQL), for tests that write to it."""
    return make_toy_run(store, settings)


@pytest.fixture
def context(store, settings) -> UiContext:
    return UiContext(settings=settings, store=store)


@pytest.fixture
def frames() -> BrowseFrames:
    return BrowseFrames()


@pytest.fixture(scope="module")
def shared(tmp_path_factory) -> Iterator[tuple[UiContext, BrowseFrames, int]]:
    """The toy run built once for the tests that only read it: (context, frames, run id)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('browse') / 'toy.db'}"
    settings = Settings(database_url=url, cache_dir=Settings().cache_dir)
    store = open_store(url)
    run_id = make_toy_run(store, settings)
    yield UiContext(settings=settings, store=store), BrowseFrames(), run_id
    store.close()


def shown_ids(context, frames, run_id, truth="auto", judge=DECISION, folds=(), disagree=False,
              label_state="any", differ=False, search="") -> list[str]:
    summary, table, _ = browse_filter(context, frames, run_id, truth, judge, list(folds),
                                      disagree, label_state, differ, search)
    assert "rs-msg-error" not in summary, summary
    return list(table["sample"])


def label_toy(store) -> None:
    """s0 answerable (agrees with the dataset flag), s1 answerable with a correct answer
    (the flag says unanswerable: differs), s3 unsure (counts as unlabelled)."""
    add_annotator(store, "ann")
    add_label(store, "toy", "s0", "ann", "answerable")
    add_label(store, "toy", "s1", "ann", "answerable", answer_correct=True)
    add_label(store, "toy", "s3", "ann", "unsure")


# -- runs --------------------------------------------------------------------------------

def test_run_picker_lists_runs_newest_first_and_narrows_by_dataset(context, toy_run, store):
    other = fill_synthetic_run(store, 20, ["trivial", "p_true"], seed=1)
    datasets, runs = browse_runs(context, ALL_DATASETS, None)
    assert datasets["choices"][0] == ALL_DATASETS and "toy" in datasets["choices"]
    assert [run_id for _, run_id in runs["choices"]] == [other, toy_run]
    assert runs["value"] == other
    label = runs["choices"][1][0]
    assert label == f"#{toy_run} · toy · done"
    _, runs = browse_runs(context, "toy", other)
    assert [run_id for _, run_id in runs["choices"]] == [toy_run] and runs["value"] == toy_run
    datasets, runs = browse_runs(context, "no such dataset", str(toy_run))
    assert datasets["value"] == ALL_DATASETS and runs["value"] == toy_run


# -- the frame and the filters -------------------------------------------------------------

def test_folds_decision_and_keeps_match_the_hand_computed_values(shared):
    context, frames, toy_run = shared
    summary, table, judge_update = browse_filter(context, frames, toy_run, "auto", DECISION,
                                                 [], False, "any", False, "")
    assert "showing 4 of 4" in summary
    assert judge_update["choices"] == [DECISION, "trivial", "p_true", "counterfactual"]
    frame = frames.get(context.tables.get(toy_run), lambda: context.tables.get(toy_run))
    rows = frame.rows.set_index("sample_id")
    for judge, folds in FOLDS_AUTO.items():
        assert rows[fold_column(judge)].to_dict() == folds
    # the decision follows the rule's judge (counterfactual)
    assert rows[fold_column(DECISION)].to_dict() == FOLDS_AUTO["counterfactual"]
    assert rows[DECISION].to_dict() == {"s0": "keep", "s1": "abstain", "s2": "keep",
                                        "s3": "abstain"}
    assert rows[keep_column("p_true")].to_dict() == {"s0": "keep", "s1": "keep",
                                                     "s2": "abstain", "s3": "abstain"}
    assert list(table.columns[:8]) == ["sample", "shown?", "answer is", "unsupported",
                                       "judges against", "people say", "question", "answer"]
    # The badges, a sign and a word each: s3's "I don't know" is a refusal; no support judge
    # ran, so no sentence was marked; s1 was withheld where trivial and p_true kept it.
    badges = table.set_index("sample")[["shown?", "answer is", "unsupported",
                                        "judges against"]].T.to_dict("list")
    assert badges == {"s0": ["✓ kept", "✓ right", "–", "agree"],
                      "s1": ["✗ withheld", "✗ wrong", "–", "⚡ 2 of 3"],
                      "s2": ["✓ kept", "✓ right", "–", "⚡ 1 of 3"],
                      "s3": ["✗ withheld", "– refused", "–", "⚡ 1 of 3"]}


def support_marks(store: Store, run_id: int, marks: dict[str, list[bool | None]]) -> None:
    """A support verdict on the samples' answers: one claim per flag, splitting the answer's
    text into equal parts (None: a claim the judge could not read)."""
    for saved in iter_main_answers(store, run_id):
        flags = marks.get(saved.sample.id)
        if flags is None:
            continue
        text, size = saved.answer.text, len(saved.answer.text) // len(flags)
        claims = [{"start": i * size, "end": (i + 1) * size if i < len(flags) - 1 else len(text),
                   "score": None if flag is None else float(flag), "supported": flag}
                  for i, flag in enumerate(flags)]
        add_verdicts(store, saved.answer_id, [Verdict("support", all(f is True for f in flags),
                                                      0.5, details={"claims": claims})])


def test_badges_filters_and_sorts_on_the_decision_truth_and_sentences(context, frames, toy_run,
                                                                       store):
    """Browse counts the support judge's unsupported sentences (an unread one among them),
    filters on the decision, the truth and those sentences, and sorts by them."""
    support_marks(store, toy_run, {"s0": [True], "s2": [True, False, None]})

    def shown(**filters):
        summary, table, _ = browse_filter(
            context, frames, toy_run, "auto", DECISION, [], False, "any", False, "",
            filters.get("decisions"), filters.get("truth", "any"),
            filters.get("unsupported", False), filters.get("sort", "sample"))
        assert "rs-msg-error" not in summary, summary
        return table

    table = shown()
    assert dict(zip(table["sample"], table["unsupported"])) == {
        "s0": "✓ 0 of 1", "s1": "–", "s2": "⚠ 2 of 3", "s3": "–"}
    assert list(shown(decisions=["withheld"])["sample"]) == ["s1", "s3"]
    assert list(shown(decisions=["kept", "deferred"])["sample"]) == ["s0", "s2"]
    assert list(shown(truth="wrong")["sample"]) == ["s1", "s3"]
    assert list(shown(unsupported=True)["sample"]) == ["s2"]
    assert list(shown(sort="unsupported first")["sample"]) == ["s2", "s0", "s1", "s3"]
    assert list(shown(sort="disagreement first")["sample"]) == ["s1", "s2", "s3", "s0"]
    summary, _, _ = browse_filter(context, frames, toy_run, "auto", DECISION, [], False, "any",
                                  False, "", ["shown"], "any", False, "sample")
    assert "rs-msg-error" in summary and "unknown decision &#x27;shown&#x27;" in summary


def test_people_say_shows_their_majority_label(context, frames, toy_run, store):
    label_toy(store)
    _, table, _ = browse_filter(context, frames, toy_run, "auto", DECISION, [], False, "any",
                                False, "")
    assert dict(zip(table["sample"], table["people say"])) == {
        "s0": "answerable", "s1": "answerable, right", "s2": "", "s3": ""}  # unsure: no say


def test_fold_filter_per_judge(shared):
    context, frames, toy_run = shared
    for judge in ("counterfactual", "p_true", "trivial", DECISION):
        folds = FOLDS_AUTO["counterfactual" if judge == DECISION else judge]
        for fold in ("AK", "AD", "UK", "UD"):
            expected = [sid for sid, value in folds.items() if value == fold]
            assert shown_ids(context, frames, toy_run, judge=judge, folds=[fold]) == expected


def test_several_folds_and_filters_combine(shared):
    context, frames, toy_run = shared
    assert shown_ids(context, frames, toy_run, judge="p_true", folds=["UK", "AD"]) == ["s1", "s2"]
    assert shown_ids(context, frames, toy_run, judge="p_true", folds=["UK", "AD"],
                     search="hamlet") == ["s1"]


def test_disagreement_filter(shared):
    context, frames, toy_run = shared
    assert shown_ids(context, frames, toy_run, disagree=True) == sorted(DISAGREE)


RULES = {
    "all": {"s0": "keep", "s1": "abstain", "s2": "abstain", "s3": "abstain"},
    "majority": {"s0": "keep", "s1": "keep", "s2": "keep", "s3": "abstain"},
    "p_true": {"s0": "keep", "s1": "keep", "s2": "abstain", "s3": "abstain"},
}


def test_vectorised_rules_agree_with_judging_decide(shared):
    context, _, toy_run = shared
    stored = context.tables.get(toy_run)
    verdicts = stored.verdicts
    for rule, expected in RULES.items():
        tables = replace(stored, config={**stored.config, "rule": rule})
        rows = build_frame(tables, tables).rows.set_index("sample_id")
        assert rows[DECISION].to_dict() == expected
        for sid, word in expected.items():
            mine = verdicts[verdicts["sample_id"] == sid]
            decision = decide([Verdict(judge=j, keep=k)
                               for j, k in zip(mine["judge"], mine["keep"])],
                              rule_of(rule))
            assert ("keep" if decision.keep else "abstain") == word


def test_label_state_and_human_vs_automatic(context, frames, toy_run, store):
    assert shown_ids(context, frames, toy_run, label_state="labelled") == []
    label_toy(store)
    assert shown_ids(context, frames, toy_run, label_state="labelled") == ["s0", "s1"]
    assert shown_ids(context, frames, toy_run, label_state="unlabelled") == ["s2", "s3"]
    assert shown_ids(context, frames, toy_run, differ=True) == ["s1"]
    assert shown_ids(context, frames, toy_run, truth="human", differ=True) == ["s1"]
    # Under human truth s1's answer is correct (the annotator said so): AD for counterfactual.
    assert shown_ids(context, frames, toy_run, truth="human", judge="counterfactual",
                     folds=["AD"]) == ["s1"]
    assert shown_ids(context, frames, toy_run, truth="auto", judge="counterfactual",
                     folds=["AD"]) == []


def test_text_search_is_a_case_insensitive_substring_of_question_answer_or_id(shared):
    context, frames, toy_run = shared
    assert shown_ids(context, frames, toy_run, search="PARIS") == ["s0"]
    assert shown_ids(context, frames, toy_run, search="marlowe") == ["s1"]
    assert shown_ids(context, frames, toy_run, search="s3") == ["s3"]
    assert shown_ids(context, frames, toy_run, search="<script>") == ["s2"]
    assert shown_ids(context, frames, toy_run, search=".*") == []  # not a regex


def test_table_cells_are_plain_text(shared):
    context, frames, toy_run = shared
    _, table, _ = browse_filter(context, frames, toy_run, "auto", DECISION, [], False, "any",
                                False, "sky")
    assert table.loc[0, "question"] == XSS_QUESTION and table.loc[0, "answer"] == XSS_ANSWER
    component = gr.Dataframe(interactive=False, datatype="str")
    data = component.postprocess(table).model_dump()
    question = list(table.columns).index("question")
    assert data["data"][0][question] == XSS_QUESTION  # sent as text, shown as text
    assert component.get_config()["datatype"] == "str"


def test_the_frame_is_cached_until_the_run_changes(context, frames, toy_run, store):
    tables = context.tables.get(toy_run)
    first = frames.get(tables, lambda: tables)
    assert frames.get(context.tables.get(toy_run), lambda: tables) is first
    label_toy(store)
    changed = context.tables.get(toy_run)
    assert changed is not tables and frames.get(changed, lambda: changed) is not first
    human = context.tables.get(toy_run, "human")
    asked = []
    human_frame = frames.get(human, lambda: asked.append(1) or changed)
    assert frames.get(context.tables.get(toy_run, "human"), lambda: asked.append(1)) is human_frame
    assert asked == [1]  # the automatic tables are asked for once, when the frame is built


def test_bad_filter_values_and_unknown_runs_read_as_messages(shared):
    context, frames, toy_run = shared
    summary, table, _ = browse_filter(context, frames, 999, "auto", DECISION, [], False, "any",
                                      False, "")
    assert "rs-msg-error" in summary and "no run with id 999" in summary and table.empty
    for run in ("x1", "²", "99999999999999999999"):  # the last two: tracebacks before
        summary, _, _ = browse_filter(context, frames, run, "auto", DECISION, [], False,
                                      "any", False, "")
        assert "rs-msg-error" in summary and "whole number" in summary
    summary, _, _ = browse_filter(context, frames, toy_run, "auto", DECISION, ["XX"], False,
                                  "any", False, "")
    assert "rs-msg-error" in summary and "unknown fold" in summary
    summary, _, _ = browse_filter(context, frames, toy_run, "auto", DECISION, [], False,
                                  "sometimes", False, "")
    assert "rs-msg-error" in summary and "label state" in summary
    summary, _, _ = browse_filter(context, frames, toy_run, "oracle", DECISION, [], False, "any",
                                  False, "")
    assert "rs-msg-error" in summary and "truth" in summary
    summary, _, _ = browse_filter(context, frames, None, "auto", DECISION, [], False, "any",
                                  False, "")
    assert "No run to browse" in summary


def test_a_judge_the_run_lacks_resets_the_fold_filter(shared):
    context, frames, toy_run = shared
    summary, table, update = browse_filter(context, frames, toy_run, "auto", "nli", ["AK"],
                                           False, "any", False, "")
    assert update["value"] == DECISION and "now on decision" in summary
    assert list(table["sample"]) == ["s0", "s2"]


# -- the case study ----------------------------------------------------------------------

def test_case_study_shows_the_trace_and_the_counterfactual_scenarios(context, frames, toy_run,
                                                                     store):
    label_toy(store)
    html = browse_detail(context, frames, toy_run, "auto", "s1")
    assert "Who wrote Hamlet?" in html and "Hamlet is a play in five acts." in html
    # the answer, its evidence and raw text, the answerer's prompt
    assert "Marlowe" in html and "Passage-0" in html and "Answer: Marlowe" in html
    assert "Answer the question using the passages above" in html
    # every judge's verdict and its calls
    for judge in ("trivial", "p_true", "counterfactual"):
        assert f"<summary>{judge}: " in html
    assert "cf-quality round 1" in html and "cf-usage round 1" in html
    assert "Is the proposed answer to the question true?" in html
    # both scenarios' regenerated answers, same/changed, the fusion prompt and decision
    # (in the one outcome vocabulary: the model's own "discard" shows as abstain)
    assert re.search(r"cf-quality: abstain</b>.*Shakespeare.*changed", html, re.S)
    assert re.search(r"cf-usage: keep</b>.*Marlowe.*same", html, re.S)
    assert "fusion (direct) on cf-quality" in html and "$$keep$$ or $$discard$$" in html
    assert re.search(r"<b>Decision</b>.*<td>abstain</td>", html, re.S)
    # the No-RAG answer, labels and their history, folds
    assert NORAG_REPLY in html and "No-RAG answer" in html
    assert "<td>ann</td><td>answerable</td><td>yes</td>" in html
    assert "<td>counterfactual</td><td>abstain</td><td>0.500</td><td>UD</td>" in html
    assert "<td>p_true</td><td>keep</td>" in html and "<td>UK</td>" in html
    assert "decision (counterfactual)" in html


def test_case_study_gathers_the_decision_folds_labels_and_rows(context, frames, toy_run,
                                                                store):
    label_toy(store)
    study = case_study(store, context.tables, frames, toy_run, "human", "s1")
    assert study.case.sample["external_id"] == "s1"
    assert {v["judge"] for v in study.case.verdicts} == {"trivial", "p_true", "counterfactual"}
    assert (study.decision.rule, study.decision.keep) == ("counterfactual", False)
    # Under human truth s1's answer is correct (the annotator said so).
    assert study.folds == {"trivial": "AK", "p_true": "AK", "counterfactual": "AD"}
    assert [(r.annotator, r.label) for r in study.history] == [("ann", "answerable")]
    assert study.sample_row["human_label"] == "answerable" and study.frame_row["human_differs"]


def test_an_annotator_reads_only_their_own_notes_in_a_case_study(context, frames, toy_run,
                                                                 store):
    """Issue 55: the label download kept each note to its author and the managers, while
    Browse showed every note to every annotator."""
    for name in ("ann", "bea"):
        add_annotator(store, name)
    add_label(store, "toy", "s0", "ann", "answerable", note="ann's own note")
    add_label(store, "toy", "s0", "bea", "unanswerable", note="bea's private note")

    def notes(by: str | None) -> set[str]:
        html = browse_detail(context, frames, toy_run, "auto", "s0", by)
        return {note for note in ("ann's own note", "bea's private note")
                if note.replace("'", "&#x27;") in html}

    assert notes(None) == {"ann's own note", "bea's private note"}  # no logins
    context.access = Access(logins=True, file_roles={"ann": "annotator", "bea": "annotator",
                                                     "boss": "admin"})
    assert notes("ann") == {"ann's own note"}
    assert notes("boss") == {"ann's own note", "bea's private note"}
    assert notes(None) == set()
    html = browse_detail(context, frames, toy_run, "auto", "s0", "ann")
    assert "<td>bea</td><td>unanswerable</td>" in html  # the label itself is shown


def test_the_case_study_opens_on_the_answer_at_a_glance(shared):
    """Issue 59: the panel a person shows on a screen comes first: s0 was shown and cites its
    one passage, whose sentence naming Paris is highlighted; s3's refusal was withheld."""
    context, frames, toy_run = shared
    html = browse_detail(context, frames, toy_run, "auto", "s0")
    assert html.index("For a screen: the answer at a glance") < html.index("Passages shown")
    panel = html.split('<div class="rs-panel"', 1)[1].split("</details></div>", 1)[0]
    assert 'data-outcome="shown"' in panel and "What is the capital of France?" in panel
    assert "<mark>Paris is the capital of France.</mark>" in panel
    refusal = browse_detail(context, frames, toy_run, "auto", "s3")
    assert "Withheld: the model said it does not know." in refusal


def test_case_study_of_a_refusal_explains_the_counterfactual_shortcut(shared):
    context, frames, toy_run = shared
    html = browse_detail(context, frames, toy_run, "auto", "s3")
    assert "the base answer is a refusal" in html
    assert re.search(r"<b>Decision</b>.*<td>abstain</td>", html, re.S)
    assert "No human label yet" in html


def test_case_study_escapes_question_answer_and_passages(shared):
    context, frames, toy_run = shared
    html = browse_detail(context, frames, toy_run, "auto", "s2")
    assert "<script" not in html.lower() and "<img" not in html.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;script&gt;alert(3)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(2)&gt;" in html


def test_a_trace_or_passage_with_odd_values_still_renders() -> None:
    """A run bundle from elsewhere may hold anything where numbers belong."""
    html = call_html({"purpose": "p_true: yes/no", "seconds": "slow", "logprobs": [
        {"token": "Yes", "logprob": None, "top": {"Yes": None, "No": "low"}},
        {"token": "!", "logprob": -0.5, "top": ["not", "a", "mapping"]}, "not a token"]})
    assert "slow s" in html and "n/a" in html and "-0.500" in html
    html = passages_html([{"text": "t", "score": "high"}, {"text": "u", "score": 0.25}], [])
    assert "score: high" in html and "score: 0.250" in html


def test_selecting_a_row_opens_its_case_study(shared):
    context, frames, toy_run = shared
    _, table, _ = browse_filter(context, frames, toy_run, "auto", DECISION, [], True, "any",
                                False, "")
    sample_id, html = browse_row(context, frames, toy_run, "auto", list(table.iloc[1]))
    assert sample_id == "s2" and "What colour is the sky?" in html


def test_unknown_run_and_unknown_sample_read_as_messages(shared):
    context, frames, toy_run = shared
    html = browse_detail(context, frames, 999, "auto", "s0")
    assert "rs-msg-error" in html and "no run with id 999" in html
    html = browse_detail(context, frames, toy_run, "auto", "nope")
    assert "rs-msg-error" in html and "has no sample &#x27;nope&#x27;" in html
    assert "Pick a row" in browse_detail(context, frames, toy_run, "auto", "  ")
    html = browse_detail(context, frames, toy_run, "auto", "<b>x</b>")
    assert "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x" not in html


# -- a synthetic run -----------------------------------------------------------------------

def test_synthetic_run_builds_a_consistent_frame(context, frames, store):
    judges = ["trivial", "p_true", "nli", "counterfactual"]
    run_id = fill_synthetic_run(store, 200, judges, seed=7)
    assert sum(1 for _ in iter_main_answers(store, run_id)) == 200
    summary, table, update = browse_filter(context, frames, run_id, "auto", "nli", [], False,
                                           "any", False, "")
    assert "showing 200 of 200" in summary and update["choices"] == [DECISION, *judges]
    per_fold = {fold: len(shown_ids(context, frames, run_id, judge="nli", folds=[fold]))
                for fold in ("AK", "AD", "UK", "UD")}
    undecided = (table["nli"] == "-").sum()
    assert sum(per_fold.values()) + undecided == 200
    labelled = shown_ids(context, frames, run_id, label_state="labelled")
    assert len(labelled) == 20
    assert set(shown_ids(context, frames, run_id, differ=True)) <= set(labelled)
    assert shown_ids(context, frames, run_id, search="syn-000123") == ["syn-000123"]
    html = browse_detail(context, frames, run_id, "auto", "syn-000005")
    assert "Synthetic question 5" in html and "synthetic verdict of nli" in html


def test_showing_is_capped(shared):
    context, frames, _ = shared
    run_id = fill_synthetic_run(context.store, 30, ["trivial"], seed=3)
    frame = frames.get(context.tables.get(run_id), lambda: context.tables.get(run_id))
    rows = filter_rows(frame, BrowseFilters())
    assert len(shown_table(frame, rows, DECISION, limit=10)) == 10 and len(rows) == 30
    assert len(shown_table(frame, rows, DECISION)) == 30  # under the default cap of 500


# -- the named endpoints -------------------------------------------------------------------

def test_named_endpoints_through_gradio_client(shared):
    context, _, run_id = shared
    with gr.Blocks() as app:
        with gr.Tab(TITLE) as tab:
            build(context, app, tab)
    app.queue()
    app.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True,
               quiet=True)
    try:
        client = Client(app.local_url, verbose=False)
        named = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
        assert {"/browse_runs", "/browse_filter", "/browse_detail"} <= set(named)
        datasets, runs = client.predict("toy", None, api_name="/browse_runs")
        assert datasets["value"] == "toy" and runs["value"] == run_id
        summary, table, judge = client.predict(run_id, "auto", "p_true", ["UK", "AD"], False,
                                               "any", False, "", api_name="/browse_filter")
        assert "showing 2 of 2" in summary and judge["value"] == "p_true"
        assert [row[0] for row in table["data"]] == ["s1", "s2"]
        assert table["data"][1][table["headers"].index("question")] == XSS_QUESTION  # text
        html = client.predict(run_id, "auto", "s2", api_name="/browse_detail")
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script" not in html
        html = client.predict(run_id, "auto", "missing", api_name="/browse_detail")
        assert "rs-msg-error" in html and "no sample" in html
    finally:
        app.close()


def test_a_run_not_started_yet_shows_no_rows_and_no_case(shared):
    context, frames, _ = shared
    pending = start_run(context.store, RunConfig(dataset="toy", judges=["trivial"],
                                                 rule="trivial", limit=1))
    summary, table, _ = browse_filter(context, frames, pending, "auto", DECISION, ["AK"], True,
                                      "labelled", True, "x")
    assert "showing 0 of 0" in summary and table.empty
    html = browse_detail(context, frames, pending, "auto", "s0")
    assert "rs-msg-error" in html and "no answer for sample &#x27;s0&#x27; yet" in html


def test_a_page_link_to_a_case_study_with_a_bad_run_says_so(shared):
    """?run=... is typed by anyone: past SQL's integers, or a digit that is no number, it
    broke the page load with a traceback."""
    from ragshield.ui.browse_tab import browse_link

    context, frames, toy_run = shared
    run, sample, detail = browse_link(context, frames, {"run": str(toy_run), "sample": "s0"})
    assert run["value"] == toy_run and sample == "s0" and "rs-msg-error" not in detail
    for bad in ("99999999999999999999", "²"):
        _, _, detail = browse_link(context, frames, {"run": bad, "sample": "s0"})
        assert "rs-msg-error" in detail and "whole number" in detail
