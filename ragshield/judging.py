"""Judging one sample: one base answer shared by every judge, then the keep/abstain decision.

Judges run in an order that keeps llama.cpp's KV cache useful: first those that continue
the base answer's conversation (its whole prompt is still cached), then those whose prompts
start with the sample's shared prefix (system text, passages, question), and last those that
prompt without the passages (e.g. a no-passage answer).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Sequence

from ragshield.answerers.base import Answerer
from ragshield.config import DEFAULT_DECISION_RULE, GROUNDED_JUDGES, GROUNDED_RULE
from ragshield.decision_rule import (POOLED_RULES, NamedRule, PolicyRule, ReadPolicy, Rule,
                                     ShippedRule, is_fitted, parse_rule_text, rule_judges)
from ragshield.errors import OptionError
from ragshield.judge_budget import Budget, ReaderOf, budget_decision, judge_within
from ragshield.judges.base import COSTS, Judge, cost_for
from ragshield.judges.registry import known_judge
from ragshield.llm.base import LLM, serves_at_once
from ragshield.types import Answer, GivenAnswer, RuleDecision, Sample, Verdict

@dataclass
class JudgedSample:
    sample: Sample
    answer: Answer
    verdicts: list[Verdict] = field(default_factory=list)
    decision: RuleDecision | None = None


def _prefix_group(judge: Judge) -> int:
    return 0 if judge.continues_answer else 1 if judge.shares_prefix else 2


def judging_order(judges: Sequence[Judge]) -> list[Judge]:
    """Answer-continuing judges, then prefix-sharing ones, then the rest (stable): the order
    that keeps the most of each call's prompt in the model's cache (runs)."""
    return sorted(judges, key=_prefix_group)


def deciding_first(judges: Sequence[Judge], rule: Rule,
                   given: GivenAnswer | None = None) -> list[Judge]:
    """The order of an ask's judges, for a person waiting for the decision (the Demo, a guard
    call with a budget): the free judges, then those `rule` reads, then the rest; within each,
    by cost (judges.base.COSTS) for this answer (`given`: the answer an ask judges, which
    may lack the log-probs a free judge reads), then in judging order. Under a pooled rule:
    cheapest first."""
    reads = rule_judges(rule, [judge.name for judge in judges])

    def cost(judge: Judge) -> str:
        return cost_for(judge, given)
    return sorted(judges, key=lambda judge: (
        0 if cost(judge) == "free" else 1 if judge.name in reads else 2,
        COSTS.index(cost(judge)), _prefix_group(judge)))


def check_rule_name(rule: str) -> None:
    """OptionError unless `rule` can name a decision rule: all, majority, grounded, a judge
    (trained:NAME included) or policy:NAME[@VERSION]. Whether it fits the chosen judges, or
    the policy exists, is checked where it is used (choose_rule)."""
    if (rule in (*POOLED_RULES, GROUNDED_RULE) or known_judge(rule)
            or isinstance(parse_rule_text(rule), PolicyRule)):
        return
    raise OptionError(f"rule {rule!r} must be all, majority, {GROUNDED_RULE}, a judge's name "
                      "(ragshield judges lists them) or policy:NAME")


def fitting_rules(judges: Sequence[str]) -> list[str]:
    """The rules other than policies that these judges can decide by: the pooled ones, the
    grounded rule where they hold its judges, and each judge."""
    grounded = [GROUNDED_RULE] if set(GROUNDED_JUDGES) <= set(judges) else []
    return [*POOLED_RULES, *grounded, *judges]


@dataclass(frozen=True)
class RuleChoice:
    rule: str
    note: str | None = None  # set when the default rule was replaced: tell the user


def choose_rule(rule: str | None, judges: Sequence[str],
                default: str = DEFAULT_DECISION_RULE) -> RuleChoice:
    """The decision rule for these judges: `rule` when given (ValueError if it names a judge
    not among them, or reads one), else `default` when it fits, else majority. A default
    the user never typed must not stop them from choosing judges without it."""
    fitting = fitting_rules(judges)
    if rule is not None and isinstance(parse_rule_text(rule), PolicyRule):
        return RuleChoice(rule)  # a policy: its judge is checked where the policy is read
    if rule == GROUNDED_RULE and rule not in fitting:
        raise OptionError(f"rule {rule!r} reads {' and '.join(GROUNDED_JUDGES)}: add "
                          f"{', '.join(j for j in GROUNDED_JUDGES if j not in judges)} to the "
                          "judges")
    if rule is not None:
        if rule not in fitting:
            raise OptionError(f"rule {rule!r} must be all, majority, {GROUNDED_RULE}, one of "
                              f"the chosen judges ({', '.join(judges)}) or policy:NAME")
        return RuleChoice(rule)
    if default in fitting:
        return RuleChoice(default)
    return RuleChoice(POOLED_RULES[0], f"the default rule {default!r} is not among the chosen "
                                       f"judges; deciding by {POOLED_RULES[0]}")


def decide(verdicts: Sequence[Verdict], rule: Rule, refusal: bool = False) -> RuleDecision:
    """Apply a decision rule (decision_rule.py). A fitted rule (the grounded rule, a policy)
    withholds a `refusal`, as it was fitted: its promise counts refusals as withheld, whatever
    score a judge gave them (a refusal is never right in the sets it was fitted on)."""
    if refusal and is_fitted(rule):
        return RuleDecision(False, rule.rule, "the answer is a refusal: it shows nothing "
                                              "(withheld, as the rule was fitted)")
    return rule.decide(verdicts)


def resolve(named: NamedRule, read_policy: ReadPolicy | None = None) -> Rule:
    """The rule that decides for `named`: a fitted one read (the shipped rule from the
    package, a policy by `read_policy`; OptionError without one)."""
    if isinstance(named, ShippedRule):
        from ragshield.policies.answer_rule import shipped_rule  # loads the metrics stack

        return shipped_rule()
    if isinstance(named, PolicyRule):
        if read_policy is None:
            raise OptionError(f"rule {named.rule!r}: no stored policy to read it from (a run "
                              "keeps a copy of the policy it decides by)")
        return read_policy(named)
    return named


def rule_of(text: str, read_policy: ReadPolicy | None = None) -> Rule:
    """`text` parsed and resolved: the rule it names, ready to decide."""
    return resolve(parse_rule_text(text), read_policy)


def default_rule_value() -> Rule:
    """The shipped default rule, for a caller that names none (a library user, a script)."""
    return rule_of(DEFAULT_DECISION_RULE)


def judge_sample(
    sample: Sample,
    llm: LLM,
    answerer: Answerer,
    judges: Sequence[Judge],
    rule: Rule | None = None,
    on_verdict: Callable[[Verdict], None] | None = None,
    order: Callable[[Sequence[Judge]], list[Judge]] = judging_order,
    reader: ReaderOf | None = None,
    budget: Budget | None = None,
    on_decision: Callable[[RuleDecision], None] | None = None,
) -> JudgedSample:
    """Generate the base answer once with `llm`, run every judge on it (in `order`), each
    reading from `reader(judge name)` (default: `llm`), and decide by `rule` (default: the
    shipped default rule); with a `budget`, from the verdicts in by its deadline
    (judge_budget.py).

    `on_verdict` is called as each verdict arrives (the UI streams them), `on_decision` once,
    as soon as the verdicts the rule reads are in (the Demo shows the decision while the other
    judges finish; with a budget, at the end).
    """
    deciding = rule if rule is not None else default_rule_value()
    answer = answerer.answer(sample, llm)
    result = JudgedSample(sample=sample, answer=answer)
    reader = reader or (lambda _judge: llm)
    if budget is not None:
        result.verdicts = judge_within(order(judges), sample, answer, reader, budget,
                                       on_verdict)
        result.decision = budget_decision(decide(result.verdicts, deciding, answer.refusal),
                                          result.verdicts, budget)
        if on_decision is not None:
            on_decision(result.decision)
        return result
    def settle() -> None:
        result.decision = decide(result.verdicts, deciding, answer.refusal)
        if on_decision is not None:
            on_decision(result.decision)

    waiting = rule_judges(deciding, [judge.name for judge in judges])
    for judge in order(judges):
        verdict = judge.judge(sample, answer, reader(judge.name))
        result.verdicts.append(verdict)
        if on_verdict is not None:
            on_verdict(verdict)
        waiting.discard(verdict.judge)
        if not waiting and result.decision is None:  # the rule has all it reads: final
            settle()
    if result.decision is None:  # the rule reads a judge that did not run
        settle()
    return result


def parallelism(llm: LLM, concurrency: int) -> int:
    """Worker count for judging many samples. In-process models serve one call at a time
    and keep one KV cache, so interleaving samples would only evict each other's prefix;
    servers (OpenAI-compatible) take `concurrency` samples at once."""
    return max(1, concurrency) if serves_at_once(llm) else 1


def judge_samples(
    samples: Iterable[Sample],
    llm: LLM,
    answerer: Answerer,
    judges: Sequence[Judge],
    rule: Rule | None = None,
    concurrency: int = 1,
) -> Iterator[JudgedSample]:
    """Judge each sample (see judge_sample), yielding results in input order."""
    workers = parallelism(llm, concurrency)
    if workers == 1:
        for sample in samples:
            yield judge_sample(sample, llm, answerer, judges, rule)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(lambda s: judge_sample(s, llm, answerer, judges, rule), samples)
