"""Which model answers where nobody names one (llm/packaged_models.default_answer_model): the
packaged 1.5B where it is installed, reading for every judge itself at the thresholds measured
for it; a run records that model so that a later default does not change it, and a run
recorded before runs named their model keeps the 0.5B that answered it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ragshield.api.schemas import AskBody
from ragshield.judges.judge_readers import THRESHOLDS, JudgeReaders, answer_model_name
from ragshield.llm import packaged_models
from ragshield.llm.packaged_models import LARGER_MODEL, SMALLER_MODEL, default_answer_model
from ragshield.policies.rule_figures import default_rule_reason
from ragshield.run_config import RunConfig, RunConfigError, check_config
from ragshield.services.questions.ask_types import LARGER_FALLBACK, AskRequest
from ragshield.services.questions.asking import OpenedModels, ask
from ragshield.services.questions.settlement import (MAX_K, AskInputError, check_request,
                                                     default_rule, settle)
from ragshield.services.runs.runs import record_run
from ragshield.store.runs import get_run
from ragshield.types import Passage

QUESTION = AskRequest(question="Which river flows through Paris?",
                      passages=(Passage("Paris lies on the Seine, in the north of France."),),
                      judges=("token_prob", "pre_answer", "p_true"), rule="pre_answer",
                      keep_record=False)


@pytest.fixture
def unnamed(settings):
    """The settings with no answering model named (the fixture's name the 0.5B)."""
    return settings.model_copy(update={"model": None})


def test_the_larger_model_answers_where_installed_else_the_smaller(monkeypatch):
    assert packaged_models.larger_installed()  # requirements.txt installs it
    assert default_answer_model() == LARGER_MODEL == answer_model_name("embedded", None)
    monkeypatch.setattr(packaged_models, "larger_installed", lambda: False)
    assert default_answer_model() == SMALLER_MODEL == answer_model_name("embedded", None)


def test_an_ask_with_nothing_named_reads_every_judge_from_the_answering_1_5b(store, unnamed):
    settled = settle(store, unnamed, QUESTION)
    assert settled.readers == JudgeReaders()  # the answering model reads for every judge
    thresholds = {j.name: j.threshold for j in settled.judges if hasattr(j, "threshold")}
    assert {j: thresholds[j] for j in ("pre_answer", "p_true")} == {
        j: THRESHOLDS[LARGER_MODEL][j] for j in ("pre_answer", "p_true")}
    assert default_rule(unnamed, store).reason == default_rule_reason()  # measured on the 1.5B
    # The 0.5B named: the 1.5B reads pre_answer and p_true, as measured for that pairing.
    small = settle(store, unnamed, replace(QUESTION, model=SMALLER_MODEL))
    assert small.readers.reader("pre_answer") == LARGER_MODEL


def test_the_larger_fallback_is_refused_where_the_larger_model_already_answers(store, unnamed):
    with pytest.raises(AskInputError, match="already answers: answer with a smaller model"):
        settle(store, unnamed, replace(QUESTION, fallback=LARGER_FALLBACK))
    chosen = settle(store, unnamed, replace(QUESTION, model=SMALLER_MODEL,
                                            fallback=LARGER_FALLBACK))
    assert chosen.request.fallback == LARGER_FALLBACK


def test_a_run_records_its_answering_model_and_an_older_run_keeps_the_0_5b(store, unnamed):
    recorded = get_run(store, record_run(store, unnamed, RunConfig(
        dataset="demo", limit=1, judges=["pre_answer"])).run_id).config
    assert recorded["model"] == LARGER_MODEL and recorded["judge_readers"] == {}
    small = get_run(store, record_run(store, unnamed.model_copy(update={"model": SMALLER_MODEL}),
                                      RunConfig(dataset="demo", limit=1,
                                                judges=["pre_answer"])).run_id).config
    assert small["model"] == SMALLER_MODEL
    assert small["judge_readers"] == {"pre_answer": LARGER_MODEL}
    # Recorded before runs named their model: the 0.5B answered it, and answers it on resume.
    older = RunConfig.from_dict({"dataset": "demo", "judges": ["pre_answer"],
                                 "judge_readers": {"pre_answer": LARGER_MODEL}})
    assert older.answer_model(unnamed) == SMALLER_MODEL
    assert older.settings(unnamed).model == SMALLER_MODEL
    with pytest.raises(RunConfigError, match="already answers this run"):
        check_config(RunConfig(dataset="demo", judges=["pre_answer"], model=LARGER_MODEL,
                               switch=True))


def test_a_real_ask_with_nothing_named_answers_and_judges_with_the_1_5b_reading_once(
        store, unnamed, larger_model_path):
    """The 1.5B writes the answer and serves every judge; the judges' calls start from the
    passages the answer already read (the shared prefix stays in llama.cpp's cache)."""
    result = ask(store, unnamed, OpenedModels(unnamed, store), QUESTION)
    assert "1.5b" in result.model
    calls = [call for verdict in result.judged.verdicts for call in verdict.trace]
    assert calls and all("1.5b" in call.model for call in calls)
    assert all(v.available and v.error is None for v in result.judged.verdicts)
    reused = [call.cached_prompt_tokens for call in calls if call.prompt_tokens]
    assert reused and min(reused) > 0
    pre_answer = next(v for v in result.judged.verdicts if v.judge == "pre_answer")
    assert pre_answer.details.get("threshold") == THRESHOLDS[LARGER_MODEL]["pre_answer"]


@pytest.mark.parametrize("k", [0, MAX_K + 1])
def test_k_is_bounded_by_one_limit_the_api_and_the_cli_read(k) -> None:
    with pytest.raises(AskInputError, match=f"k must be from 1 to {MAX_K}"):
        check_request(replace(QUESTION, k=k))
    assert [getattr(m, "le") for m in AskBody.model_fields["k"].metadata
            if hasattr(m, "le")] == [MAX_K]
    check_request(replace(QUESTION, k=MAX_K))
