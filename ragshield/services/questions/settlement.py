"""One ask, settled once: `settle` turns a request (the API key's defaults already merged in
by the API), the server's settings and the store (the pinned policy, the stored policies)
into a Settlement, the one value that says everything the ask will do and why. It runs top
to bottom: the request checked; who answers and who reads for each judge; the default rule;
the judges (the request's, else the default set); the rule they decide by (a stored policy
read once); the fitted judges pinned to their readers; the judges built with their readers'
thresholds, deciding first; the answerer, the budget and the words that say why the rule
decides. Nothing below re-resolves a default: `prepare` adds the passages and the answerer's
object, the guard takes its budget and the ask its judges from the settlement.

The forms start from the same steps: `defaults` (the Demo's judges and rule, the Dashboard's
start form, the Demo's example questions) and `default_rule` (the policy panel's words)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from typing import Callable, Sequence, TypeVar, get_args

from ragshield.answerers.registry import ANSWERERS, GIVEN
from ragshield.config import (DEFAULT_DECISION_RULE, DEFAULT_RULE_SELF_READ_REASON,
                              SELF_READ_RULE, Settings)
from ragshield.errors import UserError
from ragshield.fitted_readers import honour_fitted
from ragshield.judges.judge_readers import SELF, JudgeReaders, answer_model_name, judge_readers
from ragshield.judges.registry import judge_names, make_judges, quick_judges
from ragshield.decision_rule import (POOLED_RULES, Pooled, PolicyRule, Rule, named_judges,
                                     parse_rule_text)
from ragshield.judging import choose_rule, deciding_first, resolve
from ragshield.llm.packaged_models import LARGER_MODEL, PACKAGED_MODELS
from ragshield.policies.policy import Policy
from ragshield.policies.rule_figures import default_rule_reason
from ragshield.policies.rules import policy_rule
from ragshield.services.learning.pinned_policy import pinned
from ragshield.services.questions.ask_types import (FALLBACKS, LARGER_FALLBACK, AskRequest,
                                                    DefaultRule, Settlement)
from ragshield.services.questions.claim_marks import SUPPORT
from ragshield.services.questions.redaction import ON_UNSUPPORTED, REDACT
from ragshield.store.database import Store
from ragshield.store.policies import UnknownPolicyError
from ragshield.types import GivenAnswer, RetrievalMode

RETRIEVAL_MODES: tuple[RetrievalMode, ...] = get_args(RetrievalMode)
MAX_NOISE = 5
MAX_K = 50  # passages retrieved for one question: the guard API's bound on passages given too
MAX_QUESTION_CHARS = 2000
MAX_ANSWER_CHARS = 20_000  # of an answer given to judge, or an upstream's to pass on

StoredPolicy = Callable[[PolicyRule], Policy]  # a `policy:` rule -> its stored policy


class AskInputError(UserError, ValueError):
    """A field of an ask request is missing or does not fit the others."""


Choice = TypeVar("Choice", bound=str)


def one_of(choices: tuple[Choice, ...], value: str, field: str) -> Choice:
    """`value` as one of `choices` (a face's text for a request's typed field); AskInputError
    naming `field` otherwise."""
    if value not in choices:
        raise AskInputError(f"{field} must be one of {', '.join(choices)}, not {value[:60]!r}")
    return choices[choices.index(value)]


def settle(store: Store, settings: Settings, request: AskRequest) -> Settlement:
    """Everything `request` will do, settled once, in this order; user errors (a bad field,
    an unknown judge, a rule that does not fit the judges, a policy not stored) surface
    here, before any model is opened or any passage retrieved."""
    check_request(request)
    backend, answer_model = _answering(request, settings)
    if answer_model == LARGER_MODEL and request.fallback == LARGER_FALLBACK:
        raise AskInputError(f"the larger-model fallback asks {LARGER_MODEL}, which already "
                            "answers: answer with a smaller model")
    readers = ask_readers(request, settings, (backend, answer_model))
    default = default_rule(settings, store, readers, answer_model)
    read = _policy_reader(store)
    names = _judge_names(settings, request, default, read)
    rule, note = _settled_rule(request.rule, names, default, read)
    readers = honour_fitted(readers, rule, names, settings, answer_model, backend)
    judges = deciding_first(
        make_judges(",".join(names), settings, readers.options(answer_model)), rule,
        request.given_answer)
    return Settlement(
        request=request, judges=tuple(judges), readers=readers, rule=rule, rule_note=note,
        rule_reason=rule_reason(rule, request.rule, settings, note, default),
        answerer=(GIVEN if request.given_answer is not None
                  else request.answerer or settings.answerer),
        budget_ms=request.budget_ms or settings.guard_budget_ms,
        on_budget=request.on_budget or settings.guard_on_budget)


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
    one_of(RETRIEVAL_MODES, request.mode, "mode")  # a caller that is not type-checked
    if not 1 <= request.k <= MAX_K or not 0 <= request.noise <= MAX_NOISE:
        raise AskInputError(f"k must be from 1 to {MAX_K} and noise from 0 to {MAX_NOISE}")
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
    if (request.given_answer is None and request.answerer is not None
            and request.answerer not in ANSWERERS):
        raise AskInputError(f"unknown answerer {request.answerer!r}; one of "
                            f"{', '.join(ANSWERERS)}")
    if request.judges is not None and not request.judges:
        raise AskInputError("Choose at least one judge.")
    one_of(FALLBACKS, request.fallback, "fallback")
    one_of(ON_UNSUPPORTED, request.on_unsupported, "on_unsupported")


def answered(settled: Settlement, answer: GivenAnswer) -> Settlement:
    """`settled` judging `answer`, checked as a request's: the proxy settles its call before
    its upstream answers."""
    request = replace(settled.request, given_answer=answer)
    check_request(request)
    return replace(settled, request=request)


def _answering(request: AskRequest, settings: Settings) -> tuple[str, str]:
    """(the backend, the answering model's name as readers are recorded): a packaged model
    named in the request runs embedded whatever the settings say."""
    backend = "embedded" if request.model else settings.backend
    return backend, answer_model_name(backend, request.model or settings.model)


def ask_readers(request: AskRequest, settings: Settings,
                answering: tuple[str, str] | None = None) -> JudgeReaders:
    """The model each judge of `request` reads from (judges/judge_readers.py), before the
    fitted judges are pinned to their own (`settle`); `answering`: `_answering`'s, where the
    caller has it."""
    backend, answer_model = answering or _answering(request, settings)
    return judge_readers(request.judge_model or settings.judge_model, backend=backend,
                         answer_model=answer_model)


def default_rule(settings: Settings, store: Store | None = None,
                 readers: JudgeReaders | None = None,
                 answer_model: str | None = None) -> DefaultRule:
    """The default rule of every face: the policy version pinned on the Dashboard (with
    `store`), else the configured one (RAGSHIELD_DECISION_RULE); the shipped default where
    its judges read from the packaged 1.5B, as when it was measured (`readers` and the
    answering model's name, else the configured ones), else the judge measured best when they
    read from the answering model."""
    pin = pinned(store) if store is not None else None
    if pin is not None:
        return DefaultRule(pin.rule, pin.words)
    rule = settings.decision_rule
    if rule != DEFAULT_DECISION_RULE:
        return DefaultRule(rule, "the rule this server is set up with (RAGSHIELD_DECISION_RULE)")
    if readers is None or answer_model is None:
        answering = _answering(AskRequest(), settings)
        readers = readers or ask_readers(AskRequest(), settings, answering)
        answer_model = answer_model or answering[1]
    if all((readers.reader(judge) or answer_model) == LARGER_MODEL
           for judge in named_judges(parse_rule_text(rule))):
        return DefaultRule(rule, default_rule_reason())
    return DefaultRule(SELF_READ_RULE, DEFAULT_RULE_SELF_READ_REASON)


def _policy_reader(store: Store) -> StoredPolicy:
    """Reads the stored policy a `policy:` rule names from `store`, each at most once per
    settlement (UnknownPolicyError when it is not stored)."""

    @cache
    def read(rule: PolicyRule) -> Policy:
        from ragshield.services.learning.policies import get_policy  # loads the metrics stack

        return get_policy(store, rule.name, rule.version)
    return read


def _stored_judges(rule: str, read: StoredPolicy | None) -> tuple[str, ...] | None:
    """The judges of the stored policy that `rule` names: none for another rule or without a
    store (`read`), None when it is not stored."""
    named = parse_rule_text(rule)  # a malformed policy rule is an error, store or not
    if read is None or not isinstance(named, PolicyRule):
        return ()
    try:
        return tuple(read(named).judges)
    except UnknownPolicyError:
        return None


def _default_judges(settings: Settings, rule: str, read: StoredPolicy | None,
                    given: GivenAnswer | None = None) -> tuple[str, ...]:
    """The quick judges of `rule` for the answer judged (`given`: registry.quick_judges),
    and a stored policy's judges."""
    judges = quick_judges(named_judges(parse_rule_text(rule)), settings, given)
    judges += [judge for judge in _stored_judges(rule, read) or () if judge not in judges]
    return tuple(judges)


def default_judges(settings: Settings, rule: str | None = None,
                   store: Store | None = None) -> tuple[str, ...]:
    """The judges of an ask that names none, in every face: each free or cheap judge that
    `settings` can build, and the judges of the rule that decides (`rule`, else the default
    one; with `store`, a stored policy's judges too: a missing one adds none, and the ask
    that decides by it says it is missing)."""
    return _default_judges(settings, rule or default_rule(settings, store).rule,
                           _policy_reader(store) if store is not None else None)


@dataclass(frozen=True)
class Defaults:
    """What the forms start from: the default rule and why, the judges of an ask that
    names none, and the judges of the stored policy that is the default rule (none for
    another rule; None when the pinned policy is no longer stored)."""

    rule: DefaultRule
    judges: tuple[str, ...]
    policy_judges: tuple[str, ...] | None


def defaults(settings: Settings, store: Store | None = None) -> Defaults:
    """The defaults of the Demo's form, its example questions and the Dashboard's start form
    (with `store`: the pinned policy), the stored policy read once."""
    rule = default_rule(settings, store)
    read = _policy_reader(store) if store is not None else None
    return Defaults(rule, _default_judges(settings, rule.rule, read),
                    _stored_judges(rule.rule, read))


def _judge_names(settings: Settings, request: AskRequest, default: DefaultRule,
                 read: StoredPolicy) -> list[str]:
    """The judges of the ask, checked: the request's, else the default set of its rule (the
    default where it names none); redacting adds the support judge, whose claims it cuts."""
    chosen = request.judges or _default_judges(settings, request.rule or default.rule, read,
                                               request.given_answer)
    if request.on_unsupported == REDACT and SUPPORT not in chosen:
        chosen = (*chosen, SUPPORT)
    return judge_names(",".join(chosen))


def settle_rule(store: Store, rule: str | None, judges: Sequence[str],
                default: DefaultRule) -> tuple[Rule, str | None]:
    """The rule `judges` decide by and the note to show when the default did not fit them
    (`_settled_rule`); runs settle theirs here too."""
    return _settled_rule(rule, judges, default, _policy_reader(store))


def _settled_rule(rule: str | None, judges: Sequence[str], default: DefaultRule,
                  read: StoredPolicy) -> tuple[Rule, str | None]:
    """The rule `judges` decide by, parsed once and a fitted rule read (a policy from the
    store, the grounded rule from the package), and the note to show when the default did not
    fit them: `rule` when given, else `default` where it fits (a policy fits when the judges
    it reads are among `judges`), else majority."""
    if rule is None and isinstance(named := parse_rule_text(default.rule), PolicyRule):
        policy = read(named)
        missing = [judge for judge in policy.judges if judge not in judges]
        if missing:
            return Pooled(POOLED_RULES[0]), (
                f"the default rule {default.rule!r} reads {', '.join(missing)}, not among the "
                f"chosen judges; deciding by {POOLED_RULES[0]}")
        return policy, None
    choice = choose_rule(rule, judges, default.rule)
    named = parse_rule_text(choice.rule)
    if not isinstance(named, PolicyRule):
        return resolve(named), choice.note
    from ragshield.services.learning.policies import check_policy_judges

    policy = read(named)
    check_policy_judges(policy, judges)
    return policy, None


def rule_reason(rule: Rule, asked: str | None, settings: Settings,
                note: str | None = None, default: DefaultRule | None = None) -> str:
    """Why `rule` decides an ask whose request named `asked`: the default's reason (the
    pinned policy, the measured default, the operator's setting; `default`, else the
    configured one), a policy's promise, the request's own choice, or the fallback `note`
    when the default did not fit the judges."""
    if note is not None:
        return note
    default = default or default_rule(settings)
    if not isinstance(rule, Policy):  # a rule by name, or the shipped rule
        if rule.rule == default.rule:
            return default.reason
        return "chosen for this question" if asked is not None else "the default rule"
    if default.rule in (rule.rule, policy_rule(rule.name, None)):
        return f"{default.reason}: {rule.promise()}"
    return f"the stored policy {rule.rule}: {rule.promise()}"
