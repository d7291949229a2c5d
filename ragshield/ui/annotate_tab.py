"""The Annotate tab: people say whether a sample's passages answer its question.

ragshield.services.annotation.labelling picks the sample, says what to show and writes labels, skips
and undos: the same use cases as `ragshield labels ...`. With `app.py --auth` the login
name is the annotator; without it, a typed name remembered in the browser. Every label
submit carries a request id made when the item was shown, so a double click or a retried
request stores one label.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field, replace
from functools import partial
from importlib.resources import files
from string import Template
from typing import Any

import gradio as gr

from ragshield.errors import UserError
from ragshield.services.annotation import labelling, sentence_labelling
from ragshield.services.annotation.labelling import (LABEL_VALUES, STRATEGIES, AnnotationItem,
                                                     AnnotatorMissingError, LabelRecord, Next,
                                                     Queue)
from ragshield.services.annotation.people import require_admin
from ragshield.services.annotation.sentence_labelling import SENTENCE_LABEL_VALUES, AnswerSentence
from ragshield.services.data.datasets import dataset_names
from ragshield.services.questions.claim_marks import claim_marks
from ragshield.ui import people_panel
from ragshield.ui.context import UiContext
from ragshield.ui.html_render import (conversation_html, esc, marked_answer_html, message_html,
                                     table_html)
from ragshield.ui.picker_refresh import datasets_unless_shown, shown_choices

VALUE_INFO = ("value: 2 in 5 labels where the newest policy would ask a person, 2 in 5 where "
              "the judges disagree, 1 in 5 from the random slice that checks the policy")
TITLE = "Annotate"

# Stable element ids: the hotkey script and the browser tests find the tab by them.
ROOT_ID, NOTE_ID = "annotate-root", "annotate-note"
SKIP_ID, UNDO_ID = "annotate-skip", "annotate-undo"
SENTENCES_ID, SENTENCE_PICK_ID = "annotate-sentences", "annotate-sentence-pick"


@dataclass(frozen=True)
class Hotkey:
    key: str
    elem_id: str  # the button it clicks, or the note box it focuses
    action: str


LABEL_MEANINGS = {"answerable": "the passages answer the question",
                  "unanswerable": "they do not", "unsure": "cannot tell"}
LABEL_HOTKEYS = {
    label: Hotkey(str(number), f"annotate-{label}", f"{label}: {LABEL_MEANINGS[label]}")
    for number, label in enumerate(LABEL_VALUES, start=1)}
HOTKEYS = (
    *LABEL_HOTKEYS.values(),
    Hotkey("s", SKIP_ID, "skip this sample"),
    Hotkey("u", UNDO_ID, "undo your last label, sentence label or skip"),
    Hotkey("n", NOTE_ID, "write a note (Esc leaves the note box; the note goes with the label)"),
)
SENTENCE_MEANINGS = {"supported": "the passages say it", "unsupported": "they do not",
                     "unsure": "cannot tell"}
SENTENCE_HOTKEYS = {
    label: Hotkey(str(number), f"annotate-sentence-{label}",
                  f"in sentence mode: the picked sentence is {label} ({meaning})")
    for number, (label, meaning) in enumerate(SENTENCE_MEANINGS.items(), start=1)}
assert tuple(SENTENCE_HOTKEYS) == SENTENCE_LABEL_VALUES
MOVE_KEYS = ("`j` / `k` (or the arrow keys) pick the next / previous sentence of the shown "
             "answer and enter sentence mode; `Esc` leaves it")


def _hotkey_script() -> str:
    """A document keydown listener, attached once (annotate.js, beside this module). Gradio
    re-renders components, so the element is looked up when the key is pressed. Keys typed
    into a field, and keys pressed while the Annotate tab is hidden, are left alone. The
    script's $targets, $note_id and $root_id are filled in as JSON."""
    script = Template((files("ragshield.ui") / "annotate.js").read_text(encoding="utf-8"))
    targets = {hotkey.key: hotkey.elem_id for hotkey in HOTKEYS}
    sentence_targets = {hotkey.key: hotkey.elem_id for hotkey in SENTENCE_HOTKEYS.values()}
    return "<script>\n" + script.substitute(
        targets=json.dumps(targets), sentence_targets=json.dumps(sentence_targets),
        note_id=json.dumps(NOTE_ID), root_id=json.dumps(ROOT_ID),
        pick_id=json.dumps(SENTENCE_PICK_ID)) + "</script>\n"


HEAD = _hotkey_script()

CSS = """
#annotate-root .annotate-question { font-size: 1.1em; margin: 0.3em 0 0.6em; }
#annotate-root .annotate-meta { color: #666; font-size: 0.85em; }
#annotate-root .annotate-passages li { margin-bottom: 0.5em; }
#annotate-root .annotate-passage-title { font-weight: 600; }
#annotate-root .annotate-passage-text, #annotate-root .annotate-answer-text {
  white-space: pre-wrap; overflow-wrap: anywhere; }
#annotate-root .annotate-answer { background: #f6f6f6; padding: 0.4em 0.6em; border-radius: 6px; }
#annotate-root .annotate-progress { background: #e6e6e6; border-radius: 4px; height: 10px;
  overflow: hidden; }
#annotate-root .annotate-progress-bar { background: #3b7ddd; height: 100%; }
#annotate-root .annotate-progress-text { font-size: 0.9em; margin-top: 0.2em; }
#annotate-root.annotate-sentence-mode #annotate-sentences { outline: 3px solid #3b7ddd;
  border-radius: 6px; }
"""


@dataclass(frozen=True)
class QueueView:
    """How the annotator asked to see the queue (the tab's controls)."""
    dataset: str = Queue.dataset
    strategy: str = Queue.strategy
    overlap: int = Queue.overlap
    blind: bool = True
    show_answer: bool = False

    @property
    def queue(self) -> Queue:
        return Queue(self.dataset, self.strategy, self.overlap)


@dataclass(frozen=True)
class Shown:
    """The sample on screen, with what it showed and one fresh request id per label."""
    dataset: str
    sample_id: str
    passages: list[dict[str, Any]]
    answer_id: int | None  # the answer shown, None when hidden or absent
    request_ids: dict[str, str] = field(
        default_factory=lambda: {label: uuid.uuid4().hex for label in LABEL_VALUES})
    answer_text: str | None = None  # the text of the answer shown
    # The spans of its sentences, as numbered on screen, and a request id per sentence and
    # label (made anew after each sentence label: see `with_fresh_sentence_ids`).
    sentences: tuple[tuple[int, int], ...] = ()
    sentence_request_ids: dict[str, str] = field(default_factory=dict)

    def with_fresh_sentence_ids(self) -> Shown:
        return replace(self, sentence_request_ids={
            f"{index}:{label}": uuid.uuid4().hex
            for index in range(1, len(self.sentences) + 1) for label in SENTENCE_LABEL_VALUES})


@dataclass(frozen=True)
class Screen:
    """What a handler puts on the page. `item` None leaves the item (and `shown`) as they
    are, as after an error."""
    message: str
    kind: str = "info"
    item: str | None = None
    shown: Shown | None = None
    sentences: list[AnswerSentence] = field(default_factory=list)  # of the answer shown


def _login(request: Any) -> str | None:
    """The login name when the app runs with --auth."""
    return getattr(request, "username", None)


def _signed_in(context: UiContext, typed_name: str | None, request: Any) -> str:
    return labelling.sign_in(context.store, typed_name, _login(request))


# -- rendering ----------------------------------------------------------------------------

def _passage_html(passage: dict[str, Any]) -> str:
    title = passage.get("title")
    title_html = f'<div class="annotate-passage-title">{esc(title)}</div>' if title else ""
    text = esc(passage.get("text"))
    return f'<li>{title_html}<div class="annotate-passage-text">{text}</div></li>'


def item_html(item: AnnotationItem, *, show_answer: bool) -> str:
    """The question, the passages, and (when asked) the answer with its verdicts; other
    annotators' labels unless blind. Every piece of dataset and model text is escaped."""
    parts = [
        f'<div class="annotate-meta">sample <code>{esc(item.sample_id)}</code> in '
        f'{esc(item.dataset)}{" · blind" if item.blind else ""}</div>',
        conversation_html(item.meta),
        f'<div class="annotate-question"><b>Question:</b> {esc(item.question)}</div>',
        '<ol class="annotate-passages">' + "".join(map(_passage_html, item.passages)) + "</ol>"
        if item.passages else "<p><i>No passages.</i></p>",
    ]
    if show_answer and item.answer is not None:
        marked = marked_answer_html(item.answer, claim_marks(item.answer, item.verdicts))
        parts.append(f'<div class="annotate-answer"><b>Answer of the newest run:</b> '
                     f'<span class="annotate-answer-text">{marked}</span></div>')
        if item.verdicts:
            parts.append(table_html(["judge", "keep", "score", "rationale"],
                                    [[v["judge"], v["keep"], v["score"], v["rationale"]]
                                     for v in item.verdicts]))
    if item.others:
        parts.append('<div class="annotate-others"><b>Other annotators:</b> ' + ", ".join(
            f'{esc(o["annotator"])}: {esc(o["label"])}' for o in item.others) + "</div>")
    if item.mine is not None:
        parts.append(f'<div class="annotate-mine"><b>Your current label:</b> '
                     f'{esc(item.mine["label"])}</div>')
    return (f'<div class="annotate-item" data-sample-id="{esc(item.sample_id)}">'
            f'{"".join(parts)}</div>')


def progress_bar_html(labelled: int, skipped: int, total: int) -> str:
    percent = 100 * labelled / total if total else 0
    return (f'<div class="annotate-progress"><div class="annotate-progress-bar" '
            f'style="width: {percent:.1f}%"></div></div>'
            f'<div class="annotate-progress-text">{labelled} of {total} labelled'
            f'{f", {skipped} skipped" if skipped else ""}</div>')


def _help_markdown() -> str:
    return "**Hotkeys** (outside text boxes):\n\n" + "\n".join(
        [f"- `{hotkey.key}` {hotkey.action}" for hotkey in HOTKEYS]
        + [f"- {MOVE_KEYS}"]
        + [f"- `{hotkey.key}` {hotkey.action}" for hotkey in SENTENCE_HOTKEYS.values()])


# -- handlers -----------------------------------------------------------------------------

def item_screen(context: UiContext, view: QueueView, item: AnnotationItem, annotator: str,
                message: str = "") -> Screen:
    """The item, and the sentences of its answer when the answer is shown."""
    answer_shown = view.show_answer and item.answer is not None
    sentences = (sentence_labelling.item_sentences(context.store, item, annotator)
                 if answer_shown else [])
    shown = Shown(view.dataset, item.sample_id, item.passages,
                  item.answer_id if answer_shown else None,
                  answer_text=item.answer if answer_shown else None,
                  sentences=tuple((s.start, s.end) for s in sentences)).with_fresh_sentence_ids()
    return Screen(message, "info", item_html(item, show_answer=view.show_answer), shown,
                  sentences)


def show_sample(context: UiContext, view: QueueView, annotator: str, sample_id: str,
                message: str = "") -> Screen:
    return item_screen(context, view, labelling.annotation_item(
        context.store, view.dataset, sample_id, annotator, blind=view.blind), annotator, message)


def _joined(*messages: str) -> str:
    return " ".join(filter(None, messages))


def _next_screen(context: UiContext, view: QueueView, name: str, handed: Next,
                 message: str = "") -> Screen:
    """The sample the queue handed over (or a note that none is left), after `message`."""
    if handed.error is not None:
        return Screen(_joined(message, str(handed.error)), "error")
    if handed.item is None:
        done = (f"Nothing left to label in {view.dataset} for {name} "
                f"(queue {view.strategy}, {view.overlap} annotator(s) per sample).")
        return Screen(_joined(message, done), "info",
                      '<div class="annotate-item annotate-done">All done here.</div>', None)
    return item_screen(context, view, handed.item, name, message)


def next_item(context: UiContext, view: QueueView, typed_name: str | None,
              request: Any = None) -> Screen:
    """The next sample of the queue for this annotator (or a note that none is left)."""
    try:
        name = _signed_in(context, typed_name, request)
        handed = labelling.hand_over(context.store, name, view.queue, blind=view.blind)
    except AnnotatorMissingError as error:
        return Screen(str(error), "warning")
    except UserError as error:
        return Screen(str(error), "error")
    return _next_screen(context, view, name, handed)


def label_sample(context: UiContext, view: QueueView, typed_name: str | None, sample_id: str,
                 label: str, note: str | None, request_id: str | None, request: Any = None,
                 shown: Shown | None = None) -> tuple[LabelRecord | None, Screen]:
    """Store `label` on `sample_id` and load the next item. `shown` (the item on screen)
    supplies the passages and answer the label was given on; a label for another sample than
    it (a dataset picked just before the key was pressed) is refused: ids repeat across
    datasets, and the label would land on a sample nobody saw."""
    if shown is not None and (shown.dataset, shown.sample_id) != (view.dataset, sample_id):
        return None, Screen(f"No label written: the item on screen is {shown.sample_id} of "
                            f"dataset {shown.dataset!r}, not {sample_id} of "
                            f"{view.dataset!r}; label the item shown now.", "error")
    try:
        name = _signed_in(context, typed_name, request)
        record, handed = labelling.label_then_next(
            context.store, view.queue, name, sample_id, label, note=note,
            request_id=request_id or None,
            passages_shown=shown.passages if shown else None,
            answer_id=shown.answer_id if shown else None, blind=view.blind)
    except UserError as error:
        return None, Screen(f"No label written: {error}", "error")
    message = (f"Stored: {sample_id} is {record.label} for {name}." if record.stored else
               f"Unchanged: {sample_id} was already {record.label} for {name}.")
    return record, _next_screen(context, view, name, handed, message)


def skip_sample(context: UiContext, view: QueueView, typed_name: str | None, sample_id: str,
                request: Any = None) -> Screen:
    try:
        name = _signed_in(context, typed_name, request)
        handed = labelling.skip_then_next(context.store, view.queue, name, sample_id,
                                          blind=view.blind)
    except UserError as error:
        return Screen(f"Not skipped: {error}", "error")
    return _next_screen(context, view, name, handed, f"Skipped {sample_id}.")


def undo_last(context: UiContext, view: QueueView, typed_name: str | None,
              request: Any = None) -> Screen:
    """Take back the annotator's newest label or skip in the dataset and show that sample
    again, to label it anew."""
    try:
        name = _signed_in(context, typed_name, request)
        sample_id = labelling.undo(context.store, view.dataset, name)
        if sample_id is None:
            return Screen(f"Nothing to undo for {name} in {view.dataset}.", "warning")
        return show_sample(context, view, name, sample_id, f"Undone on {sample_id}.")
    except UserError as error:
        return Screen(f"Nothing undone: {error}", "error")


@dataclass(frozen=True)
class SentenceScreen:
    """What a sentence label puts on the page: a message, and (unless after an error) the
    answer's sentences anew, the one picked next and the item's state with fresh ids."""
    message: str
    kind: str = "info"
    sentences: list[AnswerSentence] | None = None
    picked: int | None = None
    shown: Shown | None = None


def label_sentence(context: UiContext, view: QueueView, typed_name: str | None,
                   shown: Shown | None, picked: str | None, label: str,
                   request: Any = None) -> SentenceScreen:
    """Store `label` on the picked sentence (its number on screen) of the answer shown, and
    pick the next sentence. Refused when no answer is shown, when the dataset picked is not
    the item's, and (by the store) when the answer's text changed since it was shown."""
    if shown is None or not shown.sentences or shown.answer_text is None:
        return SentenceScreen("No sentence label written: no answer with sentences is shown "
                              "(tick 'Show the answer of the newest run').", "warning")
    if shown.dataset != view.dataset:
        return SentenceScreen(f"No sentence label written: the item on screen is of dataset "
                              f"{shown.dataset!r}, not {view.dataset!r}.", "error")
    try:
        index = int(picked or 0)
    except ValueError:
        index = 0
    if not 1 <= index <= len(shown.sentences):
        return SentenceScreen("No sentence label written: pick a sentence first (j / k).",
                              "warning")
    try:
        name = _signed_in(context, typed_name, request)
        record = sentence_labelling.label_sentence(
            context.store, shown.dataset, shown.sample_id, name, label,
            span=shown.sentences[index - 1], answer_text=shown.answer_text,
            request_id=shown.sentence_request_ids.get(f"{index}:{label}"))
        item = labelling.annotation_item(context.store, shown.dataset, shown.sample_id, name,
                                         blind=view.blind)
        sentences = sentence_labelling.item_sentences(context.store, item, name)
    except UserError as error:
        return SentenceScreen(f"No sentence label written: {error}", "error")
    verb = "Stored" if record.stored else "Unchanged"
    spans = tuple((s.start, s.end) for s in sentences)
    return SentenceScreen(
        f"{verb}: sentence {index} of {shown.sample_id} is {record.label} for {name}.",
        "info", sentences, min(index + 1, len(sentences)),
        replace(shown, sentences=spans).with_fresh_sentence_ids())


def sentence_choice(sentence: AnswerSentence) -> str:
    """A sentence as its line in the picker: its number and text, the judge's mark and the
    labels on it. Shown as text (Gradio escapes a choice's label)."""
    parts = [f"{sentence.index}. {sentence.text}"]
    if sentence.score is not None:
        mark = "supported" if sentence.supported else "NOT supported"
        parts.append(f"judge: {mark} ({sentence.score:.2f})")
    if sentence.mine:
        parts.append(f"yours: {sentence.mine}")
    parts.extend(f"{who}: {value}" for who, value in sentence.others.items())
    return " · ".join(parts)


def sentence_outputs(sentences: list[AnswerSentence], picked: int | None) -> tuple[Any, Any]:
    """(the sentence box, the picker) for `sentences`, with `picked` chosen."""
    choices = [(sentence_choice(s), str(s.index)) for s in sentences]
    return (gr.update(visible=bool(sentences)),
            gr.update(choices=choices, value=str(picked) if sentences and picked else None))


def progress_html(context: UiContext, dataset: str, typed_name: str | None,
                  request: Any = None) -> str:
    """The annotator's progress bar: samples with their current label, of the dataset."""
    try:
        name: str | None = labelling.annotator_name(typed_name, _login(request))
    except AnnotatorMissingError:
        name = None
    try:
        mine = labelling.annotator_progress(context.store, dataset, name)
    except UserError as error:
        return message_html(str(error), "error")
    if name is None:
        return f'<div class="annotate-progress-text">{mine.total} samples in {esc(dataset)}.</div>'
    return progress_bar_html(mine.labelled, mine.skipped, mine.total)


def load_guidelines(context: UiContext, dataset: str) -> tuple[str, str]:
    """(Markdown to show, text for the editor) of the dataset's guidelines."""
    try:
        text = labelling.get_guidelines(context.store, dataset) or ""
    except UserError as error:
        return f"*{error}*", ""
    return text or "*No guidelines for this dataset yet: write them below.*", text


def save_guidelines(context: UiContext, dataset: str, markdown: str,
                    by: str | None = None) -> tuple[str, str]:
    """Store the guidelines everyone labels by (with logins, an admin's action); (message
    HTML, Markdown to show)."""
    try:
        require_admin(context.store, context.access, by, "edit the guidelines")
        labelling.set_guidelines(context.store, dataset, markdown)
    except UserError as error:
        return message_html(f"Not saved: {error}", "error"), f"*{error}*"
    return message_html(f"Guidelines of {dataset} saved."), load_guidelines(context, dataset)[0]


# -- wiring -------------------------------------------------------------------------------

def screen_outputs(screen: Screen) -> tuple[Any, ...]:
    """(message, item, shown, sentence box, sentence picker) for the components; after an
    error the item, its state and its sentences stay as they are."""
    message = message_html(screen.message, screen.kind) if screen.message else ""
    if screen.item is None:
        return message, *[gr.skip()] * 4
    return (message, screen.item, screen.shown,
            *sentence_outputs(screen.sentences, 1 if screen.sentences else None))


def label_result(record: LabelRecord | None, screen: Screen) -> dict[str, Any]:
    """What the annotate_label endpoint returns: the label stored on the sample (stored
    False: the request id, or the same label, was there already), and the next sample."""
    if record is None:
        raise gr.Error(screen.message)
    return {"stored": record.stored, "label": record.label, "label_id": record.id,
            "sample_id": record.sample_id, "annotator": record.annotator,
            "message": screen.message,
            "next_sample_id": screen.shown.sample_id if screen.shown else None}


MAX_OVERLAP = 1000  # annotators per sample: more than any team has (and than SQL's integers)
OPTIONAL_TEXT = ("note", "request_id", "annotator")  # None: no note, no id, the login's name


def check_label_call(*, overlap: Any, **texts: Any) -> None:
    """gr.Error naming the field, before anything is written, for a value of the wrong type
    sent to the annotate_label endpoint (its JSON is not checked against the signature)."""
    for name, value in texts.items():
        if not (isinstance(value, str) or (value is None and name in OPTIONAL_TEXT)):
            raise gr.Error(f"No label written: field {name!r} must be text, got "
                           f"{type(value).__name__}")
    if isinstance(overlap, bool) or not isinstance(overlap, int) or not (
            1 <= overlap <= MAX_OVERLAP):
        raise gr.Error(f"No label written: field 'overlap' must be a whole number from 1 to "
                       f"{MAX_OVERLAP}, got {overlap!r}")


def _view(dataset: str, strategy: str, overlap: float | None, blind: bool,
          show_answer: bool) -> QueueView:
    return QueueView(dataset, strategy, min(int(overlap or 1), MAX_OVERLAP), bool(blind),
                     bool(show_answer))


# Label, skip, undo, next item and progress touch only the store (milliseconds): they bypass
# Gradio's queue, where a Demo question or a run started from the Dashboard holds a worker
# for minutes, and run at once in the server's thread pool.
LABEL_EVENTS: dict[str, Any] = {"queue": False}


def build(context: UiContext, page: gr.Blocks, tab: gr.Tab) -> None:
    """Components and events of the tab (called inside its gr.Tab of `page`, the app's
    Blocks, whose load event fills the tab)."""
    names = dataset_names(context.store)
    with gr.Column(elem_id=ROOT_ID):
        with gr.Row():
            name_box = gr.Textbox(label="Your name (annotator)", placeholder="e.g. ann",
                                  elem_id="annotate-name", scale=2)
            # Custom values: datasets imported after start-up; the handlers check the name.
            dataset_box = gr.Dropdown(names, value=labelling.default_dataset(names),
                                      allow_custom_value=True, label="Dataset",
                                      elem_id="annotate-dataset", scale=2)
            strategy_box = gr.Radio(list(STRATEGIES), value=QueueView.strategy, label="Queue",
                                    elem_id="annotate-strategy", scale=3, info=VALUE_INFO)
            overlap_box = gr.Number(QueueView.overlap, precision=0, minimum=1,
                                    label="Annotators per sample (overlap k)",
                                    elem_id="annotate-overlap", scale=1)
        with gr.Row():
            blind_box = gr.Checkbox(
                QueueView.blind, elem_id="annotate-blind",
                label="Blind mode: hide other annotators' labels and judge verdicts")
            answer_box = gr.Checkbox(QueueView.show_answer, elem_id="annotate-show-answer",
                                     label="Show the answer of the newest run")
        progress_view = gr.HTML(label="Progress", elem_id="annotate-progress")
        message_view = gr.HTML(message_html("Type your name above to start labelling."),
                               label="Message", elem_id="annotate-message")
        item_view = gr.HTML(label="Item", elem_id="annotate-item")
        with gr.Column(visible=False, elem_id=SENTENCES_ID) as sentence_box:
            sentence_pick = gr.Radio(
                [], label="Sentences of the answer: is each one said by the passages?",
                info="j / k pick a sentence and enter sentence mode, 1 / 2 / 3 mark it, "
                     "Esc goes back to the sample's keys", elem_id=SENTENCE_PICK_ID)
            with gr.Row():
                sentence_buttons = {
                    label: gr.Button(f"{hotkey.key} · sentence {label}", elem_id=hotkey.elem_id,
                                     size="sm")
                    for label, hotkey in SENTENCE_HOTKEYS.items()}
        with gr.Row():
            label_buttons = {label: gr.Button(f"{hotkey.key} · {label}", elem_id=hotkey.elem_id,
                                              variant="primary")
                             for label, hotkey in LABEL_HOTKEYS.items()}
            skip_button = gr.Button("s · skip", elem_id=SKIP_ID)
            undo_button = gr.Button("u · undo", elem_id=UNDO_ID)
            next_button = gr.Button("reload", elem_id="annotate-next", variant="secondary")
        note_box = gr.Textbox(label="Note (optional, saved with the label)", lines=2,
                              elem_id=NOTE_ID)
        with gr.Accordion("Guidelines", open=False, elem_id="annotate-guidelines"):
            guidelines_view = gr.Markdown(label="Guidelines", elem_id="annotate-guidelines-text")
            with gr.Accordion("Edit the guidelines", open=False):
                guidelines_editor = gr.Textbox(label="Guidelines (Markdown)", lines=10,
                                               elem_id="annotate-guidelines-editor")
                guidelines_save = gr.Button("Save guidelines", elem_id="annotate-guidelines-save")
                guidelines_message = gr.HTML(label="Message")
        gr.Markdown(_help_markdown(), elem_id="annotate-help")
        people_panel.build(context, page)
    # The name is not confidential; a fixed key keeps it readable across app restarts.
    remembered_name = gr.BrowserState("", storage_key="ragshield-annotator",
                                      secret="ragshield-annotator-name")
    shown_state = gr.State(None)
    shown_datasets = gr.State(shown_choices(names))

    controls = [dataset_box, strategy_box, overlap_box, blind_box, answer_box]
    screen = [message_view, item_view, shown_state, sentence_box, sentence_pick]
    action_outputs = [*screen, note_box]  # a label, skip or undo also clears the note

    def on_next(dataset, strategy, overlap, blind, show_answer, name, request: gr.Request):
        view = _view(dataset, strategy, overlap, blind, show_answer)
        return screen_outputs(next_item(context, view, name, request))

    def on_load(dataset, strategy, overlap, blind, show_answer, shown, request: gr.Request):
        """The datasets imported since start-up; with --auth, the login name, fixed, and its
        first item."""
        choices = datasets_unless_shown(context.store, shown)
        username = _login(request)
        if not username:
            return gr.skip(), *choices, *[gr.skip()] * len(screen)
        return (gr.update(value=username, interactive=False), *choices,
                *on_next(dataset, strategy, overlap, blind, show_answer, username, request))

    def on_remembered(remembered, dataset, strategy, overlap, blind, show_answer, name,
                      request: gr.Request):
        """The name this browser used last, into an empty name box, and its first item.
        A BrowserState reads its value when its tab is first shown and reports a change."""
        if _login(request) or not remembered or (name or "").strip():
            return gr.skip()
        return remembered, *on_next(dataset, strategy, overlap, blind, show_answer, remembered,
                                    request)

    def after_action(result: Screen) -> tuple[Any, ...]:
        return *screen_outputs(result), ("" if result.item is not None else gr.skip())

    def nothing_shown(action: str) -> tuple[Any, ...]:
        return (message_html(f"No sample on screen to {action}.", "warning"),
                *[gr.skip()] * (len(action_outputs) - 1))

    def on_label(label: str):
        def handler(dataset, strategy, overlap, blind, show_answer, name, note,
                    shown: Shown | None, request: gr.Request):
            if shown is None:
                return nothing_shown("label")
            view = _view(dataset, strategy, overlap, blind, show_answer)
            return after_action(label_sample(context, view, name, shown.sample_id, label, note,
                                             shown.request_ids[label], request, shown)[1])
        return handler

    def on_sentence(label: str):
        def handler(dataset, strategy, overlap, blind, show_answer, name, picked,
                    shown: Shown | None, request: gr.Request):
            view = _view(dataset, strategy, overlap, blind, show_answer)
            result = label_sentence(context, view, name, shown, picked, label, request)
            message = message_html(result.message, result.kind)
            if result.sentences is None:
                return message, gr.skip(), gr.skip(), gr.skip()
            return message, *sentence_outputs(result.sentences, result.picked), result.shown
        return handler

    def on_skip(dataset, strategy, overlap, blind, show_answer, name, shown: Shown | None,
                request: gr.Request):
        if shown is None:
            return nothing_shown("skip")
        view = _view(dataset, strategy, overlap, blind, show_answer)
        return after_action(skip_sample(context, view, name, shown.sample_id, request))

    def on_undo(dataset, strategy, overlap, blind, show_answer, name, request: gr.Request):
        view = _view(dataset, strategy, overlap, blind, show_answer)
        return after_action(undo_last(context, view, name, request))

    def on_progress(dataset: str, name: str, request: gr.Request) -> str:
        return progress_html(context, dataset, name, request)

    def annotate_label(dataset: str, sample_id: str, label: str, note: str, request_id: str,
                       annotator: str, strategy: str = "unlabelled", overlap: int = 1,
                       request: gr.Request = None) -> dict:  # type: ignore[assignment]
        """Label a sample, once per request_id. With --auth the login name is the annotator.
        Returns the label stored on the sample and the next sample's id."""
        check_label_call(dataset=dataset, sample_id=sample_id, label=label, note=note,
                         request_id=request_id, annotator=annotator, strategy=strategy,
                         overlap=overlap)
        view = QueueView(dataset, strategy, overlap)
        return label_result(*label_sample(context, view, annotator, sample_id, label, note,
                                          request_id, request))

    page.load(on_load, [*controls, shown_datasets],
              [name_box, dataset_box, shown_datasets, *screen], api_name="annotate_open",
              api_visibility="private")
    tab.select(partial(datasets_unless_shown, context.store), shown_datasets,
               [dataset_box, shown_datasets], api_visibility="private")
    remembered_name.change(on_remembered, [remembered_name, *controls, name_box],
                           [name_box, *screen], api_name="annotate_restore_name",
                           api_visibility="private")
    # Gradio drops a trigger that comes while its listener is pending ("once", the default):
    # a name typed just after a dataset was picked was lost. The screen follows the newest.
    gr.on([next_button.click, name_box.submit, name_box.blur, dataset_box.input,
           strategy_box.input, overlap_box.input, blind_box.input, answer_box.input],
          on_next, [*controls, name_box], screen, api_name="annotate_next",
          trigger_mode="always_last", **LABEL_EVENTS)
    gr.on([name_box.submit, name_box.blur], lambda name: name, name_box, remembered_name,
          api_name="annotate_remember_name", api_visibility="private",
          trigger_mode="always_last")
    for label, button in label_buttons.items():
        button.click(on_label(label), [*controls, name_box, note_box, shown_state],
                     action_outputs, api_name=f"annotate_{label}", api_visibility="private",
                     **LABEL_EVENTS)
    for label, button in sentence_buttons.items():
        button.click(on_sentence(label), [*controls, name_box, sentence_pick, shown_state],
                     [message_view, sentence_box, sentence_pick, shown_state],
                     api_name=f"annotate_sentence_{label}", api_visibility="private",
                     **LABEL_EVENTS)
    skip_button.click(on_skip, [*controls, name_box, shown_state], action_outputs,
                      api_name="annotate_skip", **LABEL_EVENTS)
    undo_button.click(on_undo, [*controls, name_box], action_outputs, api_name="annotate_undo",
                      **LABEL_EVENTS)
    gr.api(annotate_label, api_name="annotate_label", **LABEL_EVENTS)
    # The progress follows the item (a label, skip or undo changes it) in its own event, so
    # that its counts never delay the next item.
    gr.on([item_view.change, name_box.blur], on_progress, [dataset_box, name_box],
          progress_view, api_name="annotate_progress", **LABEL_EVENTS)
    gr.on([page.load, dataset_box.change], partial(load_guidelines, context), dataset_box,
          [guidelines_view, guidelines_editor], api_name="annotate_guidelines")

    def on_save_guidelines(dataset: str, text: str, request: gr.Request) -> tuple[str, str]:
        return save_guidelines(context, dataset, text, getattr(request, "username", None))

    guidelines_save.click(on_save_guidelines, [dataset_box, guidelines_editor],
                          [guidelines_message, guidelines_view],
                          api_name="annotate_guidelines_save")
