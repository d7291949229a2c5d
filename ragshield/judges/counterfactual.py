"""Counterfactual prompting (docs/METHODS.md 4.7, RC-RAG): challenge the answer and see if it holds.

The base answer is the Evidence RAG answer (its text and cited passage ids). Two scenarios
each continue the base conversation with one challenge:

- **cf-quality**: suppose the answer is wrong because the passages it relied on are poor;
  choose passages again and answer again, citing their ids (without the ids when
  `ask_ids=False`, an ablation: the model then tends to ignore the challenge);
- **cf-usage**: suppose the answer is wrong because the passages were used improperly;
  read them again and answer again.

A scenario keeps the answer when every round's regenerated answer is the same as the base
answer (matcher of docs/METHODS.md 2, tau 0.7) and, with `evidence_change`, cf-quality cites the
same passage ids; one change in any round discards. Round 1 is greedy; rounds 2..N ask the
same challenge again, sampled at a small temperature with seeds 1..N-1, so a wavering model
shows it. (Rephrased challenges would mix the model's doubt with its reading of new
wording.)

When the two scenarios disagree, `fusion` decides:
- **direct** (default): the discarding branch's conversation goes on: the model is told
  its first answer is probably wrong for that scenario's reason and asked for a marked
  decision, $$keep$$ or $$discard$$; an unreadable reply discards (flagged);
- **probability**: each branch is asked the probability that its latest answer is correct;
  the branch with the higher value wins; a tie or an unreadable value discards (flagged);
- **safety**: discard, with no further call.

A base answer that is a refusal is discarded at once with score 0 and no call: RC-RAG
discards any final "keep" of a refusal, so the challenges could not change the outcome.

score = mean agreement of the rounds, over both scenarios, with the base answer (0..1): a
round that repeats the answer (and, with `evidence_change`, its passages) counts 1, one that
cites other passages 0, one that changes the answer its word overlap with the base answer
(`answer_agreement`, at most 0.7), so that a near miss lowers the score less than an unrelated
answer. It is the thresholdable view of the same evidence; `keep` is the fused decision.

Cost: both scenarios continue the base conversation, so the passages stay in the backend's
cached prefix and each call reads only its short new turn; replies are capped at
ANSWER_TOKENS (fusion: FUSION_TOKENS / PROBABILITY_TOKENS).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence

from ragshield.answerers.context import PromptOptions
from ragshield.errors import OptionError
from ragshield.judges.base import Judge
from ragshield.judges.follow_up import Reply, ask_answer, ask_value, follow_up
from ragshield.judges.readers import read_marker, read_probability
from ragshield.llm.traced import TracedLLM
from ragshield.metrics.correctness import answer_agreement
from ragshield.refusal import is_refusal
from ragshield.types import Answer, DetailTable, Sample, Verdict, evidence_labels, keep_word

QUALITY, USAGE = "cf-quality", "cf-usage"
FUSIONS = ("direct", "probability", "safety")
MAX_ROUNDS = 5
ANSWER_TOKENS = 32
FUSION_TOKENS = 16
PROBABILITY_TOKENS = 8
ROUND_TEMPERATURE = 0.3  # rounds after the first: small, so only a wavering answer moves

ONE_LINE = "Reply in one line:\nAnswer: <the short answer>"
TWO_LINES = (
    "Reply in exactly two lines:\nAnswer: <the short answer>\n"
    "Evidence: ## <labels of the passages you now rely on, separated by commas> ##"
)
QUALITY_CHALLENGE = (
    "Suppose your answer is wrong because the passages you relied on are of poor quality. "
    "Choose again which passages to rely on, and answer the question again in a few words."
)
USAGE_CHALLENGE = (
    "Suppose your answer is wrong because you used the passages improperly. Read them again "
    "carefully and answer the question again in a few words."
)
REASONS = {
    QUALITY: "the passages it relied on are of poor quality",
    USAGE: "the passages were used improperly",
}
DIRECT_QUESTION = (
    "Your first answer, \"{answer}\", is probably wrong because {reason}. Should it be given "
    "to the user or withheld? Reply with only $$keep$$ or $$discard$$."
)
PROBABILITY_QUESTION = (
    "What is the probability that your latest answer is correct? Reply with only a number "
    "between 0.0 and 1.0."
)


@dataclass(frozen=True)
class Round:
    number: int
    reply: Reply
    agreement: float  # with the base answer (answer_agreement); 1.0: the same answer
    same_evidence: bool | None  # None when evidence is not compared

    @property
    def same_answer(self) -> bool:
        return self.agreement == 1.0

    @property
    def changed(self) -> bool:
        return not self.same_answer or self.same_evidence is False

    @property
    def score(self) -> float:
        """What the round adds to the judge's score: its agreement, 0 on other passages."""
        return 0.0 if self.same_evidence is False else self.agreement

    def to_dict(self) -> dict[str, Any]:
        return {"round": self.number, "answer": self.reply.text, "raw": self.reply.raw,
                "evidence": self.reply.evidence, "same_answer": self.same_answer,
                "agreement": round(self.agreement, 4), "same_evidence": self.same_evidence,
                "changed": self.changed}


@dataclass(frozen=True)
class Scenario:
    name: str
    rounds: list[Round]

    @property
    def keep(self) -> bool:
        return not any(r.changed for r in self.rounds)

    @property
    def branch(self) -> Round:
        """The round whose conversation fusion continues: the first that changed, else 1."""
        return next((r for r in self.rounds if r.changed), self.rounds[0])

    def summary(self) -> str:
        changed = [r for r in self.rounds if r.changed]
        if not changed:
            return f"{self.name} kept the answer in {len(self.rounds)}/{len(self.rounds)} rounds"
        first = changed[0]
        what = (f"changed the answer to {first.reply.text!r}" if not first.same_answer
                else f"changed the cited passages to {first.reply.evidence}")
        return f"{self.name} {what} in round {first.number}"

    def to_dict(self) -> dict[str, Any]:
        return {"judgment": "keep" if self.keep else "discard",
                "rounds": [r.to_dict() for r in self.rounds]}


@dataclass
class Fusion:
    keep: bool
    reason: str
    details: dict[str, Any]
    parse_error: str | None = None


class CounterfactualJudge(Judge):
    name = "counterfactual"
    cost = "costly"
    continues_answer = True

    def __init__(
        self, rounds: int = 1, fusion: str = "direct", evidence_change: bool = False,
        ask_ids: bool = True, options: PromptOptions = PromptOptions(),
    ) -> None:
        super().__init__(options)
        if not (isinstance(rounds, int) and 1 <= rounds <= MAX_ROUNDS):
            raise OptionError(f"rounds must be an integer from 1 to {MAX_ROUNDS}; got {rounds!r}")
        if fusion not in FUSIONS:
            raise OptionError(f"fusion must be one of {', '.join(FUSIONS)}; got {fusion!r}")
        if evidence_change and not ask_ids:
            raise OptionError("evidence_change compares cited passage ids: it needs ask_ids=True")
        self.rounds = rounds
        self.fusion = fusion
        self.evidence_change = evidence_change
        self.ask_ids = ask_ids

    def challenge(self, scenario: str) -> str:
        if scenario == USAGE:
            return f"{USAGE_CHALLENGE} {ONE_LINE}"
        return f"{QUALITY_CHALLENGE} {TWO_LINES if self.ask_ids else ONE_LINE}"

    def decide(self, sample: Sample, answer: Answer, llm: TracedLLM) -> Verdict:
        details: dict[str, Any] = {
            "options": {"rounds": self.rounds, "fusion": self.fusion,
                        "evidence_change": self.evidence_change, "ask_ids": self.ask_ids},
            "base": {"answer": answer.text, "evidence": answer.evidence},
        }
        if answer.refusal or is_refusal(answer.text):
            reason = "the base answer is a refusal: nothing to keep, no challenge asked"
            details["decision"] = {"keep": False, "reason": reason}
            return Verdict(judge=self.name, keep=False, score=0.0, details=details,
                           rationale=f"{reason} ({answer.text!r})")
        quality = self._scenario(QUALITY, sample, answer, llm)
        usage = self._scenario(USAGE, sample, answer, llm)
        details["scenarios"] = {s.name: s.to_dict() for s in (quality, usage)}
        if quality.keep == usage.keep:
            fusion = Fusion(quality.keep, "both scenarios agree",
                            {"method": self.fusion, "needed": False})
        else:
            fusion = self._fuse(quality, usage, answer, llm)
        details["fusion"] = fusion.details
        details["decision"] = {"keep": fusion.keep, "reason": fusion.reason}
        rounds = quality.rounds + usage.rounds
        empty = [f"empty regenerated answer in {s.name} round {r.number}"
                 for s in (quality, usage) for r in s.rounds if not r.reply.text]
        errors = [*empty, *([fusion.parse_error] if fusion.parse_error else [])]
        return Verdict(
            judge=self.name, keep=fusion.keep,
            score=sum(r.score for r in rounds) / len(rounds),
            rationale=(f"{quality.summary()}; {usage.summary()}; {fusion.reason}: "
                       f"{'keep' if fusion.keep else 'discard'}"),
            parse_error="; ".join(errors) or None, details=details,
        )

    def _scenario(self, name: str, sample: Sample, answer: Answer, llm: TracedLLM) -> Scenario:
        messages = follow_up(answer.conversation, self.challenge(name))
        compare_evidence = self.evidence_change and name == QUALITY
        rounds = []
        for number in range(1, self.rounds + 1):
            reply = ask_answer(
                llm, messages, len(sample.passages), purpose=f"{name} round {number}",
                max_tokens=ANSWER_TOKENS, seed=number - 1,
                temperature=0.0 if number == 1 else ROUND_TEMPERATURE,
                wants_evidence=name == QUALITY and self.ask_ids,
            )
            same_evidence = (set(reply.evidence) == set(answer.evidence)
                             if compare_evidence else None)
            rounds.append(Round(number, reply, answer_agreement(reply.text, answer.text),
                                same_evidence))
        return Scenario(name, rounds)

    def _fuse(self, quality: Scenario, usage: Scenario, answer: Answer, llm: TracedLLM) -> Fusion:
        discarding = quality if not quality.keep else usage
        if self.fusion == "safety":
            return Fusion(False, "the scenarios disagree and safety fusion discards",
                          {"method": "safety", "needed": True})
        if self.fusion == "direct":
            return self._direct(discarding, answer, llm)
        return self._probability(quality, usage, llm)

    def _direct(self, branch: Scenario, answer: Answer, llm: TracedLLM) -> Fusion:
        question = DIRECT_QUESTION.format(answer=answer.text, reason=REASONS[branch.name])
        purpose = f"fusion (direct) on {branch.name}"
        decision, reply = ask_value(
            llm, follow_up(branch.branch.reply.conversation, question),
            lambda text: read_marker(text, ("keep", "discard")),
            purpose=purpose, max_tokens=FUSION_TOKENS,
            unreadable="neither $$keep$$ nor $$discard$$ in the reply",
        )
        details = {"method": "direct", "needed": True, "branch": branch.name,
                   "round": branch.branch.number, "call": purpose,
                   "purpose": "told the discarding branch its answer is probably wrong and "
                              "asked whether to keep or discard it",
                   "reply": reply, "decision": decision}
        if decision is None:
            return Fusion(False, f"direct fusion on {branch.name} was unreadable ({reply!r})",
                          details, f"direct fusion: no keep/discard marker in {reply!r}")
        return Fusion(decision == "keep", f"direct fusion on {branch.name} said {decision}",
                      details)

    def _probability(self, quality: Scenario, usage: Scenario, llm: TracedLLM) -> Fusion:
        values: dict[str, float | None] = {}
        replies: dict[str, str] = {}
        calls = []
        for scenario in (quality, usage):
            calls.append(f"fusion (probability) on {scenario.name}")
            values[scenario.name], replies[scenario.name] = ask_value(
                llm, follow_up(scenario.branch.reply.conversation, PROBABILITY_QUESTION),
                read_probability, purpose=calls[-1],
                max_tokens=PROBABILITY_TOKENS, unreadable="no probability in the reply",
            )
        details = {"method": "probability", "needed": True, "calls": calls,
                   "rounds": {s.name: s.branch.number for s in (quality, usage)},
                   "purpose": "asked each branch the probability that its latest answer is "
                              "correct; the more confident branch's judgment wins",
                   "replies": replies, "probabilities": values}
        p_quality, p_usage = values[QUALITY], values[USAGE]
        if p_quality is None or p_usage is None:
            unread = [name for name, p in values.items() if p is None]
            details["flag"] = "unreadable"
            return Fusion(False, f"probability fusion could not read {', '.join(unread)}",
                          details, f"probability fusion: no probability from {', '.join(unread)}")
        if p_quality == p_usage:
            details["flag"] = "tie"
            return Fusion(False, f"probability fusion tied at {p_quality:g}", details)
        winner = quality if p_quality > p_usage else usage
        details["winner"] = winner.name
        return Fusion(winner.keep, (f"probability fusion followed {winner.name} ({QUALITY} "
                                    f"p = {p_quality:g}, {USAGE} p = {p_usage:g})"), details)

    @classmethod
    def detail_view(cls, details: dict[str, Any],
                    trace: Sequence[dict[str, Any]]) -> list[DetailTable] | None:
        """The case study of RC-RAG: both scenarios' regenerated answers and evidence per
        round, the fusion with its prompts and replies, and the decision."""
        decision = details.get("decision")
        if not decision:
            return None
        base, options = details.get("base") or {}, details.get("options") or {}
        tables = [DetailTable("Base answer", ["field", "value"], [
            ["base answer", base.get("answer")],
            ["base evidence", evidence_labels(base.get("evidence"))],
            ["options", ", ".join(f"{k} = {v}" for k, v in options.items())]])]
        for name, scenario in (details.get("scenarios") or {}).items():
            rounds = scenario.get("rounds") or []
            tables.append(DetailTable(
                f"{name}: {_word(scenario.get('judgment'))}",
                ["round", "regenerated answer", "evidence", "same answer", "agreement",
                 "same evidence", "judgment"],
                [[r.get("round"), r.get("answer"), evidence_labels(r.get("evidence")),
                  r.get("same_answer"), r.get("agreement"), r.get("same_evidence"),
                  "changed" if r.get("changed") else "same"] for r in rounds],
                texts=[(f"round {r.get('round')}: raw reply", str(r.get("raw") or ""))
                       for r in rounds]))
        fusion = details.get("fusion")
        if fusion is not None:
            purposes = set(fusion.get("calls") or []) | (
                {fusion["call"]} if fusion.get("call") else set())
            calls = [call for call in trace if call.get("purpose") in purposes]
            tables.append(DetailTable(
                "Fusion", ["field", "value"],
                [[key, json.dumps(value, ensure_ascii=False) if isinstance(value, (dict, list))
                  else value] for key, value in fusion.items() if key not in ("calls", "call")],
                texts=[text for call in calls for text in (
                    (f"{call.get('purpose')}: question",
                     str(((call.get("messages") or [{}])[-1]).get("content") or "")),
                    (f"{call.get('purpose')}: reply", str(call.get("output") or "")))]))
        tables.append(DetailTable("Decision", ["decision", "reason"],
                                  [[keep_word(bool(decision.get("keep"))),
                                    decision.get("reason")]]))
        return tables


def _word(judgment: Any) -> str:
    """A scenario's judgment ("keep" / "discard", the model's own words) in the outcome
    vocabulary of every face."""
    return keep_word(judgment == "keep") if judgment in ("keep", "discard") else str(judgment)
