"""Judging within a latency budget: a caller of the guard says how long its verdicts may take
(`budget_ms`) and what to do when the decision rule cannot decide in that time (`on_budget`).

The judges run free ones first, then those the rule reads, then the rest cheapest first
(judging.deciding_first); with a server backend up to `concurrency` of them run at once, with
an in-process model one at a time (it serves one call and keeps one cache). When the budget
passes, the verdicts in hand decide; the judges still running stop at their next model call
(the one under way ends first: no model call is cut off midway), and those not started never
start, but for the free ones (a call whose turn came after its budget is still decided by
them). Each of the others gets a verdict that says it did not finish. If the
rule cannot decide from what finished (its judge is among the unfinished, or none finished),
`on_budget` does: `keep` shows the answer (fail open), `abstain` withholds it (fail closed),
`error` fails the call (504, nothing stored).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Unpack, get_args

from ragshield.errors import UserError
from ragshield.judges.base import Judge, cost_for
from ragshield.llm.base import LLM, ChatOptions, LLMError, WrappedLLM
from ragshield.types import (Answer, Completion, ContinuationScore, Message, OnBudget,
                             RuleDecision, Sample, Verdict)

ON_BUDGET: tuple[OnBudget, ...] = get_args(OnBudget)
# Kept back from a budget for what follows the verdicts: deciding, storing the call and
# answering (tens of milliseconds), so that the whole call keeps within its budget.
RESERVE_S = 0.05
UNFINISHED = "unfinished"  # the key of an unfinished verdict's details


class BudgetPassed(UserError):
    """The budget passed before the rule could decide, and the caller asked for an error
    rather than a decision (504; nothing of the call is stored)."""


@dataclass(frozen=True)
class Budget:
    deadline: float  # time.monotonic() by which the verdicts are due
    milliseconds: int  # as the caller gave it, for the reasons
    on_budget: OnBudget = "abstain"
    concurrency: int = 1  # judges of one call at once
    # Told of the judges' work still running when the budget passed.
    leftover: Callable[[list[Future[Verdict | None]]], None] = field(
        default=lambda running: None, compare=False)

    @classmethod
    def starting_at(cls, started: float, milliseconds: int, on_budget: OnBudget,
                    concurrency: int = 1,
                    leftover: Callable[[list[Future[Verdict | None]]], None] | None = None,
                    ) -> Budget:
        """A budget of a call that began at `started` (time.monotonic()): its verdicts are
        due RESERVE_S before the budget ends (at most half of it)."""
        if on_budget not in ON_BUDGET:
            raise BudgetError(f"on_budget {on_budget!r} must be one of {', '.join(ON_BUDGET)}")
        seconds = milliseconds / 1000
        return cls(started + seconds - min(RESERVE_S, seconds / 2), milliseconds, on_budget,
                   max(1, concurrency), leftover or (lambda running: None))


class BudgetError(UserError, ValueError):
    pass


def unfinished_verdict(judge: Judge, budget: Budget) -> Verdict:
    return Verdict(judge=judge.name, keep=None,
                   rationale=f"did not finish within the {budget.milliseconds:,} ms budget",
                   details={UNFINISHED: True})


def unfinished_judges(verdicts: Sequence[Verdict]) -> list[str]:
    return [verdict.judge for verdict in verdicts if verdict.details.get(UNFINISHED)]


# The model a judge, by name, reads its probabilities from (judges/judge_readers.py).
ReaderOf = Callable[[str], LLM]


class JudgeStopped(LLMError):
    """A model call a judge asked for after its budget passed (the judge ends with an error
    verdict, which nobody hears)."""


class StoppingLLM(WrappedLLM):
    """A judge's model, as LLM, until `stopped` is set: from then on each call raises
    JudgeStopped, so that a judge the budget cut off ends at its next call instead of
    working on, unheard, for as long as it would have taken."""

    def __init__(self, inner: LLM, stopped: threading.Event) -> None:
        super().__init__(inner)
        self.stopped = stopped

    def chat(self, messages: Sequence[Message], **options: Unpack[ChatOptions]) -> Completion:
        self._go_on()
        return self.inner.chat(messages, **options)

    def score(self, prompt_messages: Sequence[Message], continuation: str) -> ContinuationScore:
        self._go_on()
        return self.inner.score(prompt_messages, continuation)

    def _go_on(self) -> None:
        if self.stopped.is_set():
            raise JudgeStopped("the budget passed: the judge stopped before this model call")


def judge_within(judges: Sequence[Judge], sample: Sample, answer: Answer, reader: ReaderOf,
                 budget: Budget, on_verdict: Callable[[Verdict], None] | None = None,
                 ) -> list[Verdict]:
    """The verdicts of `judges` (in their order) that are in by the budget's deadline, and an
    unfinished verdict for each of the rest. The judges' work still running (to the end of
    the model call each is in) is handed to `budget.leftover`: another call must not use an
    in-process model before it ends."""
    stopped = threading.Event()  # set at the deadline: no judge begins or calls a model again

    def run(judge: Judge) -> Verdict | None:
        if stopped.is_set():
            return None
        verdict = judge.judge(sample, answer, StoppingLLM(reader(judge.name), stopped))
        if on_verdict is not None and not stopped.is_set():
            on_verdict(verdict)
        return verdict

    if time.monotonic() >= budget.deadline:  # the call's turn came too late
        return [_free_verdict(judge, sample, answer, reader, budget) for judge in judges]
    pool = ThreadPoolExecutor(max_workers=min(budget.concurrency, max(1, len(judges))),
                              thread_name_prefix="judge")
    futures = [pool.submit(run, judge) for judge in judges]
    pool.shutdown(wait=False)  # its threads end with the work they have
    wait(futures, timeout=max(0.0, budget.deadline - time.monotonic()))
    stopped.set()
    verdicts = []
    for judge, future in zip(judges, futures):
        verdict = future.result() if future.done() else None
        verdicts.append(verdict or unfinished_verdict(judge, budget))
    budget.leftover([future for future in futures if not future.done()])
    return verdicts


def _free_verdict(judge: Judge, sample: Sample, answer: Answer, reader: ReaderOf,
                  budget: Budget) -> Verdict:
    """Past the deadline, a free judge still gives its verdict (it takes microseconds: a
    call that queued through its budget is decided by the trivial judge, or a given answer's
    log-probs, rather than withheld for want of them); a judge that would call a model, or
    costs more, is unfinished."""
    if cost_for(judge, sample.given_answer) != "free":
        return unfinished_verdict(judge, budget)
    stopped = threading.Event()
    stopped.set()  # a model call raises JudgeStopped at once
    verdict = judge.judge(sample, answer, StoppingLLM(reader(judge.name), stopped))
    return unfinished_verdict(judge, budget) if verdict.error else verdict


def budget_decision(decision: RuleDecision, verdicts: Sequence[Verdict],
                    budget: Budget) -> RuleDecision:
    """The rule's decision where it could decide from the finished verdicts; else the one
    `on_budget` asks for (BudgetPassed for `error`)."""
    late = unfinished_judges(verdicts)
    if not late or decision.keep is not None or decision.deferred:
        return decision
    why = (f"the rule could not decide within the {budget.milliseconds:,} ms budget "
           f"({', '.join(late)} did not finish)")
    if budget.on_budget == "error":
        raise BudgetPassed(why)
    keep = budget.on_budget == "keep"
    return RuleDecision(keep, decision.rule, f"{why}: {'kept' if keep else 'withheld'}, as "
                                             f"on_budget {budget.on_budget} says")
