"""Which model each judge reads from, and at which threshold (judges/judge_readers.py): the
measured default where the packaged 0.5B answers, a named judge model, and "self"."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ragshield.config import Settings
from ragshield.judges.judge_readers import (READ_BY_LARGER, SELF, THRESHOLDS, JudgeReaders,
                                            judge_readers)
from ragshield.judges.registry import make_judges
from ragshield.llm.packaged_models import SMALLER_MODEL, LARGER_MODEL, SMALLEST_MODEL
from ragshield.pipeline import _SampleWorker, open_models
from ragshield.run_config import RunConfig, RunConfigError, check_config, with_readers
from ragshield.services.questions.ask_types import AskRequest
from ragshield.services.questions.asking import OpenedModels, ask, prepare
from ragshield.services.questions.settlement import AskInputError, check_request
from ragshield.services.runs.runs import record_run
from ragshield.store.runs import get_run
from ragshield.types import Passage
from tests.fakes import ScriptedLLM

OWN = {"pre_answer": 0.5, "p_true": 0.5}
LARGER_PAIR = {judge: THRESHOLDS[LARGER_MODEL][judge] for judge in OWN}


@pytest.fixture
def settings(settings):
    """The 0.5B answering, the pairing these tests are about (where nobody names a model, the
    1.5B answers and reads for every judge: tests/test_default_answerer.py)."""
    return settings.model_copy(update={"model": SMALLER_MODEL})


def _thresholds(judges) -> dict[str, float]:
    return {judge.name: judge.threshold for judge in judges if hasattr(judge, "threshold")}


def test_where_the_small_model_answers_pre_answer_p_true_and_support_read_from_the_larger():
    default = judge_readers(None, backend="embedded", answer_model=SMALLER_MODEL)
    assert {judge: default.reader(judge) for judge in READ_BY_LARGER} == {
        "pre_answer": LARGER_MODEL, "p_true": LARGER_MODEL, "support": LARGER_MODEL}
    assert default.reader("calibration") is None and default.reader("intrinsic") is None
    assert "pre_answer: qwen-1.5b" in default.describe()
    assert default.describe().endswith("the other judges: the answering model")
    # Nothing measured says another answering model should hand its judges over; the 1.5B,
    # which answers where nobody names a model, reads for itself.
    for backend, model in (("embedded", None), ("embedded", LARGER_MODEL),
                           ("embedded", SMALLEST_MODEL),
                           ("embedded", "/models/own.gguf"), ("openai", None)):
        assert judge_readers(None, backend=backend, answer_model=model) == JudgeReaders()


def test_without_the_larger_models_packages_every_judge_reads_from_the_answering_model(
        monkeypatch):
    import ragshield.judges.judge_readers as readers

    assert readers.larger_installed()  # requirements.txt installs it
    monkeypatch.setattr(readers, "larger_installed", lambda: False)  # a wheel without the extra
    assert judge_readers(None, backend="embedded", answer_model=SMALLER_MODEL) == JudgeReaders()
    assert judge_readers(LARGER_MODEL, backend="embedded", answer_model=None).every == LARGER_MODEL


def test_a_named_judge_model_reads_for_every_judge_and_self_names_the_answering_model():
    named = judge_readers("/models/big.gguf", backend="embedded", answer_model=None)
    assert named.reader("pre_answer") == named.reader("calibration") == "/models/big.gguf"
    assert named.describe() == "every judge: /models/big.gguf"
    for backend in ("embedded", "openai"):
        plain = judge_readers(SELF, backend=backend, answer_model=None)
        assert plain == JudgeReaders() and plain.reader("pre_answer") is None


def test_each_judge_gets_the_thresholds_measured_for_its_own_reader(settings):
    def thresholds(readers: JudgeReaders) -> dict[str, float]:
        return _thresholds(make_judges("pre_answer,p_true", settings, readers.options()))

    default = judge_readers(None, backend="embedded", answer_model=SMALLER_MODEL)
    assert thresholds(default) == LARGER_PAIR
    assert all(t > 0.5 for t in THRESHOLDS[LARGER_MODEL].values())
    assert thresholds(JudgeReaders(every=LARGER_MODEL)) == LARGER_PAIR
    for every in (None, SMALLER_MODEL, "/models/own.gguf"):
        assert thresholds(JudgeReaders(every=every)) == OWN
    # One of the two read by the larger model: only it takes the larger model's threshold.
    mixed = JudgeReaders(by_judge={"p_true": LARGER_MODEL})
    assert thresholds(mixed) == {"pre_answer": 0.5, "p_true": THRESHOLDS[LARGER_MODEL]["p_true"]}
    # The larger model answering reads for itself: its own thresholds, not the 0.5B's.
    own = make_judges("pre_answer,p_true", settings, JudgeReaders().options(LARGER_MODEL))
    assert _thresholds(own) == LARGER_PAIR
    own = make_judges("pre_answer,p_true", settings, JudgeReaders().options(SMALLER_MODEL))
    assert _thresholds(own) == OWN


def test_an_ask_settles_its_readers_before_any_model_call(store, settings):
    request = AskRequest(question="Who?", passages=(Passage("Text."),),
                         judges=("pre_answer", "p_true"), keep_record=False)
    default = prepare(store, settings, request)
    assert default.readers.reader("pre_answer") == LARGER_MODEL
    assert _thresholds(default.judges) == LARGER_PAIR
    plain = prepare(store, settings, replace(request, judge_model=SELF))
    assert plain.readers == JudgeReaders() and _thresholds(plain.judges) == OWN
    larger = prepare(store, settings, replace(request, model=LARGER_MODEL))
    assert larger.readers == JudgeReaders() and _thresholds(larger.judges) == LARGER_PAIR
    configured = prepare(store, settings.model_copy(update={"judge_model": SELF}), request)
    assert configured.readers == JudgeReaders()
    served = prepare(store, settings.model_copy(update={"backend": "openai", "model": None}),
                     request)
    assert served.readers == JudgeReaders()


def test_an_ask_names_the_judge_models_it_accepts():
    with pytest.raises(AskInputError, match="unknown judge model 'big'; one of qwen-0.5b.*self"):
        check_request(AskRequest(question="Who?", judge_model="big"))


def test_a_new_run_stores_who_reads_for_which_judge(store, settings):
    def recorded(settings: Settings, **config) -> dict:
        new = record_run(store, settings, RunConfig(dataset="demo", limit=2,
                                                    judges=["pre_answer", "p_true"], **config))
        return get_run(store, new.run_id).config

    default = recorded(settings)
    assert default["judge_model"] is None
    assert default["judge_readers"] == {"pre_answer": LARGER_MODEL, "p_true": LARGER_MODEL}
    plain = recorded(settings.model_copy(update={"judge_model": SELF}))
    assert plain["judge_model"] is None and plain["judge_readers"] == {}
    named = recorded(settings, judge_model=SMALLER_MODEL)
    assert named["judge_model"] == SMALLER_MODEL and named["judge_readers"] == {}
    assert recorded(settings, small_model=True)["judge_readers"] == {}


def test_a_run_recorded_before_judge_readers_existed_keeps_its_meaning(settings):
    old = RunConfig.from_dict({"dataset": "toy", "judges": ["pre_answer", "p_true"],
                               "judge_model": None})
    assert old.readers() == JudgeReaders()
    worker = _SampleWorker(old, settings, models=None)  # type: ignore[arg-type]  # unused
    assert _thresholds(worker.judges) == OWN
    settled = with_readers(old, settings)
    assert settled.readers().reader("pre_answer") == LARGER_MODEL
    assert with_readers(settled, settings.model_copy(update={"judge_model": SELF})) == settled
    worker = _SampleWorker(settled, settings, models=None)  # type: ignore[arg-type]
    assert _thresholds(worker.judges) == LARGER_PAIR


def test_a_run_refuses_a_reader_that_is_neither_packaged_nor_a_file():
    config = RunConfig(dataset="toy", judges=["p_true"], judge_readers={"p_true": "qwen-70b"})
    with pytest.raises(RunConfigError, match="judge_model 'qwen-70b' is neither"):
        check_config(config)


def test_a_run_opens_each_reader_once_and_shares_the_switchs_larger_model(monkeypatch, settings):
    opened: list[str | None] = []

    def fake_llm(settings, *, store=None, packaged=None):
        opened.append(packaged)
        return ScriptedLLM()

    monkeypatch.setattr("ragshield.llm.factory.make_llm", fake_llm)
    config = RunConfig(dataset="toy", judges=["token_prob", "pre_answer", "p_true"],
                       judge_readers={"pre_answer": LARGER_MODEL, "p_true": LARGER_MODEL})
    switching = replace(config, switch=True)
    models = open_models(switching, settings, store=None)  # type: ignore[arg-type]
    assert opened == [None, LARGER_MODEL]  # the answering model, and the 1.5B once
    assert models.reader("pre_answer") is models.reader("p_true") is models.larger
    assert models.reader("token_prob") is models.main
    opened.clear()
    models = open_models(config, settings, store=None)  # type: ignore[arg-type]
    assert opened == [None, LARGER_MODEL] and models.larger is None
    assert models.reader("p_true") is not models.main


def test_where_the_small_model_answers_the_larger_one_reads_pre_answer(
        store, settings, qwen_path, larger_model_path):
    """A real ask on the embedded models with the 0.5B answering (the settings fixture's) and
    no judge model named: the 0.5B writes the answer and serves intrinsic, the 1.5B serves
    pre_answer and p_true, each call's trace says which, and the ask's record stores the
    readers."""
    request = AskRequest(question="Which river flows through Paris?",
                         passages=(Passage("Paris lies on the Seine, in the north of France."),),
                         judges=("intrinsic", "pre_answer", "p_true"), rule="pre_answer")
    result = ask(store, settings, OpenedModels(settings, store), request)
    served = {verdict.judge: {call.model for call in verdict.trace}
              for verdict in result.judged.verdicts}
    assert all(v.available and v.error is None for v in result.judged.verdicts)
    assert "0.5b" in result.model and all("0.5b" in m for m in served["intrinsic"])
    assert served["pre_answer"] == served["p_true"] != served["intrinsic"]
    assert all("1.5b" in model for model in served["pre_answer"] | served["p_true"])
    assert {call.model for call in result.judged.answer.calls} == served["intrinsic"]
    thresholds = {v.judge: v.details.get("threshold") for v in result.judged.verdicts}
    assert thresholds["pre_answer"] == THRESHOLDS[LARGER_MODEL]["pre_answer"]
    config = get_run(store, result.record.run_id).config
    assert config["judge_readers"] == {"pre_answer": LARGER_MODEL, "p_true": LARGER_MODEL}
