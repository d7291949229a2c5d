"""A policy and a trained judge are read by the models they were fitted on
(fitted_readers.py): their thresholds and weights were fitted on one model's probabilities,
which another model's would not match. They record those models, and every run and ask that
decides by them pins their judges to them, whatever reads for the other judges."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from ragshield.errors import OptionError
from ragshield.judges.judge_readers import (SELF, THRESHOLDS, JudgeReaders, answer_model_name,
                                            judge_readers)
from ragshield.llm.packaged_models import SMALLER_MODEL, LARGER_MODEL, SMALLEST_MODEL
from ragshield.pipeline import RunModels
from ragshield.policies.fitting import LabelledScores, fit_policy
from ragshield.policies.policy import Policy, PolicyFormatError
from ragshield.run_config import RunConfig
from ragshield.services.learning.policies import get_policy, save_policy
from ragshield.services.questions.ask_types import AskRequest
from ragshield.services.questions.asking import prepare
from ragshield.services.runs.runs import execute, record_run
from ragshield.store.runs import get_run
from ragshield.types import Passage
from tests.fakes import ScriptedLLM, ScriptedReply
from tests.judged_demo import JUDGE, judged_demo_run

# Where the 0.5B answers, p_true reads from the 1.5B.
DEFAULT = judge_readers(None, backend="embedded", answer_model=SMALLER_MODEL)


@pytest.fixture
def settings(settings):
    """The 0.5B answering, the pairing these tests are about (where nobody names a model, the
    1.5B answers and reads for every judge: tests/test_default_answerer.py)."""
    return settings.model_copy(update={"model": SMALLER_MODEL})


def test_honouring_pins_each_fitted_judge_to_its_model_and_nothing_else():
    assert DEFAULT.reader("p_true") == LARGER_MODEL
    assert DEFAULT.honouring({"p_true": LARGER_MODEL}, SMALLER_MODEL) is DEFAULT
    own = DEFAULT.honouring({"p_true": SMALLER_MODEL}, SMALLER_MODEL)
    assert own.reader("p_true") is None and own.reader("pre_answer") == LARGER_MODEL
    assert own.options() == {judge: {"threshold": THRESHOLDS[LARGER_MODEL][judge]}
                             for judge in ("pre_answer", "support")}
    assert "p_true: the answering model" in own.describe()
    # A named judge model reads for every judge but the fitted one.
    named = JudgeReaders(every="/models/big.gguf").honouring({"p_true": SELF}, SMALLER_MODEL)
    assert named.reader("p_true") is None and named.reader("calibration") == "/models/big.gguf"
    larger = JudgeReaders().honouring({"p_true": LARGER_MODEL}, SMALLER_MODEL)
    assert larger.models(["p_true", "token_prob"]) == {LARGER_MODEL}
    # Where the fitted model answers, its judge reads from it: no second copy is opened.
    assert JudgeReaders().honouring({"p_true": LARGER_MODEL}, LARGER_MODEL) == JudgeReaders()
    assert DEFAULT.read_by(["p_true", "token_prob"], SMALLER_MODEL) == {
        "p_true": LARGER_MODEL, "token_prob": SMALLER_MODEL}
    assert answer_model_name("embedded", None) == LARGER_MODEL  # installed: it answers
    assert answer_model_name("embedded", SMALLER_MODEL) == SMALLER_MODEL
    assert answer_model_name("openai", "served-7b") == "served-7b"


def _policy(read_by: dict[str, str] | None, judge: str = "p_true") -> Policy:
    """A policy on `judge` fitted on synthetic scores that separate good from bad."""
    rng = np.random.default_rng(0)
    good = rng.random(300) < 0.5
    scores = np.clip(np.where(good, 0.7, 0.3) + rng.normal(0, 0.1, 300), 0, 1)
    data = LabelledScores(np.asarray([f"s{i}" for i in range(300)]), scores, good,
                          np.full(300, "person"))
    return fit_policy("guard", judge, data, alpha=0.2, delta=0.1, read_by=read_by)


def test_a_policy_keeps_its_readers_in_its_json_and_older_ones_read_from_the_answering_model():
    policy = _policy({"p_true": LARGER_MODEL})
    again = Policy.from_dict(policy.to_dict())
    assert again.read_by == {"p_true": LARGER_MODEL} == again.reads_from
    body = policy.to_dict()
    del body["read_by"]  # a policy fitted before readers were recorded
    assert Policy.from_dict(body).reads_from == {"p_true": SELF}
    with pytest.raises(PolicyFormatError, match=r"policy\.read_by: names pre_answer, but the "
                                                r"policy reads p_true"):
        Policy.from_dict({**policy.to_dict(), "read_by": {"pre_answer": LARGER_MODEL}})
    with pytest.raises(PolicyFormatError, match=r"policy\.read_by: expected judge names"):
        Policy.from_dict({**policy.to_dict(), "read_by": {"p_true": 3}})


def test_a_policy_fitted_on_a_run_records_the_model_its_judge_read_from(store, settings):
    _world, run_id = judged_demo_run(store, settings, [JUDGE])
    assert get_run(store, run_id).config["judge_model"] is None  # "self": read by the answerer
    from ragshield.services.learning.policies import fit_run_policy

    policy = fit_run_policy(store, run_id, JUDGE, "fitted", alpha=0.2, delta=0.1)
    assert get_policy(store, "fitted").read_by == {JUDGE: SMALLER_MODEL} == policy.read_by


@pytest.mark.parametrize("fitted_by, configured, expected", [
    ({"p_true": SMALLER_MODEL}, None, None),  # default readers would hand p_true to the 1.5B
    ({"p_true": LARGER_MODEL}, SELF, LARGER_MODEL),  # "self" would have the 0.5B read it
    (None, None, None),  # fitted before readers were recorded: the answering model
])
def test_asks_and_runs_deciding_by_a_policy_read_its_judge_by_the_fitted_model(
        store, settings, fitted_by, configured, expected):
    save_policy(store, _policy(fitted_by))
    settings = settings.model_copy(update={"judge_model": configured})
    request = AskRequest(question="Who?", passages=(Passage("Text."),),
                         judges=("p_true", "pre_answer"), rule="policy:guard", keep_record=False)
    prepared = prepare(store, settings, request)
    assert isinstance(prepared.rule, Policy) and prepared.readers.reader("p_true") == expected
    other = None if configured == SELF else LARGER_MODEL
    assert prepared.readers.reader("pre_answer") == other  # not the policy's: as configured
    thresholds = {judge.name: judge.threshold for judge in prepared.judges}
    assert thresholds["p_true"] == (0.5 if expected is None else THRESHOLDS[LARGER_MODEL]["p_true"])

    config = get_run(store, record_run(store, settings, RunConfig(
        dataset="demo", judges=["p_true", "pre_answer"], rule="policy:guard")).run_id).config
    assert RunConfig.from_dict(config).readers().reader("p_true") == expected


def test_a_run_refuses_models_that_lack_a_reader_its_config_names(store, settings):
    run_id = record_run(store, settings, RunConfig(dataset="demo", limit=1,
                                                   judges=["p_true"], rule="p_true")).run_id
    with pytest.raises(ValueError, match=r"p_true \(qwen-1.5b\) read from another model"):
        execute(store, settings, run_id, models=RunModels(main=ScriptedLLM()))
    llm = ScriptedLLM(respond=lambda _messages: ScriptedReply("Yes", {"Yes": -0.1}))
    done = execute(store, settings, run_id, models=RunModels(main=llm, readers={"p_true": llm}))
    assert done.outcome.status == "done"


def test_a_run_records_the_configured_model_and_its_readers_name_it(store, settings,
                                                                   tmp_path):
    """Under RAGSHIELD_MODEL a run that names no model records that model: a resume opens
    it whatever the environment says then, and a policy fitted on the run says who read."""
    own = str(tmp_path / "team.gguf")
    configured = settings.model_copy(update={"model": own, "judge_model": "self"})
    config = RunConfig.from_dict(get_run(store, record_run(store, configured, RunConfig(
        dataset="demo", judges=["p_true"], rule="p_true")).run_id).config)
    assert config.model == own and config.read_by(["p_true"]) == {"p_true": own}
    assert config.settings(settings).model == own
    smallest = RunConfig.from_dict(get_run(store, record_run(store, configured, RunConfig(
        dataset="demo", judges=["p_true"], rule="p_true", small_model=True)).run_id).config)
    assert smallest.model is None and smallest.read_by(["p_true"]) == {"p_true": SMALLEST_MODEL}


def test_the_smallest_model_names_itself_as_the_answering_model():
    config = RunConfig(dataset="demo", judges=["p_true"], small_model=True)
    assert config.read_by(["p_true"]) == {"p_true": SMALLEST_MODEL}


def test_the_guard_takes_the_in_process_lock_for_a_policy_read_by_a_packaged_model(
        store, settings):
    """On a served backend an ask runs beside others, unless one of its judges reads from a
    packaged model in process: here the policy's."""
    import threading

    from ragshield.services.guarding.guard import ModelGate

    save_policy(store, _policy({"p_true": LARGER_MODEL}))
    served = settings.model_copy(update={"backend": "openai", "model": None,
                                         "judge_model": SELF})
    lock = threading.Lock()
    gate = ModelGate(served, lock)
    request = AskRequest(question="Who?", passages=(Passage("Text."),), judges=("p_true",),
                         keep_record=False)
    assert gate.turn(prepare(store, served, request)) is gate.remote
    by_policy = prepare(store, served, replace(request, rule="policy:guard"))
    assert by_policy.readers.reader("p_true") == LARGER_MODEL
    assert gate.turn(by_policy) is lock


def test_a_policy_fitted_on_a_model_this_machine_lacks_is_refused_naming_it(store, settings):
    """An imported policy whose judge was read by a GGUF file that is not here: the ask and
    the run say which policy, which judge and which model, before any model call."""
    save_policy(store, _policy({"p_true": "/models/team-70b.gguf"}))
    expected = (r"policy policy:guard@1 was fitted on p_true read by '/models/team-70b.gguf', "
                r"which cannot be opened here \('/models/team-70b.gguf' is neither a packaged")
    with pytest.raises(OptionError, match=expected):
        prepare(store, settings, AskRequest(question="Who?", passages=(Passage("Text."),),
                                            judges=("p_true",), rule="policy:guard"))
    with pytest.raises(OptionError, match=expected):
        record_run(store, settings, RunConfig(dataset="demo", judges=["p_true"],
                                              rule="policy:guard"))
    # On a served backend the name is the server's to know.
    served = settings.model_copy(update={"backend": "openai", "model": None})
    asked = prepare(store, served, AskRequest(question="Who?", passages=(Passage("Text."),),
                                              judges=("p_true",), rule="policy:guard"))
    assert asked.readers.reader("p_true") == "/models/team-70b.gguf"
