"""The Demo tab: a question goes in (typed and retrieved from a corpus, or a stored sample
with its own passages), the system answers or abstains, and the page shows why: the
passages, the answer, each judge's verdict as it arrives, the decision and the fallback.
A threshold panel shows what a threshold on a judge's score would have done on a stored run.

The handlers are plain functions of the UiContext and plain values; `build` only wires them.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, fields
from functools import partial
from typing import Any, Iterator, assert_never

import gradio as gr

from ragshield.config import Settings
from ragshield.errors import UserError
from ragshield.services.data.datasets import dataset_names
from ragshield.services.learning.policies import policy_sources
from ragshield.services.questions.ask_choices import (ANSWERERS, CONFIGURED_MODEL as CONFIGURED,
                                                      JUDGE_MODEL_CHOICES, JUDGE_MODEL_NOTE,
                                                      LARGER_MODEL, MODEL_CHOICES, MODEL_NOTE,
                                                      corpus_names, judge_choices, packaged_choice,
                                                      rule_choices, sample_choices)
from ragshield.services.questions.ask_types import (ABSTAIN_FALLBACK, ASK_DEFAULTS, FALLBACKS,
                                                    LARGER_FALLBACK, NORAG_FALLBACK, AskRequest,
                                                    Prepared)
from ragshield.services.questions.ask_events import (Answered, Decided, FellBack, Judged, Partial,
                                                     Recorded, Status)
from ragshield.services.questions.asking import PassageFinders, answer_and_judge, prepare
from ragshield.services.questions.demo_examples import DemoExample, demo_request, read_examples
from ragshield.services.questions.settlement import (MAX_NOISE, RETRIEVAL_MODES, AskInputError,
                                                     defaults, one_of, settle)
from ragshield.types import KEEP, decision_word
from ragshield.ui import demo_render
from ragshield.ui.context import UiContext
from ragshield.ui.demo_render import AskView
from ragshield.ui.html_render import message_html
from ragshield.ui.page_questions import (END, Asking, Ended, Event, Failed, PageQuestions,
                                         QuestionStopped, holding, read_in_threads)
from ragshield.ui.picker_refresh import datasets_unless_shown, shown_choices
from ragshield.ui.threshold_panel import build_threshold_panel

TITLE = "Demo"
CSS = demo_render.CSS
HEAD = ""

SOURCES = ("type a question", "stored sample")
TYPED, STORED = SOURCES
ABSTAIN, NORAG, LARGER = ABSTAIN_FALLBACK, NORAG_FALLBACK, LARGER_FALLBACK
LARGER_NOTE = ("larger-model answer: when the answer is not kept, the packaged larger model "
               f"({LARGER_MODEL}) answers the same question from the same passages, like a "
               "run's switch to a larger model.")

@dataclass(frozen=True)
class DemoForm:
    """The Demo form, as plain values: where the question comes from, and both the typed
    question and the picked sample (the radio button says which one counts)."""

    source: str = TYPED
    question: str = ""
    dataset: str = ASK_DEFAULTS.dataset
    sample_id: str | None = None
    corpus: str = ASK_DEFAULTS.corpus
    mode: str = ASK_DEFAULTS.mode
    k: int = ASK_DEFAULTS.k
    noise: int = ASK_DEFAULTS.noise
    answerer: str | None = ASK_DEFAULTS.answerer  # None: the configured one
    judges: tuple[str, ...] | None = ASK_DEFAULTS.judges  # None: the default set
    rule: str = ""  # "": the configured rule, as every face
    fallback: str = ASK_DEFAULTS.fallback
    model: str = CONFIGURED
    judge_model: str = CONFIGURED

    def request(self) -> AskRequest:
        """The ask this form stands for; AskInputError for a source that is neither."""
        if self.source not in SOURCES:
            raise AskInputError(f"source must be one of {', '.join(SOURCES)}")
        stored = self.source == STORED
        return AskRequest(question=None if stored else self.question,
                          sample_id=(self.sample_id or "") if stored else None,
                          dataset=self.dataset, corpus=self.corpus,
                          mode=one_of(RETRIEVAL_MODES, self.mode, "mode"), k=self.k,
                          noise=self.noise, answerer=self.answerer, judges=self.judges,
                          rule=self.rule or None,
                          fallback=one_of(FALLBACKS, self.fallback, "fallback"),
                          model=packaged_choice(self.model),
                          judge_model=packaged_choice(self.judge_model))


# The form's inputs, in this order everywhere: the components, an example's values, on_ask.
FORM_FIELDS = tuple(field.name for field in fields(DemoForm))


def form_values(form: DemoForm) -> list[Any]:
    """The form's values in the order of its inputs (FORM_FIELDS), as Gradio takes them."""
    return [list(value) if isinstance(value, tuple) else value
            for value in (getattr(form, name) for name in FORM_FIELDS)]


def _in_background(context: UiContext, prepared: Prepared, asking: Asking) -> None:
    """The model work of one question, reported event by event; always ends with END. A
    question stopped (page_questions.py) ends at its next step."""
    try:
        with holding(context.gate.turn(prepared), asking):
            asking.post(Status("Answering…"))
            answer_and_judge(context.store, context.settings, context, prepared, asking.post)
    except QuestionStopped:
        pass  # a newer question of the page took over, or the page cancelled this one
    except Exception as exc:  # handed to the page, which shows it or re-raises it
        asking.events.put(Failed(exc))
    finally:
        asking.events.put(END)


def _apply(view: AskView, event: Event) -> None:
    """Update the view with one event of the model thread."""
    match event:
        case Status(text):
            view.status = text
        case Partial(text):
            view.partial = text
            view.status = "Writing the answer…"
        case Answered(answer, model):
            view.answer, view.answer_model = answer, model
        case Judged(verdict):
            view.verdicts.append(verdict)
        case Decided(decision):
            view.decision = decision
        case FellBack(fallback):
            view.fallback = fallback
        case Recorded(record):
            view.record = record
        case Failed(error):
            if not isinstance(error, UserError):
                raise error
            view.error = str(error)
        case Ended():
            pass  # the page's loop ends on it before it gets here
        case _:
            assert_never(event)
    if isinstance(event, (Answered, Judged, Decided)):
        # The decision comes as soon as the rule's judges are in; the others may still run.
        judging = view.decision is None or len(view.verdicts) < len(view.judges)
        view.status = (f"Judging… {len(view.verdicts)} of {len(view.judges)} judges done"
                       if judging or decision_word(view.decision) == KEEP
                       else "Preparing the fallback…")


def ask(context: UiContext, form: DemoForm, finders: PassageFinders | None = None,
        asking: Asking | None = None) -> Iterator[str]:
    """The page's HTML after each step: passages, answer, each verdict, decision, fallback.
    Once `asking` is stopped, nothing more (and no model work is started)."""
    asking = asking or Asking()
    started = time.monotonic()
    try:
        yield message_html("Finding the passages…")
        settled = settle(context.store, context.settings, form.request())
        prepared = prepare(context.store, context.settings, settled,
                           finders or PassageFinders(context.settings))
    except UserError as exc:
        yield message_html(str(exc), "error")
        return
    view = AskView(question=prepared.sample.question, source=prepared.source,
                   passages=prepared.sample.passages,
                   judges=[judge.name for judge in prepared.judges], status="Answering…",
                   rule_reason=prepared.rule_reason)
    if asking.stopped:
        return
    yield view.html()
    context.jobs.start("question", prepared.sample.id,
                       lambda _job: _in_background(context, prepared, asking))
    for event in iter(asking.events.get, END):
        if asking.stopped:
            return
        _apply(view, event)
        yield view.html()
    if asking.stopped:
        return
    view.status = ("Stopped by an error." if view.error else
                   f"Done in {time.monotonic() - started:.1f} s.")
    if view.replayed:
        view.status += " Every model call was stored: replayed from the call cache."
    yield view.html()


# -- wiring -------------------------------------------------------------------------------

INTRO = ("Ask a question, or pick a stored sample, and watch the system decide whether its "
         "answer deserves to be shown: the passages it read, its answer, each judge's verdict "
         "as it arrives, the decision, and what is shown instead when it abstains.")


def build(context: UiContext, page: gr.Blocks, tab: gr.Tab) -> None:
    """Components and events of the tab (called inside its gr.Tab `tab` of `page`, the app's
    Blocks, whose load event fills the tab; opening the tab again re-reads the default rule
    and the datasets, which the Dashboard and the Data tab change)."""
    settings = context.settings
    finders = PassageFinders(settings)
    questions = PageQuestions()  # one question at a time per page
    gr.Markdown(INTRO)
    example_buttons = _example_buttons()
    # The dropdowns take any value: their choices change after start (new datasets, samples,
    # corpora, runs; the rules of the chosen judges) and API clients pass values directly;
    # the handlers report unknown ones.
    with gr.Row():
        with gr.Column(scale=2):
            source = gr.Radio(list(SOURCES), value=TYPED, label="Question from")
            question = gr.Textbox(label="Your question (answered from the corpus)", lines=2,
                                  placeholder="e.g. Who designed the Eiffel Tower?")
            with gr.Row():
                datasets = dataset_names(context.store)
                dataset = gr.Dropdown(datasets, value=ASK_DEFAULTS.dataset, label="Dataset",
                                      allow_custom_value=True)
                sample = gr.Dropdown(_initial_samples(context), value=None,
                                     label="Stored sample (uses its own passages)",
                                     allow_custom_value=True)
            with gr.Accordion("Retrieval", open=False):
                corpus = gr.Dropdown(corpus_names(context.settings.corpora_dir),
                                     value=ASK_DEFAULTS.corpus,
                                     label="Corpus (typed questions, and noise chunks)",
                                     allow_custom_value=True)
                mode = gr.Dropdown(list(RETRIEVAL_MODES), value=ASK_DEFAULTS.mode,
                                   label="Retrieval mode")
                k = gr.Slider(1, 10, value=ASK_DEFAULTS.k, step=1, label="k: passages retrieved")
                noise = gr.Slider(0, MAX_NOISE, value=ASK_DEFAULTS.noise, step=1,
                                  label="Noise: random corpus chunks added")
            answerer = gr.Dropdown(list(ANSWERERS), label="Answerer",
                                   value=settings.answerer if settings.answerer in ANSWERERS
                                   else None)
            built = rule_defaults(context)
            fast, rules, rule_value = built
            judges = gr.CheckboxGroup(judge_choices(settings), value=fast, label="Judges")
            with gr.Row():
                all_judges = gr.Button("All judges", size="sm")
                fast_judges = gr.Button("Fast set", size="sm")
            rule = gr.Dropdown(rules, value=rule_value, label="Decision rule",
                               allow_custom_value=True)
            fallback = gr.Radio(list(FALLBACKS), value=ABSTAIN, label="When it abstains, show",
                                info=LARGER_NOTE)
            with gr.Row():
                model = gr.Dropdown(list(MODEL_CHOICES), value=CONFIGURED,
                                    label="Answer model", info=MODEL_NOTE)
                judge_model = gr.Dropdown(list(JUDGE_MODEL_CHOICES), value=CONFIGURED,
                                          label="Judge model", info=JUDGE_MODEL_NOTE)
            ask_button = gr.Button("Ask", variant="primary")
        with gr.Column(scale=3):
            result = gr.HTML(message_html("The answer and the judges' verdicts appear here."),
                             elem_id="demo-result")
    build_threshold_panel(context)

    # Its parameters come in FORM_FIELDS' order (the inputs'), before the request.
    async def on_ask(source_value: str, question_text: str, dataset_name: str,
                     sample_id: str | None, corpus_name: str, mode_name: str, k_value: float,
                     noise_value: float, answerer_name: str, judge_names: list[str] | None,
                     rule_name: str | None, fallback_name: str, model_name: str | None,
                     judge_model_name: str | None = CONFIGURED,
                     request: gr.Request | None = None) -> AsyncIterator[str]:
        form = DemoForm(source_value, question_text or "", dataset_name or "", sample_id,
                        corpus_name or "", mode_name, int(k_value), int(noise_value),
                        answerer_name, tuple(judge_names or ()), rule_name or "", fallback_name,
                        model_name or CONFIGURED, judge_model_name or CONFIGURED)
        page = getattr(request, "session_hash", None)
        asking = questions.begin(page)
        try:
            async for html in read_in_threads(ask(context, form, finders, asking), asking):
                yield html
        finally:
            questions.end(page, asking)

    def on_dataset(dataset_name: str) -> tuple[gr.Dropdown, str]:
        try:
            choices = sample_choices(context.store, dataset_name)
        except UserError as exc:
            return gr.Dropdown(choices=[], value=None), message_html(str(exc), "error")
        return (gr.Dropdown(choices=choices, value=None),
                message_html(f"Dataset {dataset_name}: {len(choices)} "
                             f"sample{'' if len(choices) == 1 else 's'}; pick one."))

    def on_judges(judge_names: list[str] | None, rule_name: str | None) -> gr.Dropdown:
        """The rules that fit the ticked judges; the chosen one where it still fits, else the
        default where it fits (the judges may change with the defaults, after a pin, before
        the rule shown does), else majority."""
        judges, sources = list(judge_names or ()), policy_sources(context.store)
        choices, value = rule_choices(judges, rule_name, sources)
        if value != rule_name:
            choices, value = rule_choices(
                judges, defaults(context.settings, context.store).rule.rule, sources)
        return gr.Dropdown(choices=choices, value=value)

    components = {"source": source, "question": question, "dataset": dataset,
                  "sample_id": sample, "corpus": corpus, "mode": mode, "k": k, "noise": noise,
                  "answerer": answerer, "judges": judges, "rule": rule, "fallback": fallback,
                  "model": model, "judge_model": judge_model}
    assert set(components) == set(FORM_FIELDS), "the Demo's inputs must be DemoForm's fields"
    form_inputs = [components[name] for name in FORM_FIELDS]
    # Ask (or Enter) while a question runs starts the new question at once ("multiple": a
    # click's default, "once", dropped it), which ends the page's earlier one
    # (page_questions.py): only the newest question of a page is shown.
    gr.on([ask_button.click, question.submit], on_ask, inputs=form_inputs, outputs=result,
          api_name="demo_ask", trigger_mode="multiple")
    for button, example in example_buttons:
        button.click(lambda e=example: example_form(e, settings),
                     outputs=form_inputs, api_visibility="private").then(
            on_ask, inputs=form_inputs, outputs=result, api_visibility="private")
    dataset.change(on_dataset, inputs=dataset, outputs=[sample, result], api_name="demo_samples")
    judges.change(on_judges, inputs=[judges, rule], outputs=rule, api_name="demo_rules")
    all_judges.click(lambda: judge_choices(settings), outputs=judges,
                     api_name="demo_all_judges")
    fast_judges.click(lambda: list(defaults(settings, context.store).judges),
                      outputs=judges, api_name="demo_fast_judges")
    applied = gr.State(built)  # the defaults this page shows
    gr.on([page.load, tab.select], lambda shown: followed_defaults(context, shown), applied,
          [judges, rule, applied], api_visibility="private")
    shown_datasets = gr.State(shown_choices(datasets))
    gr.on([page.load, tab.select], partial(datasets_unless_shown, context.store),
          shown_datasets, [dataset, shown_datasets], api_visibility="private")
    # Picking a sample or typing switches the question's source (in the browser only).
    sample.input(None, outputs=source, js=f"() => {json.dumps(STORED)}")
    question.input(None, outputs=source, js=f"() => {json.dumps(TYPED)}")


def rule_defaults(context: UiContext) -> tuple[list[str], list[str], str]:
    """The judges the form starts with, and the rules offered with the one chosen: those of
    the default rule (the policy pinned on the Dashboard, else the configured rule)."""
    found = defaults(context.settings, context.store)
    judges = list(found.judges)
    rules, rule = rule_choices(judges, found.rule.rule, policy_sources(context.store))
    return judges, rules, rule


def followed_defaults(context: UiContext,
                      shown: tuple[list[str], list[str], str]) -> tuple:
    """The judges and the rule of a default pinned or unpinned since the page showed
    `shown` (at a page load, or when the tab is opened again after a pin on the Dashboard),
    and the defaults now shown; left alone otherwise, so nothing the person set is undone."""
    now = rule_defaults(context)
    if now == tuple(shown):
        return gr.skip(), gr.skip(), gr.skip()
    judges, rules, rule = now
    return gr.CheckboxGroup(value=judges), gr.Dropdown(choices=rules, value=rule), now


def example_form(example: DemoExample, settings: Settings) -> list[Any]:
    """The form's values for an example, in the order of the form's inputs: the request the
    example was recorded with (demo_examples.demo_request), so a click replays it."""
    asked = demo_request(example.sample_id, settings, example.noise)
    return form_values(DemoForm(
        source=STORED, dataset=asked.dataset, sample_id=asked.sample_id, corpus=asked.corpus,
        mode=asked.mode, k=asked.k, noise=asked.noise, answerer=asked.answerer,
        judges=tuple(asked.judges or ()), rule=asked.rule or "", fallback=asked.fallback))


def _example_buttons() -> list[tuple[gr.Button, DemoExample]]:
    """A row of buttons, one per shipped example question (none when none ship)."""
    examples = read_examples()
    if not examples:
        return []
    gr.Markdown("**Examples** (stored demo samples, replayed from the shipped demo run): "
                + " ".join(f"*{example.title}*: {example.shows}" for example in examples))
    with gr.Row():
        return [(gr.Button(example.title, size="sm", elem_classes="rs-demo-example"), example)
                for example in examples]


def _initial_samples(context: UiContext) -> list[tuple[str, str]]:
    try:
        return sample_choices(context.store, ASK_DEFAULTS.dataset)
    except UserError:
        return []
