"""Ask one question, typed or stored, and see whether its answer is kept: passages
(retrieved, given with the question, or the sample's own, with optional noise), the base
answer (generated, or given by an outside system), every judge's verdict, the decision under
a rule, and the fallback shown instead of a withheld answer. The Demo tab, `ragshield ask`
and the guard API all call `ask`; each asked question is kept in a live run
(services/questions/live_runs.py) unless the caller says not to."""

from __future__ import annotations

import threading
import zlib
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, Callable, NamedTuple, Protocol, Sequence, get_args

from ragshield.answerers.base import Answerer
from ragshield.answerers.norag import NoRagAnswerer
from ragshield.answerers.registry import ANSWERERS, GIVEN, make_answerer
from ragshield.config import (DEFAULT_DECISION_RULE, DEFAULT_RULE_REASON,
                              DEFAULT_RULE_SELF_READ_REASON, SELF_READ_RULE, Settings)
from ragshield.errors import UserError
from ragshield.fitted_readers import honour_fitted
from ragshield.judge_budget import Budget
from ragshield.judges.base import Judge
from ragshield.judges.judge_readers import SELF, JudgeReaders, answer_model_name, judge_readers
from ragshield.judges.registry import judge_names, make_judges, quick_judges
from ragshield.judging import (POOLED_RULES, Rule, choose_rule, deciding_first, judge_sample,
                               rule_judges)
from ragshield.llm.base import LLM
from ragshield.llm.no_model import NoModel
from ragshield.llm.packaged_models import LARGER_MODEL, PACKAGED_MODELS
from ragshield.llm.streaming import streaming_to
from ragshield.llm.traced import TracedLLM
from ragshield.policies.rules import parse_rule, policy_rule
from ragshield.retrieval.demo_corpus import open_corpus
from ragshield.retrieval.noise import inject_noise
from ragshield.retrieval.passage_finder import PassageFinder
from ragshield.services.learning.pinned_policy import pinned
from ragshield.services.questions.ask_types import (FALLBACKS, LARGER_FALLBACK, NORAG_FALLBACK,
                                                    AskRequest, AskResult, Fallback, Prepared)
from ragshield.services.questions.claim_marks import SUPPORT
from ragshield.services.questions.live_runs import keep_asked
from ragshield.services.questions.redaction import ON_UNSUPPORTED, REDACT, redaction
from ragshield.store.database import Store
from ragshield.store.policies import UnknownPolicyError
from ragshield.store.samples import load_sample
from ragshield.types import KEEP, Answer, RetrievalMode, Sample, decision_word

ABSTAIN_MESSAGE = "I don't know. (The system is not confident enough in its answer to show it.)"
RETRIEVAL_MODES: tuple[str, ...] = get_args(RetrievalMode)
MAX_NOISE = 5
MAX_QUESTION_CHARS = 2000
MAX_ANSWER_CHARS = 20_000  # of an answer given to judge, or an upstream's to pass on


class AskInputError(UserError, ValueError):
    """A field of an ask request is missing or does not fit the others."""


class DefaultRule(NamedTuple):
    """The rule that decides where none is named, and why it is the default, in words."""

    rule: str
    reason: str


def default_rule(settings: Settings, store: Store | None = None,
                 readers: JudgeReaders | None = None) -> DefaultRule:
    """The default rule of every face: the policy version pinned on the Dashboard (with
    `store`), else the configured one (RAGSHIELD_DECISION_RULE); the shipped default where
    its judges read from the packaged 1.5B, as it was fitted (`readers`, else the configured
    ones), else the judge measured best when they read from the answering model."""
    pin = pinned(store) if store is not None else None
    if pin is not None:
        return DefaultRule(pin.rule, pin.words)
    rule = settings.decision_rule
    if rule != DEFAULT_DECISION_RULE:
        return DefaultRule(rule, "the rule this server is set up with (RAGSHIELD_DECISION_RULE)")
    readers = readers or ask_readers(AskRequest(), settings)
    if all(readers.reader(judge) == LARGER_MODEL for judge in rule_judges(rule, ())):
        return DefaultRule(rule, DEFAULT_RULE_REASON)
    return DefaultRule(SELF_READ_RULE, DEFAULT_RULE_SELF_READ_REASON)


def default_judges(settings: Settings, rule: str | None = None,
                   store: Store | None = None) -> tuple[str, ...]:
    """The judges of an ask that names none, in every face: each free or cheap judge that
    `settings` can build, and the judges of the rule that decides (`rule`, else the default
    one; with `store`, a stored policy's judges too: a missing one adds none, and the ask
    that decides by it says it is missing)."""
    rule = rule or default_rule(settings, store).rule
    judges = quick_judges(rule, settings)
    parsed = parse_rule(rule)
    if store is not None and parsed is not None:
        from ragshield.services.learning.policies import get_policy  # loads the metrics stack

        try:
            policy_judges = get_policy(store, *parsed).judges
        except UnknownPolicyError:
            policy_judges = []
        judges += [judge for judge in policy_judges if judge not in judges]
    return tuple(judges)


def settle_rule(store: Store, rule: str | None, judges: Sequence[str],
                default: DefaultRule) -> tuple[Rule, str | None]:
    """The rule `judges` decide by, a policy rule read into its stored policy, and the note
    to show when the default did not fit them: `rule` when given, else `default` where it
    fits (a policy fits when the judges it reads are among `judges`), else majority."""
    parsed = parse_rule(default.rule) if rule is None else None
    if parsed is None:
        choice = choose_rule(rule, judges, default.rule)
        if parse_rule(choice.rule) is None:
            return choice.rule, choice.note
        from ragshield.services.learning.policies import resolve_rule  # loads the metrics stack

        return resolve_rule(store, choice.rule, judges), None
    from ragshield.services.learning.policies import get_policy

    policy = get_policy(store, *parsed)
    missing = [judge for judge in policy.judges if judge not in judges]
    if missing:
        return POOLED_RULES[0], (f"the default rule {default.rule!r} reads "
                                 f"{', '.join(missing)}, not among the chosen judges; "
                                 f"deciding by {POOLED_RULES[0]}")
    return policy, None


def _nul_field(request: AskRequest) -> str | None:
    """The first text of `request` holding a NUL character, which PostgreSQL's text cannot
    keep (a question asked is stored)."""
    texts: list[tuple[str, str | None]] = [("question", request.question)]
    for index, passage in enumerate(request.passages or ()):
        texts += [(f"passages[{index}].{name}", value) for name, value in (
            ("text", passage.text), ("title", passage.title), ("id", passage.doc_id))]
    if request.given_answer is not None:
        texts += [("answer", request.given_answer.text),
                  ("answer_model", request.given_answer.model)]
    return next((name for name, text in texts if text and "\x00" in text), None)


def check_request(request: AskRequest) -> None:
    """AskInputError naming the field at fault (judge names, corpora, datasets and samples
    are checked where they are looked up)."""
    if (request.question is None) == (request.sample_id is None):
        raise AskInputError("give a question or a stored sample, not both and not neither")
    if (nul := _nul_field(request)) is not None:
        raise AskInputError(f"{nul} holds a NUL character, which no store keeps")
    if request.question is not None and not request.question.strip():
        raise AskInputError("Type a question first (or pick a stored sample).")
    if request.question is not None and len(request.question) > MAX_QUESTION_CHARS:
        raise AskInputError(f"the question is longer than {MAX_QUESTION_CHARS} characters")
    if request.sample_id is not None and not request.sample_id:
        raise AskInputError("Pick a sample of the dataset first (or type a question).")
    if request.mode not in RETRIEVAL_MODES:
        raise AskInputError(f"unknown retrieval mode {request.mode!r}; one of "
                            f"{', '.join(RETRIEVAL_MODES)}")
    if request.k < 1 or not 0 <= request.noise <= MAX_NOISE:
        raise AskInputError(f"k must be at least 1 and noise between 0 and {MAX_NOISE}")
    if request.sample_id is not None and (request.passages is not None
                                          or request.given_answer is not None):
        raise AskInputError("passages and an answer come with a typed question; a stored "
                            "sample brings its own")
    if request.given_answer is not None and not request.given_answer.text.strip():
        raise AskInputError("the given answer is empty")
    if request.given_answer is not None and request.fallback == LARGER_FALLBACK:
        raise AskInputError("a given answer has no larger-model fallback: no model of ours "
                            "answered it")
    if request.judge_model is not None and request.judge_model not in (*PACKAGED_MODELS, SELF):
        raise AskInputError(f"unknown judge model {request.judge_model!r}; one of "
                            f"{', '.join((*PACKAGED_MODELS, SELF))}")
    if request.model is not None and request.model not in PACKAGED_MODELS:
        raise AskInputError(f"unknown model {request.model!r}; one of "
                            f"{', '.join(PACKAGED_MODELS)}")
    if request.model == LARGER_MODEL and request.fallback == LARGER_FALLBACK:
        raise AskInputError(f"the larger-model fallback asks {LARGER_MODEL}, which already "
                            "answers: answer with a smaller model")
    if (request.given_answer is None and request.answerer is not None
            and request.answerer not in ANSWERERS):
        raise AskInputError(f"unknown answerer {request.answerer!r}; one of "
                            f"{', '.join(ANSWERERS)}")
    if request.judges is not None and not request.judges:
        raise AskInputError("Choose at least one judge.")
    if request.fallback not in FALLBACKS:
        raise AskInputError(f"fallback must be one of {', '.join(FALLBACKS)}")
    if request.on_unsupported not in ON_UNSUPPORTED:
        raise AskInputError(f"on_unsupported must be one of {', '.join(ON_UNSUPPORTED)}")


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


def rule_reason(rule: Rule, asked: str | None, settings: Settings,
                note: str | None = None, default: DefaultRule | None = None) -> str:
    """Why `rule` decides an ask whose request named `asked`: the default's reason (the
    pinned policy, the measured default, the operator's setting; `default`, else the
    configured one), a policy's promise, the request's own choice, or the fallback `note`
    when the default did not fit the judges."""
    if note is not None:
        return note
    default = default or default_rule(settings)
    if isinstance(rule, str):
        if rule == default.rule:
            return default.reason
        return "chosen for this question" if asked is not None else "the default rule"
    if default.rule in (rule.rule, policy_rule(rule.name, None)):
        return f"{default.reason}: {rule.promise()}"
    return f"the stored policy {rule.rule}: {rule.promise()}"


def ask_readers(request: AskRequest, settings: Settings) -> JudgeReaders:
    """The model each judge of the ask reads from (judges/judge_readers.py), before the
    fitted judges are pinned to their own (prepare)."""
    return judge_readers(request.judge_model or settings.judge_model,
                         backend=ask_backend(request, settings),
                         answer_model=ask_answer_model(request, settings))


def ask_backend(request: AskRequest, settings: Settings) -> str:
    """The backend of the model that answers: a packaged model named in the request runs
    embedded whatever the settings say."""
    return "embedded" if request.model else settings.backend


def ask_answer_model(request: AskRequest, settings: Settings) -> str:
    """The name of the model that answers the ask, as readers are recorded."""
    return answer_model_name(ask_backend(request, settings), request.model or settings.model)


@dataclass(frozen=True)
class _Choices:
    """What decides a request, settled from the request and the store alone."""

    judges: list[Judge]
    rule: Rule
    note: str | None
    reason: str
    readers: JudgeReaders


def _choices(store: Store, settings: Settings, request: AskRequest) -> _Choices:
    check_request(request)
    readers = ask_readers(request, settings)
    default = default_rule(settings, store, readers)
    chosen = request.judges or default_judges(settings, request.rule or default.rule, store)
    if request.on_unsupported == REDACT and SUPPORT not in chosen:
        chosen = (*chosen, SUPPORT)  # redacting needs the claims it checks
    names = judge_names(",".join(chosen))
    rule, note = settle_rule(store, request.rule, names, default)
    readers = honour_fitted(readers, rule, names, settings, ask_answer_model(request, settings),
                            ask_backend(request, settings))
    judges = deciding_first(make_judges(",".join(names), settings, readers.options()), rule)
    return _Choices(judges, rule, note, rule_reason(rule, request.rule, settings, note, default),
                    readers)


def check_choices(store: Store, settings: Settings, request: AskRequest) -> list[Judge]:
    """The user errors of `prepare` that need neither the answer nor the passages (the
    question, the judges, the rule, the models): the guard's proxy asks before it pays its
    upstream for an answer it could not judge. Returns the judges that will run."""
    return list(_choices(store, settings, request).judges)


def prepare(store: Store, settings: Settings, request: AskRequest,
            finders: PassageFinders | None = None) -> Prepared:
    """Everything before the first model call; user errors surface here, at once."""
    choices = _choices(store, settings, request)
    answerer = make_answerer(GIVEN if request.given_answer is not None
                             else request.answerer or settings.answerer)
    sample, source = _sample(store, settings, request, finders or PassageFinders(settings))
    return Prepared(request, sample, source, answerer, choices.judges, choices.rule,
                    choices.note, choices.reason, choices.readers)


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


# (event, payload): "partial" (the answer so far), "answer", "verdict", "decision",
# "fallback", "record"
Post = Callable[[str, Any], None]


def fallback_for(models: Models, strategy: str, sample: Sample, answerer: Answerer,
                 main: LLM) -> Fallback:
    """What replaces an answer that was not kept."""
    if strategy == NORAG_FALLBACK:
        return Fallback(strategy, NoRagAnswerer().answer(sample, main), main.name)
    if strategy == LARGER_FALLBACK:
        larger = models.llm(LARGER_MODEL)
        return Fallback(strategy, answerer.answer(sample, larger), larger.name)
    return Fallback(strategy)


class _Reporting(Answerer):
    """Posts the answer's text as the model writes it ("partial", where the backend streams)
    and the base answer as soon as it exists (judge_sample reports only verdicts)."""

    def __init__(self, inner: Answerer, post: Post, model: str) -> None:
        super().__init__(inner.options)
        self.inner, self.post, self.model = inner, post, model
        self.name = inner.name  # type: ignore[misc]

    def answer(self, sample: Sample, llm: LLM) -> Answer:
        with streaming_to(lambda text: self.post("partial", text)):
            answer = self.inner.answer(sample, llm)
        self.post("answer", (answer, self.model))
        return answer

    def generate(self, sample: Sample, llm: TracedLLM) -> Answer:
        return self.inner.generate(sample, llm)


def answer_and_judge(store: Store, settings: Settings, models: Models, prepared: Prepared,
                     post: Post | None = None, budget: Budget | None = None) -> AskResult:
    """The model work of one ask, each step posted as it happens. With the larger-model
    fallback, the packaged larger model answers when the first answer is withheld (the
    switch of a run). A model is opened only when the ask needs one (Prepared.needs_model);
    the caller serialises calls to an in-process model."""
    post = post or (lambda _kind, _payload: None)
    request = prepared.request
    main: LLM = models.llm(request.model) if prepared.needs_model else NoModel()
    # Each reader opened before the judges start, so that no budget pays for its loading.
    names = prepared.readers.models(judge.name for judge in prepared.judges)
    readers = {name: models.llm(name) for name in names} if prepared.needs_model else {}

    def reader(judge: str) -> LLM:
        return readers.get(prepared.readers.reader(judge) or "", main)
    judged = judge_sample(prepared.sample, main, _Reporting(prepared.answerer, post, main.name),
                          prepared.judges, prepared.rule,
                          on_verdict=lambda verdict: post("verdict", verdict),
                          order=list,  # prepare's order: deciding_first
                          reader=reader, budget=budget,
                          on_decision=lambda decision: post("decision", decision))
    result = AskResult(prepared, judged, main.name)
    result.redaction = redaction(judged, prepared.rule, request.on_unsupported)
    if result.redaction is not None:
        judged.decision = result.redaction.decision
        post("decision", judged.decision)
    if decision_word(judged.decision) != KEEP:
        result.fallback = fallback_for(models, request.fallback, prepared.sample,
                                       prepared.answerer, main)
        post("fallback", result.fallback)
    if request.keep_record:
        result.record = keep_asked(store, settings, result)
        post("record", result.record)
    return result


def ask(store: Store, settings: Settings, models: Models, request: AskRequest,
        finders: PassageFinders | None = None, post: Post | None = None) -> AskResult:
    """`prepare` then `answer_and_judge`: one question, start to end."""
    return answer_and_judge(store, settings, models, prepare(store, settings, request, finders),
                            post)
