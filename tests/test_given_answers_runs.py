"""Judging given answers (issue 15): the `given` answerer, token_prob's source of log-probs,
`run --answers given` end to end through the CLI (no answer generated, resumable), `run
--resume` and `--rejudge` on such runs (the stored options refused, failed verdicts, SIGTERM
while the models open), the same metrics for a run's generated answers and for those answers
imported back as given ones, and the real embedded model judging given answers."""

from __future__ import annotations

import json
import math
import os
import signal
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

import pytest
from typer.testing import CliRunner

from ragshield.answerers.context import shared_messages
from ragshield.answerers.given import PURPOSE, GivenAnswerer, MissingGivenAnswerError
from ragshield.answerers.registry import ANSWERERS, GIVEN, make_answerer
from ragshield.answerers.vanilla import INSTRUCTIONS
from ragshield.cli.app import app
from ragshield.datasets.formats.unified import to_record
from ragshield.errors import OptionError
from ragshield.judges.calibration import QUESTION as CALIBRATION_QUESTION
from ragshield.judges.calibration import CalibrationJudge
from ragshield.judges.token_prob import TokenProbJudge, reply_logprobs
from ragshield.llm.base import LLMError
from ragshield.pipeline import RunModels
from ragshield.run_config import RunConfig, RunConfigError, check_config
from ragshield.services.runs.metric_views import run_metrics
from ragshield.services.runs.runs import execute, record_run, run_answerer
from ragshield.store.database import open_store
from ragshield.store.runs import get_run, iter_main_answers
from ragshield.store.sample_records import sample_case
from ragshield.store.sample_import import import_samples
from ragshield.types import (GIVEN_CALL, CostSummary, GivenAnswer, Message, Passage, Sample,
                             TokenLogprob)
from tests.fakes import ScriptedLLM, ScriptedReply

PASSAGES = [Passage("Paris is the capital of France.", title="Paris"),
            Passage("Lyon is a city in France.")]
TOKENS = [TokenLogprob("Par", -0.1), TokenLogprob("is", -0.3)]


def given_sample(given: GivenAnswer | None, id: str = "s1") -> Sample:
    return Sample(id=id, question="What is the capital of France?", passages=list(PASSAGES),
                  reference_answers=["Paris"], answerable=True, given_answer=given)


# -- the answerer --------------------------------------------------------------------------

def test_the_given_answer_is_the_answer_and_no_model_is_asked():
    sample = given_sample(GivenAnswer("Paris", "acme-rag", TOKENS, [0]))
    llm = ScriptedLLM()
    answer = make_answerer("given").answer(sample, llm)
    assert (answer.answerer, answer.text, answer.raw, answer.evidence) == (
        "given", "Paris", "Paris", [0])
    assert answer.messages == shared_messages(sample, INSTRUCTIONS)
    assert answer.conversation[-1] == {"role": "assistant", "content": "Paris"}
    (entry,) = answer.calls
    assert (entry.kind, entry.purpose, entry.output, entry.logprobs) == (
        GIVEN_CALL, PURPOSE, "Paris", TOKENS)
    assert CostSummary.of(answer.calls).calls == 0 and not llm.seen
    assert GivenAnswerer().model_name(sample, llm) == "acme-rag"
    bare = make_answerer("given").answer(given_sample(GivenAnswer("I don't know")), llm)
    assert bare.calls == [] and bare.evidence == [] and bare.refusal
    assert GivenAnswerer().model_name(given_sample(GivenAnswer("x")), llm) is None


def test_a_sample_without_a_given_answer_is_a_user_error_naming_it():
    with pytest.raises(MissingGivenAnswerError, match="sample 's9' has no given answer"):
        GivenAnswerer().answer(given_sample(None, id="s9"), ScriptedLLM())


def test_token_prob_says_whether_the_log_probs_were_given_or_re_scored():
    given = GivenAnswerer().answer(given_sample(GivenAnswer("Paris", tokens=TOKENS)),
                                   ScriptedLLM())
    llm = ScriptedLLM()
    verdict = TokenProbJudge().judge(given_sample(None), given, llm)
    assert verdict.details["source"] == "given" and not llm.seen and not verdict.trace
    assert verdict.score == pytest.approx(math.exp(-0.2))
    assert "given log-probs" in verdict.rationale
    assert reply_logprobs(given) == (TOKENS, "given")

    plain = GivenAnswerer().answer(given_sample(GivenAnswer("Paris")), ScriptedLLM())
    scorer = ScriptedLLM(scores={"Paris": [-0.5]})
    rescored = TokenProbJudge().judge(given_sample(None), plain, scorer)
    assert rescored.details["source"] == "re-scored"
    assert "re-scored by the judge model" in rescored.rationale
    assert scorer.seen == [plain.messages] and rescored.trace[0].kind == "score"


def test_a_judge_that_continues_the_answer_continues_the_given_one():
    answer = GivenAnswerer().answer(given_sample(GivenAnswer("Lyon")), ScriptedLLM())
    llm = ScriptedLLM(["3"])
    CalibrationJudge().judge(given_sample(None), answer, llm)
    (messages,) = llm.seen
    assert messages[:-1] == answer.conversation
    assert messages[-2] == {"role": "assistant", "content": "Lyon"}
    assert messages[-1] == {"role": "user", "content": CALIBRATION_QUESTION}


def test_given_is_chosen_by_answers_not_offered_as_a_generator():
    assert GIVEN not in ANSWERERS and isinstance(make_answerer("given"), GivenAnswerer)
    assert run_answerer("generated", None, "evidence") == "evidence"
    assert run_answerer("generated", "crag", "evidence") == "crag"
    assert run_answerer("given", None, "evidence") == run_answerer("given", "Given", "x") == GIVEN
    with pytest.raises(OptionError, match="not written by the answerer 'vanilla'"):
        run_answerer("given", "vanilla", "evidence")
    with pytest.raises(OptionError, match="answers must be generated or given, got 'guess'"):
        run_answerer("guess", None, "evidence")
    with pytest.raises(RunConfigError, match="use them with retrieval 'given'"):
        check_config(RunConfig(dataset="d", answerer="given", judges=["trivial"],
                               retrieval="bm25"))
    with pytest.raises(RunConfigError, match="given answers come from the dataset"):
        check_config(RunConfig(dataset="d", answerer="given", judges=["trivial"],
                               small_model=True, switch=True))


# -- through the CLI -------------------------------------------------------------------------

class Models:
    """Stands in for ragshield.llm.factory.make_llm: every run opens `llm`."""

    def __init__(self) -> None:
        self.llm = ScriptedLLM()

    def __call__(self, settings: Any, store: Any = None,
                 packaged: str | None = None) -> ScriptedLLM:
        return self.llm


@pytest.fixture
def cli(settings, monkeypatch) -> tuple[Models, Any]:
    """(the models the runs open, a function running `python -m ragshield ARGS` in process
    on the test's SQLite database)."""
    import ragshield.llm.factory as factory

    monkeypatch.setenv("RAGSHIELD_DATABASE_URL", settings.database_url)
    models = Models()
    monkeypatch.setattr(factory, "make_llm", models)

    def invoke(*args: str):
        return CliRunner().invoke(app, list(args))

    return models, invoke


def write_dataset(path: Path, samples: Sequence[Sample]) -> Path:
    path.write_text("".join(json.dumps(to_record(s)) + "\n" for s in samples), encoding="utf-8")
    return path


def p_true_only(messages: Sequence[Message]) -> ScriptedReply:
    """The one chat call a run of trivial, token_prob and p_true may make on a given answer."""
    assert "Is the proposed answer to the question true?" in messages[-1]["content"], messages
    return ScriptedReply("Yes", top={"Yes": -0.1, "No": -2.5})


ANSWERS = {"s1": GivenAnswer("Paris", "acme-rag", TOKENS, [0]),
           "s2": GivenAnswer("Milan", cited=[1]),
           "s3": GivenAnswer("I don't know")}


def test_run_answers_given_judges_the_dataset_answers_without_generating(cli, settings,
                                                                         tmp_path):
    models, invoke = cli
    path = write_dataset(tmp_path / "mine.jsonl",
                         [given_sample(given, id) for id, given in ANSWERS.items()])
    assert invoke("datasets", "import", "mine", str(path)).exit_code == 0
    models.llm = ScriptedLLM(respond=p_true_only, scores={"Milan": [-2.0], "I don't know": [-1.0]})
    result = invoke("run", "--dataset", "mine", "--answers", "given", "--judges",
                    "trivial,token_prob,p_true", "--rule", "trivial", "--json", "--no-progress")
    assert result.exit_code == 0, result.output
    outcome = json.loads(result.stdout)
    assert (outcome["status"], outcome["done"], outcome["failed"]) == ("done", 3, 0)
    # Three p_true questions, two re-scored answers; no answer was generated.
    assert len(models.llm.params) == 3 and len(models.llm.seen) == 5

    store = open_store(settings.database_url)
    try:
        assert get_run(store, outcome["run_id"]).config["answerer"] == "given"
        for sample_id, given in ANSWERS.items():
            case = sample_case(store, outcome["run_id"], sample_id)
            main = case.answers["main"]
            assert (main["answerer"], main["text"], main["raw"], main["model"]) == (
                "given", given.text, given.text, given.model)
            assert main["evidence"] == (given.cited or [])
            assert main["messages"][-1]["content"].endswith(INSTRUCTIONS)
            assert [c["kind"] for c in main["trace"]] == (["given"] if given.tokens else [])
            verdicts = {v["judge"]: v for v in case.verdicts}
            assert set(verdicts) == {"trivial", "token_prob", "p_true"}
            assert verdicts["token_prob"]["details"]["source"] == (
                "given" if given.tokens else "re-scored")
            assert f"Proposed answer: {given.text}" in verdicts["p_true"]["trace"][0][
                "messages"][-1]["content"]
        first = sample_case(store, outcome["run_id"], "s1")
        assert first.answers["main"]["trace"][0]["logprobs"] == [
            {"token": "Par", "logprob": -0.1, "top": {}}, {"token": "is", "logprob": -0.3,
                                                           "top": {}}]
    finally:
        store.close()


def test_a_sample_without_an_answer_fails_alone_and_the_run_resumes(cli, settings, tmp_path):
    models, invoke = cli
    path = write_dataset(tmp_path / "mine.jsonl",
                         [given_sample(ANSWERS["s1"], "s1"), given_sample(None, "s2")])
    assert invoke("datasets", "import", "mine", str(path)).exit_code == 0
    first = invoke("run", "--dataset", "mine", "--answers", "given", "--judges", "trivial",
                   "--json", "--no-progress")
    assert first.exit_code == 1
    outcome = json.loads(first.stdout)
    assert (outcome["status"], outcome["done"], outcome["failed"]) == ("incomplete", 1, 1)
    (failure,) = outcome["failures"]
    assert failure["sample_id"] == "s2"
    assert failure["error"].startswith("MissingGivenAnswerError: sample 's2' has no given answer")

    write_dataset(path, [given_sample(ANSWERS["s1"], "s1"), given_sample(ANSWERS["s2"], "s2")])
    assert invoke("datasets", "import", "mine", str(path)).exit_code == 0
    resumed = invoke("run", "--resume", str(outcome["run_id"]), "--json", "--no-progress")
    assert resumed.exit_code == 0, resumed.output
    assert json.loads(resumed.stdout)["status"] == "done"
    assert not models.llm.seen
    store = open_store(settings.database_url)
    try:
        assert sample_case(store, outcome["run_id"], "s2").answers["main"]["text"] == "Milan"
    finally:
        store.close()


@pytest.mark.parametrize(("args", "message"), [
    (["--answerer", "vanilla"], "not written by the answerer 'vanilla': leave the answerer out"),
    (["--retrieval", "bm25"], "use them with retrieval 'given'"),
])
def test_answers_given_refuses_what_it_cannot_mean(cli, args, message):
    _, invoke = cli
    result = invoke("run", "--dataset", "demo", "--answers", "given", *args)
    assert result.exit_code == 1 and message in result.stderr


# -- resume and re-judge through the CLI -----------------------------------------------------

def judged_run(invoke, tmp_path: Path) -> int:
    """The id of a finished run of trivial on the given answers of s1, s2 and s3."""
    path = write_dataset(tmp_path / "mine.jsonl",
                         [given_sample(given, id) for id, given in ANSWERS.items()])
    assert invoke("datasets", "import", "mine", str(path)).exit_code == 0
    result = invoke("run", "--dataset", "mine", "--answers", "given", "--judges", "trivial",
                    "--json", "--no-progress")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["run_id"]


def stored_run(settings, run_id: int):
    store = open_store(settings.database_url)
    try:
        return get_run(store, run_id)
    finally:
        store.close()


@pytest.mark.parametrize(("mode", "args", "named"), [
    ("--resume", ["--judges", "nosuch", "--limit", "1", "--answerer", "vanilla"],
     "--limit, --answerer, --judges"),
    ("--resume", ["--judges", "p_true"], "--judges"),
    ("--resume", ["--rule", "majority", "--fallback", "--name", "x"], "--rule, --fallback"),
    ("--resume", ["--model", "qwen-1.5b", "--judge-model", "self"], "--model, --judge-model"),
    ("--resume", ["--answers", "generated", "--k", "5", "--seed", "1"], "--k, --seed"),
    ("--rejudge", ["--limit", "1", "--concurrency", "2"], "--limit, --concurrency"),
    ("--rejudge", ["--rule", "p_true", "--retrieval", "bm25"], "--rule, --retrieval"),
])
def test_resume_and_rejudge_refuse_the_stored_runs_options(cli, settings, tmp_path, mode,
                                                            args, named):
    models, invoke = cli
    run_id = judged_run(invoke, tmp_path)
    before = stored_run(settings, run_id)
    result = invoke("run", mode, str(run_id), *args, "--json", "--no-progress")
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: {named}") and "Traceback" not in result.output
    if mode == "--resume":
        assert f"run {run_id} resumes with its stored options" in line
        assert f"`run --rejudge {run_id} --judges NAMES`" in line
    else:
        assert "it takes --judges only" in line
    assert result.stdout == "" and not models.llm.seen
    assert stored_run(settings, run_id) == before


def test_resume_takes_the_options_of_how_it_runs(cli, settings, tmp_path):
    models, invoke = cli
    run_id = judged_run(invoke, tmp_path)
    result = invoke("run", "--resume", str(run_id), "--concurrency", "2", "--no-llm-cache",
                    "--no-progress", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["status"] == "done"
    assert stored_run(settings, run_id).config["judges"] == ["trivial"]


def test_a_rejudge_whose_verdicts_fail_exits_1_lists_them_and_records_no_judge(
        cli, settings, tmp_path, monkeypatch):
    import ragshield.llm.factory as factory

    models, invoke = cli
    monkeypatch.setattr(factory, "make_reader", lambda *_, **__: models.llm)
    run_id = judged_run(invoke, tmp_path)

    def down(_messages: Sequence[Message]) -> ScriptedReply:
        raise LLMError("backend down")

    models.llm = ScriptedLLM(respond=down)
    text = invoke("run", "--rejudge", str(run_id), "--judges", "p_true", "--no-progress")
    assert text.exit_code == 1, text.output
    assert "verdicts_added=0, verdicts_failed=3" in text.stdout
    for sample_id in ANSWERS:
        assert f"  failed {sample_id}: p_true: " in text.stdout
    failed = invoke("run", "--rejudge", str(run_id), "--judges", "p_true", "--json",
                    "--no-progress")
    assert failed.exit_code == 1, failed.output
    payload = json.loads(failed.stdout)
    assert (payload["verdicts_added"], payload["verdicts_failed"]) == (0, 3)
    assert [f["sample_id"] for f in payload["failures"]] == list(ANSWERS)
    assert all(f["error"].startswith("p_true: ") and "backend down" in f["error"]
               for f in payload["failures"])
    assert stored_run(settings, run_id).config["judges"] == ["trivial"]

    models.llm = ScriptedLLM(respond=p_true_only)
    healed = invoke("run", "--rejudge", str(run_id), "--judges", "p_true", "--json",
                    "--no-progress")
    assert healed.exit_code == 0, healed.output
    assert json.loads(healed.stdout) == {"run_id": run_id, "verdicts_added": 3,
                                         "verdicts_failed": 0, "failures": []}
    assert stored_run(settings, run_id).config["judges"] == ["trivial", "p_true"]


def test_sigterm_while_the_models_open_marks_the_run_interrupted(cli, settings, tmp_path,
                                                                 monkeypatch):
    import ragshield.llm.factory as factory

    models, invoke = cli
    path = write_dataset(tmp_path / "mine.jsonl",
                         [given_sample(given, id) for id, given in ANSWERS.items()])
    assert invoke("datasets", "import", "mine", str(path)).exit_code == 0

    def terminated_while_opening(*_: Any, **__: Any) -> ScriptedLLM:
        # Without the CLI's handler SIGTERM would end pytest itself.
        assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.SIG_IGN)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(10)  # the handler raises here
        raise AssertionError("SIGTERM was not delivered")

    monkeypatch.setattr(factory, "make_llm", terminated_while_opening)
    stopped = invoke("run", "--dataset", "mine", "--answers", "given", "--judges", "trivial",
                     "--json", "--no-progress")
    assert stopped.exit_code == 143, stopped.output
    assert "run 1 is marked interrupted" in stopped.stderr and "--resume 1" in stopped.stderr
    assert stored_run(settings, 1).status == "interrupted"

    monkeypatch.setattr(factory, "make_llm", models)
    resumed = invoke("run", "--resume", "1", "--json", "--no-progress")
    assert resumed.exit_code == 0, resumed.output
    assert (json.loads(resumed.stdout)["status"], stored_run(settings, 1).status) == (
        "done", "done")


# -- generated, exported, imported: the same metrics -----------------------------------------

QUESTIONS = {  # question -> (reference, the scripted answer, log-prob of its first token)
    "What is the capital of France?": ("Paris", "Paris", -0.1),
    "What is the capital of Italy?": ("Rome", "Milan", -0.1),
    "What is the capital of Spain?": ("Madrid", "Madrid", -4.0),
    "What is the capital of Peru?": ("Lima", "I don't know", -0.2),
    "What is the capital of Chile?": ("Santiago", "Lima", -3.0),
}


def scripted_answer(messages: Sequence[Message]) -> ScriptedReply:
    question = next(q for q in QUESTIONS if q in messages[-1]["content"])
    _, answer, first = QUESTIONS[question]
    return ScriptedReply(f"Answer: {answer}\nEvidence: ## Passage-0 ##", top={"Answer:": first})


def exported(store, run_id: int) -> list[Sample]:
    """The run's samples with its stored answers as given answers: the final answer, the
    log-probs of its generation, the passages it cites."""
    samples = []
    for saved in iter_main_answers(store, run_id):
        tokens, source = reply_logprobs(saved.answer)
        assert source == "generation"
        samples.append(replace(saved.sample, given_answer=GivenAnswer(
            saved.answer.text, "test-double", tokens, saved.answer.evidence)))
    return samples


def test_generated_answers_judged_again_as_given_answers_give_the_same_metrics(
        cli, settings, tmp_path):
    models, invoke = cli
    samples = [Sample(id=f"q{i}", question=q, passages=[Passage(f"The capital is {ref}.")],
                      reference_answers=[ref], answerable=i != 3)
               for i, (q, (ref, _, _)) in enumerate(QUESTIONS.items())]
    path = write_dataset(tmp_path / "capitals.jsonl", samples)
    assert invoke("datasets", "import", "capitals", str(path)).exit_code == 0
    run = ["--judges", "trivial,token_prob", "--rule", "token_prob", "--json", "--no-progress"]
    models.llm = ScriptedLLM(respond=scripted_answer)
    generated = invoke("run", "--dataset", "capitals", *run)
    assert generated.exit_code == 0, generated.output
    generated_id = json.loads(generated.stdout)["run_id"]

    store = open_store(settings.database_url)
    try:
        write_dataset(tmp_path / "given.jsonl", exported(store, generated_id))
        assert invoke("datasets", "import", "given", str(tmp_path / "given.jsonl")).exit_code == 0
        models.llm = ScriptedLLM()  # any model call fails the sample
        judged = invoke("run", "--dataset", "given", "--answers", "given", *run)
        assert judged.exit_code == 0, judged.output
        assert not models.llm.seen
        given_id = json.loads(judged.stdout)["run_id"]
        before = run_metrics(store, settings, generated_id, n_resamples=0).by_judge
        after = run_metrics(store, settings, given_id, n_resamples=0).by_judge
        assert before["token_prob"]["counts"] != {"AK": 0, "AD": 0, "UK": 0, "UD": 0}
        assert json.dumps(after, sort_keys=True, default=str) == json.dumps(
            before, sort_keys=True, default=str)
        sources = {v["details"]["source"] for saved in iter_main_answers(store, given_id)
                   for v in sample_case(store, given_id, saved.sample.id).verdicts
                   if v["judge"] == "token_prob"}
        assert sources == {"given"}
    finally:
        store.close()


# -- the real embedded model ---------------------------------------------------------------

def test_the_embedded_model_judges_given_answers(embedded_llm, settings):
    store = open_store(settings.database_url)
    try:
        import_samples(store, "real", [given_sample(GivenAnswer("Paris"), "right"),
                                       given_sample(GivenAnswer("Berlin"), "wrong")])
        new = record_run(store, settings, RunConfig(
            dataset="real", answerer="given", judges=["token_prob", "p_true"], rule="p_true",
            judge_model="self"))
        result = execute(store, settings, new.run_id, models=RunModels(main=embedded_llm))
        assert result.outcome.status == "done", result.failures
        verdicts = {sample_id: {v["judge"]: v for v in
                                sample_case(store, new.run_id, sample_id).verdicts}
                    for sample_id in ("right", "wrong")}
        for judged in verdicts.values():
            token_prob, p_true = judged["token_prob"], judged["p_true"]
            assert token_prob["details"]["source"] == "re-scored"
            assert [c["kind"] for c in token_prob["trace"]] == ["score"]
            assert 0 < token_prob["score"] <= 1 and p_true["available"]
            assert 0 <= p_true["score"] <= 1
        assert verdicts["right"]["token_prob"]["score"] > verdicts["wrong"]["token_prob"]["score"]
    finally:
        store.close()
