"""The front door: one object that judges answers, asks questions and reads policies, for
Python users and for every face (the CLI, the web app and the guard API are built on it).

    import ragshield
    shield = ragshield.Shield.open()            # nothing is recorded without a database
    decision = shield.judge("Who wrote Hamlet?", ["Hamlet is a play by Shakespeare."],
                            "Shakespeare wrote it.")
    decision.decision, decision.shown, [v.judge for v in decision.verdicts]

The shield is the composition root: it reads the settings once, opens the store, and owns
the models (opened on first use), the turns at them and the retrievers, so every face gets
the same defaults (answerer and rule from the settings, one default judge set).
"""

from __future__ import annotations

import time
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from ragshield.config import MAX_BUDGET_MS, Settings
from ragshield.errors import OptionError
from ragshield.judge_budget import ON_BUDGET
from ragshield.policies.policy import Policy
from ragshield.services.database import Store, open_store
from ragshield.services.guarding.guard import ModelGate, call_budget, judge_catalogue, model_turn
from ragshield.services.learning.policies import get_policy
from ragshield.services.questions.ask_types import ASK_DEFAULTS, AskRequest, AskResult
from ragshield.services.questions.asking import (OpenedModels, PassageFinders, answer_and_judge,
                                                 prepare)
from ragshield.services.questions.decision_json import decision_json, shown_text
from ragshield.services.questions.redaction import WITHHOLD, OnUnsupported
from ragshield.services.questions.settlement import MAX_ANSWER_CHARS, settle
from ragshield.types import (GivenAnswer, OnBudget, Passage, RetrievalMode, TokenLogprob,
                             Verdict, decision_word)

IN_MEMORY = "sqlite://"

PassageLike = str | Passage | Mapping[str, Any]


@dataclass(frozen=True)
class Decision:
    """What the shield decided about one answer: the ask's whole result and where its time
    went; the rest is read from the result."""

    result: AskResult  # the question, passages, answer, verdicts and decision, as stored
    seconds: Mapping[str, float]  # where the time went, e.g. {"judging": 2.1}

    @property
    def decision(self) -> str | None:
        """"keep", "abstain", "defer" (a policy asks a person), or None when the rule could
        not decide."""
        return decision_word(self.result.judged.decision)

    @property
    def answer(self) -> str:
        """The answer that was judged, shown or not."""
        return self.result.judged.answer.text

    @property
    def shown(self) -> str:
        """What a user should see: the answer when kept, else the abstain message or the
        fallback answer."""
        return shown_text(self.result)

    @property
    def rule(self) -> str | None:
        """The rule that decided ("majority", "policy:NAME@VERSION", ...); None without a
        decision."""
        decision = self.result.judged.decision
        return decision.rule if decision else None

    @property
    def reason(self) -> str | None:
        """Why the rule decided as it did, in a sentence; None without a decision."""
        decision = self.result.judged.decision
        return decision.reason if decision else None

    @property
    def verdicts(self) -> tuple[Verdict, ...]:
        """Each judge's verdict: keep or not, its score and its reasons."""
        return tuple(self.result.judged.verdicts)

    @property
    def kept(self) -> bool:
        """True when `shown` is the answer itself (no abstention and no fallback), or with
        on_unsupported="redact" the part of it the passages support (`shortened`)."""
        return self.result.fallback is None

    @property
    def shortened(self) -> bool:
        """True when `shown` is the answer without its unsupported sentences."""
        return self.result.redaction is not None

    def __repr__(self) -> str:
        return (f"Decision(decision={self.decision!r}, shown={self.shown!r}, "
                f"rule={self.rule!r}, verdicts={[v.judge for v in self.verdicts]})")

    def to_dict(self, *, trace: bool = False, passages: bool = False) -> dict[str, Any]:
        """The JSON shape that `ragshield ask --json` prints and the guard API answers."""
        return decision_json(self.result, self.seconds, trace=trace, passages=passages)


def database_url(database: str | Path) -> str:
    """A SQLAlchemy URL as it is; a file path as a SQLite database there."""
    text = str(database)
    return text if "://" in text else f"sqlite:///{Path(text).expanduser().resolve()}"


class Shield:
    """Settings, store, models, the turns at the models and the retrievers of one process."""

    def __init__(self, settings: Settings, store: Store, *, record: bool = True) -> None:
        self.settings, self.store, self.record = settings, store, record
        self.models = OpenedModels(settings, store)
        self.gate = ModelGate(settings)
        self.finders = PassageFinders(settings)

    @classmethod
    def open(cls, database: str | Path | None = None, **settings: Any) -> Shield:
        """A shield on `database` (a SQLAlchemy URL or a SQLite file; questions, answers and
        verdicts are kept there in a live run), or on nothing (None: nothing is recorded).
        `settings` override the RAGSHIELD_* environment (e.g. backend="openai",
        judge_model="qwen-1.5b")."""
        unknown = sorted(set(settings) - set(Settings.model_fields))
        if unknown:  # Settings ignores what it does not know: a typo would go unnoticed
            raise OptionError(f"unknown setting(s) {', '.join(unknown)}; the settings are "
                              f"{', '.join(sorted(Settings.model_fields))}")
        url = database_url(database) if database is not None else IN_MEMORY
        configured = Settings(**{**settings, "database_url": url})
        return cls(configured, open_store(configured.database_url),
                   record=database is not None)

    def judge(self, question: str, passages: Sequence[PassageLike], answer: str, *,
              judges: Sequence[str] | None = None, rule: str | None = None,
              answer_logprobs: Sequence[tuple[str, float]] | None = None,
              judge_model: str | None = None, on_unsupported: OnUnsupported = WITHHOLD,
              budget_ms: int | None = None, on_budget: OnBudget | None = None) -> Decision:
        """Judge an answer another system wrote from `passages` (texts, Passages, or
        mappings with text and optional title, id and score). `judges` None: every free or
        cheap judge and the rule's; `rule` None: the configured rule; `on_unsupported`
        "redact": show the answer without the sentences the passages do not support
        (services/questions/redaction.py). `budget_ms`: the judges' latency budget, as the
        guard API's (judge_budget.py; None: the settings' guard_budget_ms); `on_budget`:
        keep, abstain or error when the rule cannot decide within it."""
        _check_answer(answer)
        tokens = ([TokenLogprob(token, logprob) for token, logprob in answer_logprobs]
                  if answer_logprobs else None)
        return self._decide(AskRequest(
            question=question, passages=tuple(_passage(p) for p in passages),
            given_answer=GivenAnswer(answer, tokens=tokens), judges=_names(judges),
            rule=rule, judge_model=judge_model, keep_record=self.record,
            on_unsupported=on_unsupported, budget_ms=budget_ms, on_budget=on_budget))

    def ask(self, question: str, *, corpus: str | None = None,
            passages: Sequence[PassageLike] | None = None, judges: Sequence[str] | None = None,
            rule: str | None = None, k: int = 3, mode: RetrievalMode = "hybrid",
            model: str | None = None, on_unsupported: OnUnsupported = WITHHOLD,
            budget_ms: int | None = None, on_budget: OnBudget | None = None) -> Decision:
        """Answer `question` from `passages`, or from the top `k` of `corpus` (default: the
        packaged demo corpus), then judge the answer; a budget (as `judge`'s) counts from
        the call, the answer's writing included."""
        request = AskRequest(
            question=question, k=k, mode=mode, model=model, judges=_names(judges), rule=rule,
            on_unsupported=on_unsupported, budget_ms=budget_ms, on_budget=on_budget,
            passages=tuple(_passage(p) for p in passages) if passages is not None else None,
            keep_record=self.record, corpus=corpus or ASK_DEFAULTS.corpus)
        return self._decide(request)

    def policy(self, name: str, version: int | None = None) -> Policy:
        """The stored policy `name` (its newest version unless `version`)."""
        return get_policy(self.store, name, version)

    def judges(self) -> list[dict[str, Any]]:
        """Every judge: name, cost, whether it is a default, why it cannot run here."""
        return judge_catalogue(self.settings)

    def _decide(self, request: AskRequest) -> Decision:
        """Settled, prepared and judged as the guard does it, within the call's budget."""
        begun = time.monotonic()
        _check_budget(request.budget_ms, request.on_budget)
        settled = settle(self.store, self.settings, request)
        running: list[Future[Any]] = []  # judges the budget cut off, still at the model
        budget = call_budget(settled, self.gate, self.settings, running, begun)
        prepared = prepare(self.store, self.settings, settled, self.finders)
        started = time.monotonic()
        with model_turn(self.gate.turn(prepared), self.models, settled, budget,
                        running) as models:
            result = answer_and_judge(self.store, self.settings, models, prepared,
                                      budget=budget)
        return Decision(result, {"judging": time.monotonic() - started})

    def close(self) -> None:
        self.store.engine.dispose()

    def __enter__(self) -> Shield:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _check_answer(answer: str) -> None:
    """OptionError naming `answer` past the guard API's bound (MAX_ANSWER_CHARS): the time
    that splitting and judging an answer take grows with it."""
    if not isinstance(answer, str):
        raise OptionError(f"answer must be text, got {type(answer).__name__}")
    if len(answer) > MAX_ANSWER_CHARS:
        raise OptionError(f"answer is {len(answer):,} characters; answers of up to "
                          f"{MAX_ANSWER_CHARS:,} are judged")


def _check_budget(budget_ms: object, on_budget: object) -> None:
    """OptionError naming `budget_ms` unless it is None (the settings' budget) or a whole
    number of milliseconds within the guard API's bounds (not True, 1.5 or "300"), and
    naming `on_budget` unless it is None or one of ON_BUDGET."""
    if budget_ms is not None and not _is_milliseconds(budget_ms):
        raise OptionError(f"budget_ms must be a whole number of milliseconds from 1 to "
                          f"{MAX_BUDGET_MS:,}, or None for the settings' budget; got "
                          f"{budget_ms!r}")
    if on_budget is not None and on_budget not in ON_BUDGET:
        raise OptionError(f"on_budget must be one of {', '.join(ON_BUDGET)}; got "
                          f"{on_budget!r}")


def _is_milliseconds(value: object) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)
            and 1 <= value <= MAX_BUDGET_MS)


def _names(judges: Sequence[str] | None) -> tuple[str, ...] | None:
    if isinstance(judges, str):
        return (judges,)
    return tuple(judges) if judges is not None else None


def _passage(value: PassageLike) -> Passage:
    if isinstance(value, Passage):
        return value
    if isinstance(value, str):
        return Passage(text=value)
    return Passage(text=str(value["text"]), title=value.get("title"), doc_id=value.get("id"),
                   score=value.get("score"))
