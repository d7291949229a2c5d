"""The Annotate tab: its handlers on a real store (SQLite and PostgreSQL), the hotkey script,
and the named endpoints of the tab served for real and called through gradio_client."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Iterator

import gradio as gr
import pytest
from gradio_client import Client

from ragshield.pipeline import RunModels, execute_run, start_run
from ragshield.run_config import RunConfig
from ragshield.services.annotation.labelling import annotator_name
from ragshield.services.annotation.people import Access
from ragshield.store.labels import add_annotator, add_label, get_guidelines, label_history
from ragshield.store.models import LABEL_VALUES
from ragshield.store.sample_import import import_samples
from ragshield.types import Passage, Sample
from ragshield.ui import annotate_tab
from ragshield.ui.annotate_tab import (HEAD, HOTKEYS, QueueView, label_sample, load_guidelines,
                                       next_item, progress_html, save_guidelines, show_sample,
                                       skip_sample, undo_last)
from ragshield.ui.context import UiContext
from tests.conftest import free_port
from tests.fakes import ScriptedLLM

HOSTILE = "<script>alert('x')</script>"
HOSTILE_IMG = '<img src=x onerror="alert(1)">'
N = 4
VIEW = QueueView(dataset="toy", blind=False)


@dataclass
class FakeRequest:
    """What the handlers read from a gr.Request: the login name (None without --auth)."""
    username: str | None


def toy_samples(count: int = N) -> list[Sample]:
    return [Sample(id=f"s{i}", question=f"question {i}?",
                   passages=[Passage(text=f"passage {i}", title=f"title {i}")])
            for i in range(count)]


@pytest.fixture
def context(store, settings) -> UiContext:
    import_samples(store, "toy", toy_samples())
    return UiContext(settings=settings, store=store)


def labels_of(context: UiContext, sample_id: str) -> list[tuple[str, str]]:
    return [(row.annotator, row.label) for row in label_history(context.store, "toy", sample_id)]


def test_a_label_lands_in_the_store_and_the_next_item_follows(context):
    first = next_item(context, VIEW, "ann")
    assert first.shown.sample_id == "s0" and "question 0?" in first.item
    record, screen = label_sample(context, VIEW, "ann", "s0", "unanswerable", "  no date given ",
                                  first.shown.request_ids["unanswerable"], shown=first.shown)
    assert record.stored and record.annotator == "ann" and record.label == "unanswerable"
    [row] = label_history(context.store, "toy", "s0")
    assert (row.annotator, row.label, row.note) == ("ann", "unanswerable", "no date given")
    assert row.passages_shown == [{"text": "passage 0", "title": "title 0", "doc_id": None}]
    assert screen.shown.sample_id == "s1" and "question 1?" in screen.item
    assert "Stored" in screen.message and "unanswerable" in screen.message


def test_a_label_for_another_dataset_than_the_item_shown_is_refused(context):
    """A dataset picked just before a hotkey: the key meant the item on screen, and ids
    repeat across datasets, so the label landed on a sample nobody saw."""
    import_samples(context.store, "toy2", toy_samples())
    first = next_item(context, VIEW, "ann")
    other = QueueView(dataset="toy2", blind=False)
    record, screen = label_sample(context, other, "ann", first.shown.sample_id, "unanswerable",
                                  "", first.shown.request_ids["unanswerable"],
                                  shown=first.shown)
    assert record is None and screen.kind == "error" and "No label written" in screen.message
    assert labels_of(context, "s0") == [] and label_history(context.store, "toy2", "s0") == []


def test_a_request_id_stores_one_label_however_often_it_is_sent(context):
    shown = next_item(context, VIEW, "ann").shown
    request_id = shown.request_ids["answerable"]
    first, _ = label_sample(context, VIEW, "ann", "s0", "answerable", "", request_id, shown=shown)
    again, screen = label_sample(context, VIEW, "ann", "s0", "answerable", "", request_id,
                                 shown=shown)
    reused, refusal = label_sample(context, VIEW, "ann", "s0", "unsure", "", request_id,
                                   shown=shown)
    assert first.stored and not again.stored and again.id == first.id
    assert reused is None and refusal.kind == "error" and "request id" in refusal.message
    assert labels_of(context, "s0") == [("ann", "answerable")]
    assert "Unchanged" in screen.message
    # Each shown item and action gets its own fresh id.
    later = next_item(context, VIEW, "ann").shown
    ids = list(shown.request_ids.values()) + list(later.request_ids.values())
    assert len(set(ids)) == 2 * len(LABEL_VALUES)


def test_skip_moves_on_and_undo_takes_back_the_newest_action(context):
    screen = skip_sample(context, VIEW, "ann", "s0")
    assert screen.shown.sample_id == "s1" and "Skipped s0" in screen.message
    label_sample(context, VIEW, "ann", "s1", "answerable", None, "r-1")
    undone = undo_last(context, VIEW, "ann")
    assert undone.shown.sample_id == "s1" and "Undone on s1" in undone.message
    assert [row.retracted for row in label_history(context.store, "toy", "s1")] == [False, True]
    assert undo_last(context, VIEW, "ann").shown.sample_id == "s0"  # then the skip
    assert next_item(context, VIEW, "ann").shown.sample_id == "s0"
    nothing = undo_last(context, VIEW, "ann")
    assert nothing.item is None and nothing.kind == "warning"
    assert "Nothing to undo" in nothing.message


def test_a_labelled_sample_is_not_skipped_too(context):
    """Another tab still showing it: the sample counted as labelled and as skipped."""
    label_sample(context, VIEW, "ann", "s0", "answerable", None, "r-1")
    screen = skip_sample(context, VIEW, "ann", "s0")
    assert screen.kind == "error" and "s0 already has your label (answerable)" in screen.message
    assert "1 of 4 labelled" in progress_html(context, "toy", "ann")
    assert "skipped" not in progress_html(context, "toy", "ann")
    undo_last(context, VIEW, "ann")  # the label taken back, the sample may be skipped
    assert "Skipped s0" in skip_sample(context, VIEW, "ann", "s0").message


def test_progress_counts_the_annotators_labels_and_skips(context):
    assert progress_html(context, "toy", None) == (
        '<div class="annotate-progress-text">4 samples in toy.</div>')
    assert "0 of 4 labelled" in progress_html(context, "toy", "ann")
    label_sample(context, VIEW, "ann", "s0", "answerable", None, "r-1")
    label_sample(context, VIEW, "ann", "s1", "unsure", None, "r-2")
    label_sample(context, VIEW, "bob", "s2", "unsure", None, "r-3")
    skip_sample(context, VIEW, "ann", "s3")
    bar = progress_html(context, "toy", "ann")
    assert "2 of 4 labelled, 1 skipped" in bar and 'style="width: 50.0%"' in bar
    assert "1 of 4 labelled" in progress_html(context, "toy", "bob")
    assert "rs-msg-error" in progress_html(context, "nope", "ann")


def test_the_queue_follows_strategy_and_overlap(context):
    label_sample(context, VIEW, "bob", "s0", "answerable", None, "r-1")
    assert next_item(context, VIEW, "ann").shown.sample_id == "s1"  # overlap 1: s0 is done
    two = QueueView(dataset="toy", overlap=2)
    assert next_item(context, two, "ann").shown.sample_id == "s1"  # the unlabelled first
    for sample_id in ("s1", "s2", "s3"):
        label_sample(context, VIEW, "bob", sample_id, "unsure", None, f"r-{sample_id}")
    assert next_item(context, two, "ann").shown.sample_id == "s0"
    done = next_item(context, VIEW, "ann")
    assert done.shown is None and "Nothing left to label" in done.message
    bad = next_item(context, QueueView(dataset="toy", strategy="alphabetical"), "ann")
    assert bad.kind == "error" and "strategy must be one of" in bad.message


def test_a_label_is_kept_when_the_queue_cannot_hand_over_the_next_sample(context):
    """The label is stored before the queue is asked; its error follows the confirmation."""
    view = QueueView(dataset="toy", strategy="alphabetical")
    record, screen = label_sample(context, view, "ann", "s0", "unsure", None, "r-1")
    assert record.stored and labels_of(context, "s0") == [("ann", "unsure")]
    assert screen.kind == "error" and screen.item is None
    assert screen.message.startswith("Stored: s0 is unsure for ann.")
    assert "strategy must be one of" in screen.message


def test_blind_mode_hides_other_labels_and_verdicts(context, settings):
    run = start_run(context.store, RunConfig(dataset="toy", judges=["trivial"], rule="trivial",
                                             limit=1))
    execute_run(context.store, run, settings, progress=False,
                models=RunModels(main=ScriptedLLM(respond=lambda m: "Answer: 42 " + HOSTILE)))
    add_annotator(context.store, "bob")
    add_label(context.store, "toy", "s0", "bob", "unanswerable")
    add_annotator(context.store, "ann")
    open_view = show_sample(context, QueueView("toy", blind=False, show_answer=True), "ann", "s0")
    assert "bob" in open_view.item and "unanswerable" in open_view.item
    assert "trivial" in open_view.item and "42" in open_view.item
    assert HOSTILE not in open_view.item and "&lt;script&gt;" in open_view.item
    assert open_view.shown.answer_id is not None
    blind = show_sample(context, QueueView("toy", blind=True, show_answer=True), "ann", "s0")
    assert blind.shown.sample_id == "s0" and "42" in blind.item
    assert "bob" not in blind.item and "trivial" not in blind.item and "blind" in blind.item
    hidden = show_sample(context, QueueView(dataset="toy", blind=False), "ann", "s0")
    assert "42" not in hidden.item and "trivial" not in hidden.item
    assert hidden.shown.answer_id is None
    assert "bob" in hidden.item


def test_guidelines_are_saved_and_loaded(context):
    shown, editor = load_guidelines(context, "toy")
    assert editor == "" and "No guidelines" in shown
    message, shown = save_guidelines(context, "toy", "# Rules\n\nLabel *answerable* only when ...")
    assert "saved" in message and shown.startswith("# Rules")
    assert get_guidelines(context.store, "toy").startswith("# Rules")
    assert load_guidelines(context, "toy")[1].startswith("# Rules")
    message, _ = save_guidelines(context, "nope", "x")
    assert "rs-msg-error" in message and "no dataset named &#x27;nope&#x27;" in message


def test_nothing_is_written_without_an_annotator_name(context):
    record, screen = label_sample(context, VIEW, "   ", "s0", "answerable", None, "r-1")
    assert record is None and screen.kind == "error" and screen.item is None
    assert "No label written" in screen.message and "name" in screen.message
    assert labels_of(context, "s0") == []
    waiting = next_item(context, VIEW, "")
    assert waiting.kind == "warning" and waiting.shown is None
    assert skip_sample(context, VIEW, None, "s0").kind == "error"


def test_the_login_name_wins_over_a_typed_name(context):
    assert annotator_name("mallory", login_name="ann") == "ann"
    assert annotator_name(" bob ", login_name=None) == "bob"
    record, _ = label_sample(context, VIEW, "mallory", "s0", "unsure", None, "r-1",
                             FakeRequest(username="ann"))
    assert record.annotator == "ann" and labels_of(context, "s0") == [("ann", "unsure")]
    assert "1 of 4" in progress_html(context, "toy", "", FakeRequest(username="ann"))


def test_hostile_passages_show_as_text(store, settings):
    import_samples(store, "evil", [Sample(id="x<b>", question=f"Q {HOSTILE}?",
                                          passages=[Passage(text=HOSTILE, title=HOSTILE_IMG)])])
    context = UiContext(settings=settings, store=store)
    screen = next_item(context, QueueView(dataset="evil"), "ann")
    assert "<script" not in screen.item and "<img" not in screen.item and "x<b>" not in screen.item
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in screen.item
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in screen.item
    assert screen.shown.sample_id == "x<b>"


def test_unknown_sample_and_label_are_refused_readably(context):
    record, screen = label_sample(context, VIEW, "ann", "s99", "answerable", None, "r-1")
    assert record is None and "no sample 's99'" in screen.message
    record, screen = label_sample(context, VIEW, "ann", "s0", "maybe", None, "r-2")
    assert record is None and "field 'label'" in screen.message


def test_head_script_binds_every_hotkey_to_its_element():
    assert HEAD.startswith("<script>") and 'addEventListener("keydown"' in HEAD
    sample_keys, sentence_keys = re.findall(r"const (?:targets|sentenceTargets) = ({.*?});",
                                            HEAD)
    bindings = json.loads(sample_keys)
    assert bindings == {"1": "annotate-answerable", "2": "annotate-unanswerable",
                        "3": "annotate-unsure", "s": "annotate-skip", "u": "annotate-undo",
                        "n": "annotate-note"}
    assert {hotkey.key: hotkey.elem_id for hotkey in HOTKEYS} == bindings
    assert json.loads(sentence_keys) == {"1": "annotate-sentence-supported",
                                         "2": "annotate-sentence-unsupported",
                                         "3": "annotate-sentence-unsure"}
    assert '"annotate-sentence-pick"' in HEAD and "arrowdown" in HEAD
    for guard in ("isContentEditable", '"TEXTAREA"', '"INPUT"', '"annotate-root"',
                  "getClientRects"):
        assert guard in HEAD
    assert 'querySelector("textarea")' in HEAD


# -- the tab served for real ----------------------------------------------------------------

@pytest.fixture
def served(context) -> Iterator[tuple[str, UiContext]]:
    """The tab alone in a Blocks, launched with a login (the app's --auth)."""
    with gr.Blocks() as app:
        with gr.Tab(annotate_tab.TITLE) as tab:
            annotate_tab.build(context, app, tab)
    app.queue()
    port = free_port()
    app.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True,
               auth=[("ann", "pw"), ("bob", "pw2")], quiet=True)
    try:
        yield f"http://127.0.0.1:{port}/", context
    finally:
        app.close()


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_label_endpoint_through_gradio_client(served):
    url, context = served
    client = Client(url, auth=("ann", "pw"), verbose=False)
    names = {endpoint.removeprefix("/") for endpoint in client.view_api(
        print_info=False, return_format="dict")["named_endpoints"]}
    assert {"annotate_next", "annotate_label", "annotate_skip", "annotate_undo",
            "annotate_guidelines_save", "annotate_progress"} <= names
    result = client.predict("toy", "s2", "unanswerable", "a note", "req-1", "mallory",
                            api_name="/annotate_label")
    assert result["stored"] and result["label"] == "unanswerable" and result["sample_id"] == "s2"
    assert result["annotator"] == "ann" and result["next_sample_id"] == "s0"
    again = client.predict("toy", "s2", "unanswerable", "a note", "req-1", "mallory",
                           api_name="/annotate_label")
    assert not again["stored"] and again["label"] == "unanswerable"
    assert again["label_id"] == result["label_id"]
    with pytest.raises(Exception, match="request id 'req-1' was already used"):
        client.predict("toy", "s2", "answerable", "", "req-1", "mallory",
                       api_name="/annotate_label")
    assert labels_of(context, "s2") == [("ann", "unanswerable")]
    with pytest.raises(Exception, match="no sample 's9'"):
        client.predict("toy", "s9", "unsure", "", "req-2", "ann", api_name="/annotate_label")
    # The tab's own events keep the shown sample in the session: skip applies to it.
    controls = ("toy", "unlabelled", 1, True, False)
    message, item, *_ = client.predict(*controls, "mallory", api_name="/annotate_next")
    assert 'data-sample-id="s0"' in item and message == ""
    message, item, *_, note = client.predict(*controls, "mallory", api_name="/annotate_skip")
    assert "Skipped s0" in message and 'data-sample-id="s1"' in item and note == ""
    assert "1 of 4 labelled, 1 skipped" in client.predict("toy", "", api_name="/annotate_progress")
    message, item, *_ = client.predict(*controls, "", api_name="/annotate_undo")
    assert "Undone on s0" in message and 'data-sample-id="s0"' in item


def test_with_logins_only_an_admin_edits_the_guidelines(context):
    context.access = Access(logins=True, file_roles={"boss": "admin", "ann": "annotator"})
    message, _ = save_guidelines(context, "toy", "<form action='https://x'>", "ann")
    assert "Only an admin may edit the guidelines." in message
    assert get_guidelines(context.store, "toy") is None
    message, _ = save_guidelines(context, "toy", "# Rules", "boss")
    assert "saved" in message and get_guidelines(context.store, "toy") == "# Rules"


@pytest.mark.parametrize("change, field", [
    ({"overlap": "2"}, "overlap"), ({"overlap": 0}, "overlap"), ({"overlap": True}, "overlap"),
    ({"overlap": 10**30}, "overlap"),  # past SQL's integers: stored, then a traceback
    ({"note": 5}, "note"), ({"request_id": 7}, "request_id"), ({"dataset": ["toy"]}, "dataset"),
    ({"sample_id": None}, "sample_id"),
])
def test_the_label_endpoint_refuses_a_wrong_type_before_writing(change, field):
    """Its JSON is not checked against its signature: overlap "2" stored the label and then
    failed with a TypeError, so the caller saw a failure for a label that was kept."""
    call = {"dataset": "toy", "sample_id": "s0", "label": "answerable", "note": None,
            "request_id": None, "annotator": "ann", "strategy": "unlabelled", "overlap": 1}
    annotate_tab.check_label_call(**call)
    with pytest.raises(gr.Error, match=f"No label written: field '{field}'"):
        annotate_tab.check_label_call(**{**call, **change})


TWO_SENTENCES = "Paris is the capital. It has two million people."


def answered_context(context, settings) -> UiContext:
    run = start_run(context.store, RunConfig(dataset="toy", judges=["trivial"], rule="trivial"))
    execute_run(context.store, run, settings, progress=False,
                models=RunModels(main=ScriptedLLM(respond=lambda m: "Answer: " + TWO_SENTENCES)))
    for name in ("ann", "bob"):
        add_annotator(context.store, name)
    return context


def test_sentence_labels_from_the_tab_pick_the_next_sentence_and_dedupe_a_double_click(
        context, settings):
    """Issue 57: the answer's sentences are shown with the answer; a mark stores a sentence
    label, moves the pick on and renews the request ids; a second click with the ids of
    the first stores nothing; undo takes the sentence label back."""
    answered_context(context, settings)
    view = QueueView("toy", blind=False, show_answer=True)
    screen = show_sample(context, view, "ann", "s0")
    assert [s.text for s in screen.sentences] == ["Paris is the capital.",
                                                   "It has two million people."]
    assert screen.shown.answer_text == TWO_SENTENCES and len(screen.shown.sentences) == 2
    first = annotate_tab.label_sentence(context, view, "ann", screen.shown, "1", "supported")
    assert first.message == "Stored: sentence 1 of s0 is supported for ann."
    assert first.picked == 2 and first.sentences[0].mine == "supported"
    assert first.shown.sentence_request_ids != screen.shown.sentence_request_ids
    double = annotate_tab.label_sentence(context, view, "ann", screen.shown, "1", "supported")
    assert double.message.startswith("Unchanged: sentence 1")
    by_bob = annotate_tab.label_sentence(context, view, "bob", screen.shown, "2", "unsupported")
    assert by_bob.sentences[1].mine == "unsupported" and by_bob.picked == 2
    seen = show_sample(context, view, "ann", "s0")
    assert seen.sentences[1].others == {"bob": "unsupported"}
    line = annotate_tab.sentence_choice(seen.sentences[1])
    assert line == "2. It has two million people. · bob: unsupported"
    blind = show_sample(context, QueueView("toy", blind=True, show_answer=True), "ann", "s0")
    assert blind.sentences[1].others == {} and blind.sentences[0].mine == "supported"
    undone = undo_last(context, view, "ann")
    assert undone.message == "Undone on s0." and undone.sentences[0].mine is None


def test_a_sentence_label_without_an_answer_or_on_a_changed_answer_is_refused(context, settings):
    answered_context(context, settings)
    hidden = show_sample(context, QueueView("toy", blind=False), "ann", "s0")
    refused = annotate_tab.label_sentence(context, VIEW, "ann", hidden.shown, "1", "supported")
    assert "no answer with sentences is shown" in refused.message and refused.sentences is None
    view = QueueView("toy", blind=False, show_answer=True)
    screen = show_sample(context, view, "ann", "s0")
    unpicked = annotate_tab.label_sentence(context, view, "ann", screen.shown, None, "supported")
    assert "pick a sentence first" in unpicked.message
    from ragshield.store.models import AnswerRow

    with context.store.session() as session:
        session.get(AnswerRow, screen.shown.answer_id).text = "Lyon is the capital."
    changed = annotate_tab.label_sentence(context, view, "ann", screen.shown, "1", "supported")
    assert changed.kind == "error" and "changed since it was shown" in changed.message


def test_a_label_on_a_shown_answer_records_the_runs_passages(context, settings):
    """A run's passages carry nested metadata: the label on a sample shown with its answer
    was refused ('passages_shown' must list passages of plain fields)."""
    answered_context(context, settings)
    view = QueueView("toy", blind=False, show_answer=True)
    screen = show_sample(context, view, "ann", "s0")
    record, after = label_sample(context, view, "ann", "s0", "answerable", None,
                                 screen.shown.request_ids["answerable"], shown=screen.shown)
    assert record is not None and record.stored, after.message
    [row] = label_history(context.store, "toy", "s0")
    assert row.passages_shown and row.passages_shown[0]["text"] == "passage 0"
