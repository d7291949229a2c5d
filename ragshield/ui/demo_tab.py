"""The Demo tab: a question goes in (typed and retrieved from a corpus, or a stored sample
with its own passages), the system answers or abstains, and the page shows why: the
passages, the answer, each judge's verdict as it arrives, the decision and the fallback.
A threshold panel shows what a threshold on a judge's score would have done on a stored run.

The handlers are plain functions of the UiContext and plain values; `build` only wires them.
"""

from __future__ import annotations

import json
import threading
import time
import zlib
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, replace
from queue import Queue
from typing import Any, Callable, Iterator, get_args

import gradio as gr

from ragshield.answerers.base import Answerer
from ragshield.answerers.norag import NoRagAnswerer
from ragshield.answerers.registry import ANSWERERS, make_answerer
from ragshield.cli.errors import USER_ERRORS
from ragshield.config import Settings
from ragshield.datasets.demo import DEMO_DATASET
from ragshield.judges.base import Judge
from ragshield.judges.registry import JUDGES, make_judges, quick_judges
from ragshield.judging import DEFAULT_DECISION_RULE, decision_word, judge_sample, judging_order
from ragshield.llm.base import LLM
from ragshield.llm.traced import TracedLLM
from ragshield.retrieval.corpus_store import list_corpora
from ragshield.retrieval.demo_corpus import DEMO_CORPUS_NAME, open_corpus
from ragshield.retrieval.factory import RetrievalMode
from ragshield.retrieval.noise import inject_noise
from ragshield.retrieval.passage_finder import PassageFinder
from ragshield.store.samples import dataset_names, list_samples, load_sample
from ragshield.types import Answer, Sample
from ragshield.ui import demo_render
from ragshield.ui.context import UiContext
from ragshield.ui.demo_render import AskView, Fallback
from ragshield.ui.threshold_panel import build_threshold_panel
from ragshield.ui.html_render import message_html

TITLE = "Demo"
CSS = demo_render.CSS
HEAD = ""

SOURCES = ("type a question", "stored sample")
TYPED, STORED = SOURCES
FALLBACKS = ("abstain message", "No-RAG answer", "larger-model answer")
ABSTAIN, NORAG, LARGER = FALLBACKS
LARGER_NOTE = ("larger-model answer: the question is answered and judged by the small "
               "packaged model (SmolLM2-135M); when it does not keep its answer, the default "
               "model answers instead, like a run's switch to a larger model.")
# Free and cheap judges (each judge states its cost) and the default rule's judge.
FAST_JUDGES = tuple(quick_judges(DEFAULT_DECISION_RULE))
POOLED_RULES = ("majority", "all")
RETRIEVAL_MODES: tuple[str, ...] = get_args(RetrievalMode)
MAX_NOISE = 5
class DemoInputError(ValueError):
    """A field of the Demo form is missing or does not fit the others."""


# -- asking -----------------------------------------------------------------------------

@dataclass(frozen=True)
class AskRequest:
    """The Demo form, as plain values."""

    source: str = TYPED
    question: str = ""
    dataset: str = DEMO_DATASET
    sample_id: str | None = None
    corpus: str = DEMO_CORPUS_NAME
    mode: str = "hybrid"
    k: int = 3
    noise: int = 0
    answerer: str = "evidence"
    judges: tuple[str, ...] = FAST_JUDGES
    rule: str = "majority"
    fallback: str = ABSTAIN


def check_request(request: AskRequest) -> None:
    """Raise DemoInputError naming the field at fault (the library checks judge names,
    corpora, datasets and samples itself)."""
    if request.source not in SOURCES:
        raise DemoInputError(f"source must be one of {', '.join(SOURCES)}")
    if request.source == TYPED and not request.question.strip():
        raise DemoInputError("Type a question first (or pick a stored sample).")
    if request.source == STORED and not request.sample_id:
        raise DemoInputError("Pick a sample of the dataset first (or type a question).")
    if request.mode not in RETRIEVAL_MODES:
        raise DemoInputError(f"unknown retrieval mode {request.mode!r}; one of "
                             f"{', '.join(RETRIEVAL_MODES)}")
    if request.k < 1 or not 0 <= request.noise <= MAX_NOISE:
        raise DemoInputError(f"k must be at least 1 and noise between 0 and {MAX_NOISE}")
    if request.answerer not in ANSWERERS:
        raise DemoInputError(f"unknown answerer {request.answerer!r}; one of "
                             f"{', '.join(ANSWERERS)}")
    if not request.judges:
        raise DemoInputError("Choose at least one judge.")
    if request.rule not in (*POOLED_RULES, *request.judges):
        raise DemoInputError(f"decision rule {request.rule!r} must be one of the chosen "
                             f"judges, majority or all")
    if request.fallback not in FALLBACKS:
        raise DemoInputError(f"fallback must be one of {', '.join(FALLBACKS)}")


class PassageFinders:
    """Retrievers kept between questions: building one loads the corpus and the embedding
    model (seconds), so the few most recently used settings are kept."""

    def __init__(self, settings: Settings, size: int = 4) -> None:
        self.settings, self.size = settings, size
        self._finders: OrderedDict[tuple[str, str, int, int], PassageFinder] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, corpus: str, mode: str, k: int, noise: int) -> PassageFinder:
        key = (corpus, mode, k, noise)
        with self._lock:
            if key in self._finders:
                self._finders.move_to_end(key)
                return self._finders[key]
        finder = PassageFinder(corpus, mode, k, noise=noise,  # type: ignore[arg-type]
                               settings=self.settings)
        with self._lock:
            self._finders[key] = finder
            while len(self._finders) > self.size:
                self._finders.popitem(last=False)
        return finder


def build_sample(context: UiContext, request: AskRequest,
                 finders: PassageFinders) -> tuple[Sample, str]:
    """The sample to judge and where its passages come from, in words."""
    if request.source == STORED:
        sample = load_sample(context.store, request.dataset, request.sample_id or "")
        source = f"sample {sample.id} of dataset {request.dataset}, with its own passages"
        if request.noise:
            corpus = open_corpus(request.corpus, context.settings)
            seed = zlib.crc32(sample.question.encode())  # as PassageFinder seeds its noise
            sample = replace(sample, passages=inject_noise(sample.passages, corpus,
                                                           request.noise, seed=seed))
    else:
        question = request.question.strip()
        finder = finders.get(request.corpus, request.mode, request.k, request.noise)
        sample = Sample(id="ad-hoc", question=question, passages=finder.find(question))
        source = f"top {request.k} by {request.mode} from corpus {request.corpus}"
    if request.noise:
        source += f", plus {request.noise} random chunks of corpus {request.corpus}"
    return sample, source


Event = tuple[str, Any]  # (kind, payload), from the judging thread to the page
END = ("end", None)


class _ReportingAnswerer(Answerer):
    """Posts the base answer as soon as it exists (judge_sample reports only verdicts)."""

    def __init__(self, inner: Answerer, post: Callable[[Event], None]) -> None:
        super().__init__(inner.options)
        self.inner, self.post = inner, post
        self.name = inner.name  # type: ignore[misc]

    def answer(self, sample: Sample, llm: LLM) -> Answer:
        answer = self.inner.answer(sample, llm)
        self.post(("answer", (answer, llm.name)))
        return answer

    def generate(self, sample: Sample, llm: TracedLLM) -> Answer:
        return self.inner.generate(sample, llm)


@contextmanager
def _holding(lock: threading.Lock, post: Callable[[Event], None]) -> Iterator[None]:
    if not lock.acquire(blocking=False):
        post(("status", "Waiting for the model: another question is being judged…"))
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


def fallback_for(context: UiContext, strategy: str, sample: Sample, answerer: Answerer,
                 main: LLM) -> Fallback:
    """What replaces an answer that was not kept (call with the model lock held)."""
    if strategy == NORAG:
        return Fallback(strategy, NoRagAnswerer().answer(sample, main), main.name)
    if strategy == LARGER:
        larger = context.llm()
        return Fallback(strategy, answerer.answer(sample, larger), larger.name)
    return Fallback(strategy)


def _judge_in_background(context: UiContext, request: AskRequest, sample: Sample,
                         answerer: Answerer, judges: list[Judge],
                         post: Callable[[Event], None]) -> None:
    """The model work of one question, reported event by event; always ends with END."""
    try:
        with _holding(context.model_lock, post):
            post(("status", "Answering…"))
            main = context.llm(small=request.fallback == LARGER)
            result = judge_sample(sample, main, _ReportingAnswerer(answerer, post), judges,
                                  request.rule, on_verdict=lambda v: post(("verdict", v)))
            post(("decision", result.decision))
            if decision_word(result.decision) != "keep":
                post(("fallback", fallback_for(context, request.fallback, sample, answerer,
                                               main)))
    except Exception as exc:  # handed to the page, which shows it or re-raises it
        post(("error", exc))
    finally:
        post(END)


def _apply(view: AskView, kind: str, payload: Any) -> None:
    """Update the view with one event of the judging thread."""
    if kind == "status":
        view.status = payload
    elif kind == "answer":
        view.answer, view.answer_model = payload
    elif kind == "verdict":
        view.verdicts.append(payload)
    elif kind == "decision":
        view.decision = payload
    elif kind == "fallback":
        view.fallback = payload
    elif kind == "error":
        if not isinstance(payload, USER_ERRORS):
            raise payload
        view.error = str(payload)
    if kind in ("answer", "verdict"):
        view.status = f"Judging… {len(view.verdicts)} of {len(view.judges)} judges done"
    elif kind == "decision" and decision_word(payload) != "keep":
        view.status = "Preparing the fallback…"


def ask(context: UiContext, request: AskRequest,
        finders: PassageFinders | None = None) -> Iterator[str]:
    """The page's HTML after each step: passages, answer, each verdict, decision, fallback."""
    started = time.monotonic()
    try:
        check_request(request)
        judges = judging_order(make_judges(",".join(request.judges), context.settings))
        answerer = make_answerer(request.answerer)
        yield message_html("Finding the passages…")
        sample, source = build_sample(context, request, finders or PassageFinders(context.settings))
    except USER_ERRORS as exc:
        yield message_html(str(exc), "error")
        return
    view = AskView(question=sample.question, source=source, passages=sample.passages,
                   judges=[judge.name for judge in judges], status="Answering…")
    yield view.html()
    events: Queue[Event] = Queue()
    threading.Thread(target=_judge_in_background, daemon=True,
                     args=(context, request, sample, answerer, judges, events.put)).start()
    for kind, payload in iter(events.get, END):
        _apply(view, kind, payload)
        yield view.html()
    view.status = ("Stopped by an error." if view.error else
                   f"Done in {time.monotonic() - started:.1f} s.")
    yield view.html()


def rule_choices(judges: list[str], rule: str | None) -> tuple[list[str], str]:
    """The decision rules that fit the chosen judges, and the rule to select."""
    choices = [*POOLED_RULES, *judges]
    return choices, rule if rule in choices else POOLED_RULES[0]


def corpus_choices(context: UiContext) -> list[str]:
    names = [manifest.name for manifest in list_corpora(context.settings.corpora_dir)]
    return list(dict.fromkeys([DEMO_CORPUS_NAME, *names]))


def sample_choices(context: UiContext, dataset: str) -> list[tuple[str, str]]:
    """(`id: question`, id) for each sample of the dataset; UnknownDatasetError if none."""
    return [(f"{s.id}: {s.question[:120]}", s.id) for s in list_samples(context.store, dataset)]


# -- wiring -------------------------------------------------------------------------------

INTRO = ("Ask a question, or pick a stored sample, and watch the system decide whether its "
         "answer deserves to be shown: the passages it read, its answer, each judge's verdict "
         "as it arrives, the decision, and what is shown instead when it abstains.")


def build(context: UiContext, page: gr.Blocks) -> None:
    """Components and events of the tab (called inside its gr.Tab of `page`, the app's
    Blocks, whose load event fills the tab)."""
    settings = context.settings
    finders = PassageFinders(settings)
    gr.Markdown(INTRO)
    # The dropdowns take any value: their choices change after start (new datasets, samples,
    # corpora, runs; the rules of the chosen judges) and API clients pass values directly;
    # the handlers report unknown ones.
    with gr.Row():
        with gr.Column(scale=2):
            source = gr.Radio(list(SOURCES), value=TYPED, label="Question from")
            question = gr.Textbox(label="Your question (answered from the corpus)", lines=2,
                                  placeholder="e.g. Who designed the Eiffel Tower?")
            with gr.Row():
                dataset = gr.Dropdown(dataset_names(context.store),
                                      value=DEMO_DATASET, label="Dataset",
                                      allow_custom_value=True)
                sample = gr.Dropdown(_initial_samples(context), value=None,
                                     label="Stored sample (uses its own passages)",
                                     allow_custom_value=True)
            with gr.Accordion("Retrieval", open=False):
                corpus = gr.Dropdown(corpus_choices(context), value=DEMO_CORPUS_NAME,
                                     label="Corpus (typed questions, and noise chunks)",
                                     allow_custom_value=True)
                mode = gr.Dropdown(list(RETRIEVAL_MODES), value="hybrid", label="Retrieval mode")
                k = gr.Slider(1, 10, value=3, step=1, label="k: passages retrieved")
                noise = gr.Slider(0, MAX_NOISE, value=0, step=1,
                                  label="Noise: random corpus chunks added")
            answerer = gr.Dropdown(list(ANSWERERS), label="Answerer",
                                   value=settings.answerer if settings.answerer in ANSWERERS
                                   else "evidence")
            fast = quick_judges(settings.decision_rule)
            judges = gr.CheckboxGroup(list(JUDGES), value=fast, label="Judges")
            with gr.Row():
                all_judges = gr.Button("All judges", size="sm")
                fast_judges = gr.Button("Fast set", size="sm")
            rules, rule_value = rule_choices(fast, settings.decision_rule)
            rule = gr.Dropdown(rules, value=rule_value, label="Decision rule",
                               allow_custom_value=True)
            fallback = gr.Radio(list(FALLBACKS), value=ABSTAIN, label="When it abstains, show",
                                info=LARGER_NOTE)
            ask_button = gr.Button("Ask", variant="primary")
        with gr.Column(scale=3):
            result = gr.HTML(message_html("The answer and the judges' verdicts appear here."),
                             elem_id="demo-result")
    build_threshold_panel(context)

    def on_ask(source_value: str, question_text: str, dataset_name: str, sample_id: str | None,
               corpus_name: str, mode_name: str, k_value: float, noise_value: float,
               answerer_name: str, judge_names: list[str] | None, rule_name: str | None,
               fallback_name: str) -> Iterator[str]:
        request = AskRequest(source_value, question_text or "", dataset_name or "", sample_id,
                             corpus_name or "", mode_name, int(k_value), int(noise_value),
                             answerer_name, tuple(judge_names or ()), rule_name or "",
                             fallback_name)
        yield from ask(context, request, finders)

    def on_dataset(dataset_name: str) -> tuple[gr.Dropdown, str]:
        try:
            choices = sample_choices(context, dataset_name)
        except USER_ERRORS as exc:
            return gr.Dropdown(choices=[], value=None), message_html(str(exc), "error")
        return (gr.Dropdown(choices=choices, value=None),
                message_html(f"Dataset {dataset_name}: {len(choices)} "
                             f"sample{'' if len(choices) == 1 else 's'}; pick one."))

    def on_judges(judge_names: list[str] | None, rule_name: str | None) -> gr.Dropdown:
        choices, value = rule_choices(list(judge_names or ()), rule_name)
        return gr.Dropdown(choices=choices, value=value)

    gr.on([ask_button.click, question.submit], on_ask,
          inputs=[source, question, dataset, sample, corpus, mode, k, noise, answerer, judges,
                  rule, fallback], outputs=result, api_name="demo_ask")
    dataset.change(on_dataset, inputs=dataset, outputs=[sample, result], api_name="demo_samples")
    judges.change(on_judges, inputs=[judges, rule], outputs=rule, api_name="demo_rules")
    all_judges.click(lambda: list(JUDGES), outputs=judges, api_name="demo_all_judges")
    fast_judges.click(lambda: quick_judges(settings.decision_rule), outputs=judges,
                      api_name="demo_fast_judges")
    # Picking a sample or typing switches the question's source (in the browser only).
    sample.input(None, outputs=source, js=f"() => {json.dumps(STORED)}")
    question.input(None, outputs=source, js=f"() => {json.dumps(TYPED)}")


def _initial_samples(context: UiContext) -> list[tuple[str, str]]:
    try:
        return sample_choices(context, DEMO_DATASET)
    except USER_ERRORS:
        return []
