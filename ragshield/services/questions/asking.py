"""Ask one question, typed or stored, and see whether its answer is kept: passages
(retrieved, given with the question, or the sample's own, with optional noise), the base
answer (generated, or given by an outside system), every judge's verdict, the decision under
a rule, and the fallback shown instead of a withheld answer. The Demo tab, `ragshield ask`
and the guard API all call `ask`; each asked question is kept in a live run
(services/questions/live_runs.py) unless the caller says not to. What the ask will do
(judges, rule, readers, answerer) is settled once, before, by services/questions/settlement.py."""

from __future__ import annotations

import threading
import zlib
from collections import OrderedDict
from dataclasses import replace
from typing import Protocol

from ragshield.answerers.base import Answerer
from ragshield.answerers.norag import NoRagAnswerer
from ragshield.answerers.registry import make_answerer
from ragshield.config import Settings
from ragshield.judge_budget import Budget
from ragshield.judging import judge_sample
from ragshield.llm.base import LLM
from ragshield.llm.no_model import NoModel
from ragshield.llm.packaged_models import LARGER_MODEL
from ragshield.llm.streaming import streaming_to
from ragshield.llm.traced import TracedLLM
from ragshield.retrieval.demo_corpus import open_corpus
from ragshield.retrieval.noise import inject_noise
from ragshield.retrieval.passage_finder import PassageFinder
from ragshield.services.questions.ask_events import (Answered, Decided, FellBack, Judged, Partial,
                                                     Post, Recorded)
from ragshield.services.questions.ask_types import (LARGER_FALLBACK, NORAG_FALLBACK,
                                                    AskRequest, AskResult, Fallback,
                                                    FallbackName, Prepared, Settlement)
from ragshield.services.questions.live_runs import keep_asked
from ragshield.services.questions.redaction import redaction
from ragshield.services.questions.settlement import settle
from ragshield.store.database import Store
from ragshield.store.samples import load_sample
from ragshield.types import KEEP, Answer, Sample, decision_word

ABSTAIN_MESSAGE = "I don't know. (The system is not confident enough in its answer to show it.)"


class Models(Protocol):
    """Where an ask gets its models: the configured one (None), or another by name (a
    packaged model; from the settings also a GGUF path or a served model's name)."""

    def llm(self, packaged: str | None = None) -> LLM: ...


class OpenedModels:
    """The configured model and the packaged ones, each opened on first use (loading takes
    a second and up to 2 GB) and wrapped in the store's call cache; safe across threads."""

    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings, self.store = settings, store
        self._opened: dict[str | None, LLM] = {}
        self._opening = threading.Lock()

    def llm(self, packaged: str | None = None) -> LLM:
        with self._opening:
            if packaged not in self._opened:
                from ragshield.llm.factory import make_llm, make_reader

                self._opened[packaged] = (
                    make_llm(self.settings, store=self.store) if packaged is None
                    else make_reader(self.settings, packaged, store=self.store))
            return self._opened[packaged]


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


def prepare(store: Store, settings: Settings, asked: AskRequest | Settlement,
            finders: PassageFinders | None = None) -> Prepared:
    """Everything before the first model call: the request settled (unless it comes
    settled), its answerer and its passages; user errors surface here, at once."""
    settled = asked if isinstance(asked, Settlement) else settle(store, settings, asked)
    answerer = make_answerer(settled.answerer)
    sample, source = _sample(store, settings, settled.request,
                             finders or PassageFinders(settings))
    return Prepared(settled, sample, source, answerer)


def _sample(store: Store, settings: Settings, request: AskRequest,
            finders: PassageFinders) -> tuple[Sample, str]:
    if request.sample_id is None and request.passages is None:  # typed: retrieved, noise too
        question = (request.question or "").strip()
        finder = finders.get(request.corpus, request.mode, request.k, request.noise)
        sample = Sample(id="ad-hoc", question=question, passages=finder.find(question),
                        given_answer=request.given_answer)
        source = f"top {request.k} by {request.mode} from corpus {request.corpus}"
    else:
        if request.sample_id is not None:
            sample = load_sample(store, request.dataset, request.sample_id)
            source = f"sample {sample.id} of dataset {request.dataset}, with its own passages"
        else:
            sample = Sample(id="ad-hoc", question=(request.question or "").strip(),
                            passages=list(request.passages or ()),
                            given_answer=request.given_answer)
            source = f"{len(sample.passages)} passages given with the question"
        if request.noise:
            corpus = open_corpus(request.corpus, settings)
            seed = zlib.crc32(sample.question.encode())  # as PassageFinder seeds its noise
            sample = replace(sample, passages=inject_noise(sample.passages, corpus,
                                                           request.noise, seed=seed))
    if request.noise:
        source += f", plus {request.noise} random chunks of corpus {request.corpus}"
    return sample, source


def fallback_for(models: Models, strategy: FallbackName, sample: Sample, answerer: Answerer,
                 main: LLM) -> Fallback:
    """What replaces an answer that was not kept."""
    if strategy == NORAG_FALLBACK:
        return Fallback(strategy, NoRagAnswerer().answer(sample, main), main.name)
    if strategy == LARGER_FALLBACK:
        larger = models.llm(LARGER_MODEL)
        return Fallback(strategy, answerer.answer(sample, larger), larger.name)
    return Fallback(strategy)


class _Reporting(Answerer):
    """Posts the answer's text as the model writes it (Partial, where the backend streams)
    and the base answer as soon as it exists (judge_sample reports only verdicts)."""

    def __init__(self, inner: Answerer, post: Post, model: str) -> None:
        super().__init__(inner.options)
        self.inner, self.post, self.model = inner, post, model
        self.name = inner.name  # type: ignore[misc]

    def answer(self, sample: Sample, llm: LLM) -> Answer:
        with streaming_to(lambda text: self.post(Partial(text))):
            answer = self.inner.answer(sample, llm)
        self.post(Answered(answer, self.model))
        return answer

    def generate(self, sample: Sample, llm: TracedLLM) -> Answer:
        return self.inner.generate(sample, llm)


def answer_and_judge(store: Store, settings: Settings, models: Models, prepared: Prepared,
                     post: Post | None = None, budget: Budget | None = None) -> AskResult:
    """The model work of one ask, each step posted as it happens. With the larger-model
    fallback, the packaged larger model answers when the first answer is withheld (the
    switch of a run). A model is opened only when the ask needs one (Prepared.needs_model);
    the caller serialises calls to an in-process model."""
    post = post or (lambda _event: None)
    request = prepared.request
    main: LLM = models.llm(request.model) if prepared.needs_model else NoModel()
    # Each reader opened before the judges start, so that no budget pays for its loading.
    names = prepared.readers.models(judge.name for judge in prepared.judges)
    readers = {name: models.llm(name) for name in names} if prepared.needs_model else {}

    def reader(judge: str) -> LLM:
        return readers.get(prepared.readers.reader(judge) or "", main)
    judged = judge_sample(prepared.sample, main, _Reporting(prepared.answerer, post, main.name),
                          prepared.judges, prepared.rule,
                          on_verdict=lambda verdict: post(Judged(verdict)),
                          order=list,  # prepare's order: deciding_first
                          reader=reader, budget=budget,
                          on_decision=lambda decision: post(Decided(decision)))
    result = AskResult(prepared, judged, main.name)
    result.redaction = redaction(judged, prepared.rule, request.on_unsupported)
    if result.redaction is not None:
        judged.decision = result.redaction.decision
        post(Decided(judged.decision))
    if decision_word(judged.decision) != KEEP:
        result.fallback = fallback_for(models, request.fallback, prepared.sample,
                                       prepared.answerer, main)
        post(FellBack(result.fallback))
    if request.keep_record:
        result.record = keep_asked(store, settings, result)
        post(Recorded(result.record))
    return result


def ask(store: Store, settings: Settings, models: Models, asked: AskRequest | Settlement,
        finders: PassageFinders | None = None, post: Post | None = None) -> AskResult:
    """`prepare` then `answer_and_judge`: one question, start to end."""
    return answer_and_judge(store, settings, models, prepare(store, settings, asked, finders),
                            post)
