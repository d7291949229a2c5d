"""Judging a sample end to end: shared base answer, judge order, decision rules, the `ask`
JSON shape, concurrency, and every judge on real demo samples with the embedded model."""

from __future__ import annotations

import json
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest

from ragshield.answerers.registry import make_answerer
from ragshield.config import DEFAULT_DECISION_RULE, Settings
from ragshield.datasets import load_dataset
from ragshield.datasets.demo import DEMO_SAMPLES
from ragshield.judges.builtin import JUDGES
from ragshield.judges.registry import judge_names, make_judges, quick_judges, unavailable_reason
from ragshield.decision_rule import ABSTAINED, KEPT, NOT_RUN, UNDECIDED
from ragshield.judging import (decide, deciding_first, judge_sample, judge_samples, judging_order,
                               rule_of)
from ragshield.types import Passage, Sample, Verdict
from tests.fakes import ScriptedLLM, ScriptedReply

SAMPLE = Sample(
    id="s1", question="Where is the Eiffel Tower?",
    passages=[Passage("The Eiffel Tower stands in Paris."), Passage("Rome has the Colosseum.")],
    reference_answers=["Paris"], answerable=True,
)


def v(judge: str, keep: bool | None) -> Verdict:
    return Verdict(judge=judge, keep=keep, rationale=f"{judge} says {keep}")


@pytest.mark.parametrize(
    "rule, verdicts, expected",
    [
        ("counterfactual", [v("counterfactual", False), v("trivial", True)], False),
        ("counterfactual", [v("trivial", True)], None),
        ("counterfactual", [v("counterfactual", None)], None),
        ("all", [v("a", True), v("b", True), v("c", None)], True),
        ("all", [v("a", True), v("b", False)], False),
        ("majority", [v("a", True), v("b", True), v("c", False)], True),
        ("majority", [v("a", True), v("b", False)], False),
        ("majority", [v("a", None)], None),
    ],
)
def test_decision_rules(rule, verdicts, expected):
    assert decide(verdicts, rule_of(rule)).keep is expected


@pytest.mark.parametrize("rule", ["all", "majority", "b", "absent"])
def test_vectorised_decision_agrees_with_decide(rule):
    """A rule's run_codes on random verdict sets (each judge keeps, abstains, cannot decide
    or did not run) gives what decide gives on each set."""
    judges = ["a", "b", "c", "d"]
    keeps = {KEPT: True, ABSTAINED: False, UNDECIDED: None}
    codes = np.random.default_rng(14).choice([KEPT, ABSTAINED, UNDECIDED, NOT_RUN],
                                             size=(1000, len(judges)))
    deciding = rule_of(rule)
    run = SimpleNamespace(judges=tuple(judges), codes=codes)
    for row, got in zip(codes, deciding.run_codes(run)):
        keep = decide([v(judge, keeps[code]) for judge, code in zip(judges, row)
                       if code != NOT_RUN], deciding).keep
        assert got == (UNDECIDED if keep is None else KEPT if keep else ABSTAINED), list(row)


def test_judges_run_in_cache_friendly_order():
    judges = make_judges("dual_generation,trivial,self_consistency,p_true,counterfactual",
                         Settings())
    # answer-continuing judges first, then prefix-sharing ones, each group in given order
    assert [j.name for j in judging_order(judges)] == [
        "self_consistency", "counterfactual", "trivial", "p_true", "dual_generation"]
    # for a person watching (the Demo): by cost, in that order within a cost
    assert [j.name for j in deciding_first(judges, rule_of("majority"))] == [
        "trivial", "p_true", "self_consistency", "counterfactual", "dual_generation"]
    # ... but the judge that decides goes first after the free ones, whatever it costs
    assert [j.name for j in deciding_first(judges, rule_of("counterfactual"))] == [
        "trivial", "counterfactual", "p_true", "self_consistency", "dual_generation"]


def test_judge_names_validate():
    assert judge_names("all") == list(JUDGES)
    assert judge_names("p_true, trivial,p_true") == ["p_true", "trivial"]
    with pytest.raises(ValueError, match="valid names"):
        judge_names("trivial,oracle")


def test_nli_without_a_model_is_reported_unavailable_not_skipped():
    [nli] = make_judges("nli", Settings(nli_model=None))
    verdict = nli.judge(SAMPLE, make_answerer("vanilla").answer(SAMPLE, ScriptedLLM(["Paris"])),
                        ScriptedLLM())
    assert verdict.available is False and "RAGSHIELD_NLI_MODEL" in verdict.rationale


def test_the_fast_set_leaves_out_judges_that_cannot_be_built_here():
    assert "nli" in quick_judges()  # cheap, so in the set when the settings are not asked
    without_model = quick_judges(("p_true",), Settings(nli_model=None))
    assert "nli" not in without_model and "token_prob" in without_model
    assert without_model[-1] == "p_true"  # the rule's judge comes last, whatever it costs
    assert "nli" in quick_judges(settings=Settings(nli_model="some/nli-model"))
    assert unavailable_reason("nli", Settings(nli_model=None))
    assert unavailable_reason("p_true", Settings(nli_model=None)) is None


def test_base_answer_is_generated_once_and_shared():
    llm = ScriptedLLM([
        "Paris\nEvidence: ## Passage-0 ##",  # base answer (evidence answerer)
        ScriptedReply("Yes", top={"Yes": -0.1, "No": -2.5}),  # p_true
    ])
    judged = judge_sample(SAMPLE, llm, make_answerer("evidence"),
                          make_judges("trivial,p_true", Settings()), rule=rule_of("p_true"))
    assert len(llm.seen) == 2
    assert judged.answer.text == "Paris" and judged.answer.evidence == [0]
    assert [x.judge for x in judged.verdicts] == ["trivial", "p_true"]
    assert judged.decision.keep is True
    assert judged.verdicts[1].cost.calls == 1 and judged.verdicts[0].cost.calls == 0


def test_the_judges_read_from_their_reader_and_the_answer_keeps_its_own_log_probs():
    # The small model answers; p_true's prompt goes to its reader, intrinsic's to the writer.
    # token_prob keeps the answer's own generation log-probs (how sure the writer was).
    writer = ScriptedLLM(["Paris\nEvidence: ## Passage-0 ##", "Yes"])  # answer, intrinsic
    reader = ScriptedLLM([ScriptedReply("No", top={"Yes": -2.5, "No": -0.1})])  # p_true
    judged = judge_sample(SAMPLE, writer, make_answerer("evidence"),
                          make_judges("token_prob,intrinsic,p_true", Settings()),
                          rule=rule_of("p_true"),
                          reader=lambda judge: reader if judge == "p_true" else writer)
    assert len(writer.seen) == 2 and len(reader.seen) == 1
    assert "Paris" in reader.seen[0][-1]["content"]  # the reader judged the writer's answer
    verdicts = {v.judge: v for v in judged.verdicts}
    assert verdicts["p_true"].score < 0.2 and judged.decision.keep is False
    assert verdicts["token_prob"].details["source"] == "generation"


def test_a_judge_model_that_is_neither_packaged_nor_a_file_is_refused(tmp_path):
    from ragshield.errors import OptionError
    from ragshield.llm.factory import make_reader

    with pytest.raises(OptionError, match="judge model 'qwen-70b' is neither a packaged model "
                                          r"\(qwen-0.5b"):
        make_reader(Settings(cache_dir=tmp_path), "qwen-70b")


class SlowServerLLM(ScriptedLLM):
    """Looks like an OpenAI-compatible server: calls may overlap."""

    backend = "openai"

    def __init__(self) -> None:
        super().__init__(respond=self.reply)
        self.active = 0
        self.peak = 0
        self.lock = threading.Lock()

    def reply(self, messages) -> str:
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        time.sleep(0.05)
        with self.lock:
            self.active -= 1
        return messages[-1]["content"].split("Question: ")[1].split("\n")[0]


def test_servers_are_judged_concurrently_in_input_order():
    llm = SlowServerLLM()
    samples = [Sample(id=str(i), question=f"q{i}", passages=[Passage("x")]) for i in range(8)]
    results = list(judge_samples(samples, llm, make_answerer("vanilla"),
                                 make_judges("trivial", Settings()), rule_of("trivial"),
                                 concurrency=4))
    assert [r.answer.text for r in results] == [f"q{i}" for i in range(8)]
    assert llm.peak > 1


def test_in_process_models_are_judged_one_at_a_time():
    llm = SlowServerLLM()
    llm.backend = "llama.cpp"
    samples = [Sample(id=str(i), question=f"q{i}", passages=[Passage("x")]) for i in range(4)]
    list(judge_samples(samples, llm, make_answerer("vanilla"), [], rule_of("trivial"),
                       concurrency=4))
    assert llm.peak == 1


def short_demo_samples() -> list[Sample]:
    samples = list(load_dataset(DEMO_SAMPLES))
    samples.sort(key=lambda s: sum(len(p.text) for p in s.passages))
    answerable = next(s for s in samples if s.answerable)
    unanswerable = next(s for s in samples if s.answerable is False)
    return [answerable, unanswerable]


def test_every_judge_on_real_demo_samples(embedded_llm):
    judges = make_judges("all", Settings())
    for sample in short_demo_samples():
        judged = judge_sample(sample, embedded_llm, make_answerer("evidence"), judges)
        base_seconds = sum(c.seconds for c in judged.answer.calls)
        assert judged.answer.calls and base_seconds > 0
        assert {x.judge for x in judged.verdicts} == set(JUDGES)
        for verdict in judged.verdicts:
            if verdict.judge == "nli":
                assert not verdict.available  # no classifier model is packaged
                continue
            assert verdict.available and verdict.error is None, verdict
            assert isinstance(verdict.keep, bool), verdict
            assert verdict.score is None or isinstance(verdict.score, float)
            json.dumps(verdict.details)
            if verdict.judge in ("trivial", "token_prob"):
                # trivial asks nothing; token_prob reads the base answer's own log-probs
                assert verdict.cost.calls == 0
                continue
            assert verdict.trace and all(call.purpose for call in verdict.trace)
            cost = verdict.cost
            assert cost.calls == len(verdict.trace) and cost.seconds > 0
            assert cost.prompt_tokens > 0
        assert judged.decision.rule == DEFAULT_DECISION_RULE
        assert judged.decision.keep is not None


def test_a_packaged_reader_judges_the_embedded_models_answer(embedded_llm, model_cache_dir,
                                                             monkeypatch):
    # The 0.5B writes the answer; the packaged SmolLM2, opened by name as --judge-model
    # opens it, serves every judge's call, and the answer model none of them.
    from ragshield.llm.factory import make_reader

    reader = make_reader(Settings(cache_dir=model_cache_dir), "smollm2-135m")
    served = {"writer": 0, "reader": 0}
    for role, llm in (("writer", embedded_llm), ("reader", reader)):
        for method in ("chat", "score"):
            original = getattr(llm, method)

            def counted(*args, _original=original, _role=role, **kwargs):
                served[_role] += 1
                return _original(*args, **kwargs)
            monkeypatch.setattr(llm, method, counted)
    judged = judge_sample(short_demo_samples()[0], embedded_llm, make_answerer("evidence"),
                          make_judges("token_prob,pre_answer,p_true", Settings()),
                          rule=rule_of("p_true"), reader=lambda _judge: reader)
    assert all(v.available and v.error is None for v in judged.verdicts), judged.verdicts
    assert served["writer"] == len(judged.answer.calls) == 1
    assert served["reader"] == sum(v.cost.calls for v in judged.verdicts) >= 2
    assert {v.judge: v.details.get("source") for v in judged.verdicts}["token_prob"] == \
        "generation"
    assert judged.decision.keep is not None

