"""Runs of given answers started from the Dashboard (issue 15): the form's Answers choice
builds a config with the `given` answerer whatever the answerer box holds, a dataset (or the
samples a run takes) without given answers is refused with a message naming it, the choice
falls back to generated answers where the dataset carries none, a run started this way stores
the given texts as its answers without generating any, and the named endpoint takes the
choice as a last, optional argument."""

from __future__ import annotations

import html
from typing import Sequence

import pytest

from ragshield.errors import OptionError
from ragshield.pipeline import RunModels
from ragshield.run_config import RunConfig
from ragshield.services.runs.runs import (GivenAnswers, NoGivenAnswersError, RunLauncher,
                                          form_config, given_answers, record_run)
from ragshield.store.runs import get_run, list_runs
from ragshield.store.sample_records import sample_case
from ragshield.store.sample_import import import_samples
from ragshield.types import GivenAnswer, Message, Passage, Sample
from ragshield.ui.context import UiContext
from ragshield.ui.dashboard_tab import (answer_source_form, answers_note, answers_update,
                                        start_run_from_form)
from tests.app_support import dashboard_client
from tests.fakes import ScriptedLLM, ScriptedReply

SQLITE_ONLY = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
GIVEN = "outside <answers>"  # a name to escape
PLAIN = "plain"
ANSWERS = {"g0": "Paris", "g1": "Milan", "g2": "I don't know"}


def sample(id: str, given: str | None) -> Sample:
    return Sample(id=id, question=f"What is the capital of France ({id})?",
                  passages=[Passage("Paris is the capital of France.")],
                  reference_answers=["Paris"], answerable=True,
                  given_answer=None if given is None else GivenAnswer(given, "acme-rag"))


def p_true_only(messages: Sequence[Message]) -> ScriptedReply:
    """The one model call a run of trivial and p_true makes on a given answer."""
    assert "Is the proposed answer to the question true?" in messages[-1]["content"], messages
    return ScriptedReply("Yes", top={"Yes": -0.1, "No": -2.5})


@pytest.fixture
def context(store, settings) -> UiContext:
    import_samples(store, GIVEN, [sample(id, text) for id, text in ANSWERS.items()])
    import_samples(store, PLAIN, [sample(f"p{i}", None) for i in range(3)])
    # One scripted model answers and reads for every judge: runs started here say so.
    return UiContext(settings=settings.model_copy(update={"judge_model": "self"}), store=store)


def launcher_of(context: UiContext, llm: ScriptedLLM) -> RunLauncher:
    return RunLauncher(context.store, context.settings,
                       open_models=lambda config: RunModels(main=llm))


def test_the_form_builds_a_config_with_the_given_answerer_when_chosen(settings):
    def config(*answers: str | None, answerer: str | None = "vanilla") -> RunConfig:
        return form_config(settings, "d", 2, answerer, ["trivial"], "trivial", "given", False,
                           *answers)

    # given: the answerer box is disabled in the form, and whatever it holds is not used
    assert config("given").answerer == config("given", answerer=None).answerer == "given"
    assert config("generated").answerer == config().answerer == "vanilla"  # older callers
    assert config(None).answerer == "vanilla"
    assert config("generated", answerer=None).answerer == settings.answerer
    given = config("given")
    assert (given.dataset, given.limit, given.judges, given.retrieval) == (
        "d", 2, ["trivial"], "given")
    with pytest.raises(OptionError, match="answers must be generated or given"):
        config("telepathy")
    configured = config("generated", "configured")
    assert (configured.model, configured.backend, configured.switch) == (
        None, settings.backend, False)
    larger = config("generated", "qwen-1.5b")
    assert (larger.model, larger.backend) == ("qwen-1.5b", "embedded")
    assert config("generated", None, True).switch


def test_given_answers_are_counted_among_the_samples_a_run_takes(context):
    store = context.store
    import_samples(store, "late", [sample("l0", None), sample("l1", None), sample("l2", "Paris")])
    assert given_answers(store, GIVEN) == GivenAnswers(GIVEN, 3, 3)
    assert given_answers(store, PLAIN) == GivenAnswers(PLAIN, 3, 0)
    assert given_answers(store, "late") == GivenAnswers("late", 3, 1)
    assert given_answers(store, "late", 2) == GivenAnswers("late", 2, 0)
    assert given_answers(store, "late", 10) == GivenAnswers("late", 3, 1)
    with pytest.raises(LookupError, match="no dataset named 'nope'"):
        given_answers(store, "nope")


@SQLITE_ONLY
def test_a_dataset_without_given_answers_is_refused_with_a_message_naming_it(context):
    store = context.store
    import_samples(store, "late", [sample("l0", None), sample("l1", None), sample("l2", "Paris")])
    launcher = launcher_of(context, ScriptedLLM())
    cases = (
        ((PLAIN, 2, "evidence", ["trivial"], "trivial", "given", False, "given"),
         f"dataset {PLAIN!r} carries no given answers to judge"),
        ((PLAIN, None, None, ["trivial"], "trivial", "given", False, "given"),
         f"dataset {PLAIN!r} carries no given answers to judge"),
        (("late", 2, "evidence", ["trivial"], "trivial", "given", False, "given"),
         "the first 2 samples of dataset 'late' carry no given answers"),
        ((GIVEN, 2, "evidence", ["trivial"], "trivial", "bm25", False, "given"),
         "use them with retrieval 'given'"),
        (("nope", 2, "evidence", ["trivial"], "trivial", "given", False, "given"),
         "no dataset named 'nope'"),
        ((GIVEN, 2, "evidence", ["trivial"], "trivial", "given", False, "by magic"),
         "answers must be generated or given"),
    )
    for form, expected in cases:
        message, run_id = start_run_from_form(context, launcher, *form)
        assert run_id is None and "rs-msg-error" in message, message
        assert expected in html.unescape(message), message
        assert "<answers>" not in message
    assert list_runs(store) == [] and launcher.started() == []
    # The same check for every face: record_run refuses it, and takes a dataset whose first
    # samples carry some (those without fail alone).
    with pytest.raises(NoGivenAnswersError, match="dataset 'plain' carries no given answers"):
        record_run(store, context.settings, RunConfig(dataset=PLAIN, answerer="given",
                                                      judges=["trivial"], rule="trivial"))
    assert record_run(store, context.settings, RunConfig(
        dataset="late", answerer="given", judges=["trivial"], rule="trivial")).run_id


def test_a_run_of_given_answers_stores_the_given_texts_as_its_answers(context):
    llm = ScriptedLLM(respond=p_true_only)
    launcher = launcher_of(context, llm)
    # the answerer box still holds an answerer: the form disables it, and it is not used
    message, run_id = start_run_from_form(context, launcher, GIVEN, None, "evidence",
                                          ["trivial", "p_true"], "p_true", "given", False,
                                          "given")
    assert run_id is not None, message
    assert f"Run {run_id} started on {html.escape(GIVEN)}, judging its given answers" in message
    assert launcher.wait(run_id, timeout=30)
    [run] = list_runs(context.store)
    assert (run.id, run.status, run.done, run.total, run.failures) == (run_id, "done", 3, 3, 0)
    assert get_run(context.store, run_id).config["answerer"] == "given"
    for sample_id, text in ANSWERS.items():
        case = sample_case(context.store, run_id, sample_id)
        main = case.answers["main"]
        assert (main["answerer"], main["text"], main["model"]) == ("given", text, "acme-rag")
        assert {v["judge"] for v in case.verdicts} == {"trivial", "p_true"}
    # one p_true question per sample, no answer generated
    assert len(llm.seen) == 3


def test_the_answers_choice_follows_the_dataset_and_the_answerer_box_follows_it(context):
    assert answers_note(context, GIVEN) == (
        True, f"{GIVEN} carries given answers for 3 of 3 samples")
    has_given, note = answers_note(context, PLAIN)
    assert not has_given and f"{PLAIN} carries no given answers" in note
    assert not answers_note(context, "nope")[0] and not answers_note(context, None)[0]

    assert answers_update(context, GIVEN, "given").value == "given"
    assert answers_update(context, GIVEN, "generated").value == "generated"
    fallen_back = answers_update(context, PLAIN, "given")
    assert fallen_back.value == "generated" and fallen_back.info == note

    answerer, retrieval = answer_source_form("given")
    assert answerer.interactive is False and "not used" in answerer.info
    assert (retrieval.value, retrieval.interactive) == ("given", False)
    answerer, retrieval = answer_source_form("generated")
    assert answerer.interactive is True and retrieval.interactive is True


@SQLITE_ONLY
def test_the_named_endpoint_takes_the_newer_choices_last_and_optional(context):
    with dashboard_client(context) as client:
        api = client.view_api(return_format="dict", print_info=False)
        parameters = api["named_endpoints"]["/dashboard_start_run"]["parameters"]
        newest = {p["label"]: p["parameter_default"] for p in parameters[-3:]}
        assert newest == {"Answers": "generated", "Answer model": "configured",
                          "Also store the larger model's answers (switch curve)": False}
        # the form's own events stay private: the app's API is as before (tests/test_app.py)
        assert set(api["named_endpoints"]) == {
            "/dashboard_refresh", "/dashboard_live_refresh", "/dashboard_runs",
            "/dashboard_progress", "/dashboard_datasets", "/dashboard_live",
            "/dashboard_start_run"}
        # Nothing here starts a run (that would open the real model): both are refused.
        message, *_ = client.predict(None, PLAIN, 2, "evidence", ["trivial"], "trivial",
                                     "given", False, "given", api_name="/dashboard_start_run")
        assert "rs-msg-error" in message and "carries no given answers" in message
        older, *_ = client.predict(None, PLAIN, 2, "evidence", ["trivial"], "p_true", "given",
                                   False, api_name="/dashboard_start_run")
        assert "rule &#x27;p_true&#x27; must be" in older
    assert list_runs(context.store) == []
