"""The run engine with a scripted model: one transaction per sample, failures recorded and
retried, interruption and resume without duplicates, re-judging without re-generating.
Runs on SQLite and on PostgreSQL."""

from __future__ import annotations

import pytest

from ragshield.config import DEFAULT_DECISION_RULE
from sqlalchemy import func, select

from ragshield.llm.base import LLMError
from ragshield.pipeline import RunModels, execute_run, rejudge_run, start_run
from ragshield.run_config import RunConfig
from ragshield.store.models import AnswerRow, Run, RunFailure, VerdictRow
from ragshield.store.run_owner import RunHeldError, held_run
from ragshield.store.runs import delete_verdicts, failures, list_runs
from ragshield.store.sample_import import import_samples
from ragshield.types import Passage, Sample
from tests.fakes import ScriptedLLM, ScriptedReply

QUESTIONS = [f"What is the capital of country {i}?" for i in range(6)]


@pytest.fixture
def dataset(store):
    samples = [
        Sample(id=f"s{i}", question=q, passages=[Passage(text=f"The capital is City{i}.")],
               reference_answers=[f"City{i}"], answerable=i % 2 == 0)
        for i, q in enumerate(QUESTIONS)
    ]
    import_samples(store, "toy", samples)
    return "toy"


def healthy(messages) -> ScriptedReply:
    return ScriptedReply("yes", top={"yes": -0.2, "no": -1.8})


def models(respond) -> RunModels:
    return RunModels(main=ScriptedLLM(respond=respond))


def count(store, table) -> int:
    with store.session() as session:
        return session.scalar(select(func.count()).select_from(table))


def test_a_run_saves_every_sample_once_with_its_verdicts(store, dataset, settings):
    run_id = start_run(store, RunConfig(dataset=dataset, judges=["trivial", "p_true"],
                                        rule="p_true"))
    outcome = execute_run(store, run_id, settings, models=models(healthy), progress=False)
    assert (outcome.status, outcome.done, outcome.total, outcome.failed) == ("done", 6, 6, 0)
    assert count(store, AnswerRow) == 6 and count(store, VerdictRow) == 12
    [summary] = list_runs(store)
    assert (summary.done, summary.total, summary.failures, summary.status) == (6, 6, 0, "done")
    with store.session() as session:
        run = session.get(Run, run_id)
        assert run.config["judges"] == ["trivial", "p_true"] and run.code_version
        assert run.finished_at is not None


def test_limit_and_all_judges_are_stored_explicitly(store, dataset, settings):
    run_id = start_run(store, RunConfig(dataset=dataset, limit=2))
    with store.session() as session:
        run = session.get(Run, run_id)
        assert run.samples_total == 2
        assert "counterfactual" in run.config["judges"] and "all" not in run.config["judges"]


def test_failed_samples_are_recorded_and_retried_on_resume(store, dataset, settings):
    def flaky(messages):
        if "country 3" in messages[-1]["content"]:
            raise LLMError("server said 503")
        return healthy(messages)

    run_id = start_run(store, RunConfig(dataset=dataset, judges=["p_true"], rule="p_true"))
    first = execute_run(store, run_id, settings, models=models(flaky), progress=False)
    assert (first.status, first.done, first.failed) == ("incomplete", 5, 1)
    assert list(failures(store, run_id)) == ["s3"]
    assert "503" in failures(store, run_id)["s3"]

    again = execute_run(store, run_id, settings, models=models(flaky), progress=False)
    assert (again.done, again.failed) == (5, 1)
    with store.session() as session:
        assert session.scalar(select(RunFailure.attempts)) == 2

    resumed = execute_run(store, run_id, settings, models=models(healthy), progress=False)
    assert (resumed.status, resumed.done, resumed.failed) == ("done", 6, 0)
    assert failures(store, run_id) == {}
    assert count(store, AnswerRow) == 6 and count(store, VerdictRow) == 6


def test_a_judge_error_fails_the_whole_sample(store, dataset, settings):
    def judge_fails(messages):
        if len(messages) > 2 and any("country 1" in m["content"] for m in messages):
            raise LLMError("timeout")
        return healthy(messages)

    run_id = start_run(store, RunConfig(dataset=dataset, judges=["counterfactual"]))
    outcome = execute_run(store, run_id, settings, models=models(judge_fails), progress=False)
    assert outcome.failed == 1 and "counterfactual: timeout" in failures(store, run_id)["s1"]
    with store.session() as session:  # nothing half-written for the failed sample
        assert session.scalar(select(func.count()).select_from(AnswerRow)) == 5


def test_interrupted_run_resumes_without_duplicates(store, dataset, settings):
    calls = {"n": 0}

    def interrupted(messages):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return healthy(messages)

    run_id = start_run(store, RunConfig(dataset=dataset, judges=["trivial"], rule="trivial"))
    with pytest.raises(KeyboardInterrupt):
        execute_run(store, run_id, settings, models=models(interrupted), progress=False)
    with store.session() as session:
        assert session.get(Run, run_id).status == "interrupted"
    assert count(store, AnswerRow) == 2

    outcome = execute_run(store, run_id, settings, models=models(healthy), progress=False)
    assert (outcome.done, outcome.status) == (6, "done")
    with store.session() as session:
        per_sample = session.execute(
            select(AnswerRow.sample_id, func.count()).group_by(AnswerRow.sample_id)).all()
    assert len(per_sample) == 6 and all(n == 1 for _, n in per_sample)


def test_a_run_held_by_a_live_process_is_refused_before_any_model_is_opened(store, dataset,
                                                                             settings):
    run_id = start_run(store, RunConfig(dataset=dataset, judges=["trivial"], rule="trivial"))
    with held_run(store, run_id):  # this process: alive; models=None would open the real one
        with pytest.raises(RunHeldError, match=f"run {run_id} is being run by pid"):
            execute_run(store, run_id, settings, progress=False)
        with pytest.raises(RunHeldError):
            rejudge_run(store, run_id, "trivial", settings, progress=False)
        assert [r.status for r in list_runs(store)] == ["pending"]
    outcome = execute_run(store, run_id, settings, models=models(healthy), progress=False)
    assert outcome.status == "done"
    with store.session() as session:
        assert session.get(Run, run_id).owner_pid is None  # released at the end


def test_without_a_rule_the_default_gives_way_to_majority_when_its_judge_is_absent(store,
                                                                                   dataset):
    kept = start_run(store, RunConfig(dataset=dataset, judges=["pre_answer", "support",
                                                               "trivial"]))
    replaced = start_run(store, RunConfig(dataset=dataset, judges=["trivial", "p_true"]))
    with store.session() as session:
        assert session.get(Run, kept).config["rule"] == DEFAULT_DECISION_RULE
        assert session.get(Run, replaced).config["rule"] == "majority"


def test_rejudge_adds_judges_without_generating_again(store, dataset, settings):
    run_id = start_run(store, RunConfig(dataset=dataset, judges=["trivial"], rule="trivial"))
    execute_run(store, run_id, settings, models=models(healthy), progress=False)
    # token_prob reads the saved answer's log-probs: an LLM with no scripted reply proves
    # that nothing is generated again.
    silent = ScriptedLLM()
    outcome = rejudge_run(store, run_id, "token_prob,trivial", settings,
                          models=RunModels(main=silent), progress=False)
    assert (outcome.added, outcome.failed) == (6, 0) and silent.seen == []
    with store.session() as session:
        judges = session.scalars(select(VerdictRow.judge)).all()
        assert sorted(set(judges)) == ["token_prob", "trivial"] and len(judges) == 12
        assert session.get(Run, run_id).config["judges"] == ["trivial", "token_prob"]
        scores = session.scalars(select(VerdictRow.score).where(VerdictRow.judge == "token_prob"))
        assert all(score is not None for score in scores)


def test_rejudge_records_only_judges_with_a_saved_verdict_and_names_each_failure(
        store, dataset, settings):
    run_id = start_run(store, RunConfig(dataset=dataset, judges=["trivial"], rule="trivial"))
    execute_run(store, run_id, settings, models=models(healthy), progress=False)

    def down(messages):
        raise LLMError("backend down")

    outcome = rejudge_run(store, run_id, "p_true", settings, models=models(down),
                          progress=False)
    assert (outcome.added, outcome.failed) == (0, 6)
    assert sorted(outcome.failures) == [f"s{i}" for i in range(6)]
    assert all(e.startswith("p_true: ") and "backend down" in e
               for e in outcome.failures.values())
    with store.session() as session:
        assert session.get(Run, run_id).config["judges"] == ["trivial"]
        assert session.scalars(select(VerdictRow.judge)).all() == ["trivial"] * 6

    def down_for_s1(messages):
        if QUESTIONS[1] in messages[-1]["content"]:
            raise LLMError("backend down")
        return healthy(messages)

    outcome = rejudge_run(store, run_id, "p_true", settings, models=models(down_for_s1),
                          progress=False)
    assert (outcome.added, outcome.failed, list(outcome.failures)) == (5, 1, ["s1"])
    with store.session() as session:
        assert session.get(Run, run_id).config["judges"] == ["trivial", "p_true"]


def test_deleted_verdicts_are_judged_again_and_only_theirs(store, dataset, settings):
    run_id = start_run(store, RunConfig(dataset=dataset, judges=["trivial", "token_prob"],
                                        rule="trivial"))
    execute_run(store, run_id, settings, models=models(healthy), progress=False)
    other = start_run(store, RunConfig(dataset=dataset, judges=["token_prob"], rule="token_prob"))
    execute_run(store, other, settings, models=models(healthy), progress=False)
    assert delete_verdicts(store, run_id, ["token_prob"]) == 6
    with store.session() as session:
        left = session.execute(select(VerdictRow.judge, AnswerRow.run_id)
                               .join(AnswerRow, AnswerRow.id == VerdictRow.answer_id)).all()
    assert sorted(set(left)) == [("token_prob", other), ("trivial", run_id)] and len(left) == 12
    outcome = rejudge_run(store, run_id, "token_prob", settings,
                          models=RunModels(main=ScriptedLLM()), progress=False)
    assert (outcome.added, outcome.failed) == (6, 0)


def test_extra_answers_for_fallback_are_saved_by_role(store, dataset, settings):
    run_id = start_run(store, RunConfig(dataset=dataset, judges=["trivial"], rule="trivial",
                                        fallback=True, limit=2))
    execute_run(store, run_id, settings, models=models(healthy), progress=False)
    with store.session() as session:
        roles = session.scalars(select(AnswerRow.role).order_by(AnswerRow.id)).all()
        norag = session.scalars(select(AnswerRow).where(AnswerRow.role == "norag")).all()
    assert sorted(roles) == ["main", "main", "norag", "norag"]
    assert all(row.passages == [] and "City" not in str(row.messages) for row in norag)


@pytest.mark.parametrize("config, fragment", [
    (RunConfig(dataset="toy", judges=["oracle"]), "unknown judge"),
    (RunConfig(dataset="toy", answerer="poet"), "unknown answerer"),
    (RunConfig(dataset="toy", retrieval="grep"), "retrieval must be one of"),
    (RunConfig(dataset="toy", switch=True, model="qwen-1.5b"), "already answers this run"),
    (RunConfig(dataset="toy", switch=True, backend="openai"), "needs backend 'embedded'"),
    (RunConfig(dataset="toy", judges=["trivial"], rule="p_true"), "rule 'p_true'"),
    (RunConfig(dataset="toy", noise=2), "noise chunks come from a corpus"),
    (RunConfig(dataset="toy", judge_model="qwen-70b"),
     "judge_model 'qwen-70b' is neither a packaged model"),
])
def test_bad_configs_fail_before_any_model_call(store, dataset, config, fragment):
    with pytest.raises(ValueError, match=fragment):
        start_run(store, config)
    assert count(store, Run) == 0


def test_unknown_dataset_fails_before_any_model_call(store):
    with pytest.raises(LookupError, match="no dataset named 'nope'"):
        start_run(store, RunConfig(dataset="nope", judges=["trivial"], rule="trivial"))


def test_config_from_json_names_unknown_fields():
    with pytest.raises(ValueError, match="unknown field"):
        RunConfig.from_dict({"dataset": "x", "judgez": ["trivial"]})
    with pytest.raises(ValueError, match="'dataset' is missing"):
        RunConfig.from_dict({"judges": ["trivial"]})
