"""A judge that learns from a dataset's labels (SQuAD 2.0 samples from tests/data, flags
standing in for people, and people's labels winning): kind signals (a logistic regression over
cheap signals and a run's LLM reads, measured by grouped cross-validation) and kind
cross-encoder (the packaged MiniLM fine-tuned, measured on held-out articles); kept with its
model card, used as trained:NAME; and every way it refuses bad input without leaving half a
model behind."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragshield.cli import app
from ragshield.config import Settings
from ragshield.datasets.registry import load_dataset
from ragshield.errors import OptionError, UserError
from ragshield.judges.judge_readers import SELF
from ragshield.judges.registry import judge_names, make_judge
from ragshield.judges.trained import (CARD_FILE, WEIGHTS_FILES, TrainedJudgeError, judges_dir,
                                      weights_digest)
from ragshield.judges.training import group_of, load_base
from ragshield.llm.packaged_models import SMALLER_MODEL, LARGER_MODEL
from ragshield.pipeline import RunModels
from ragshield.retrieval.embeddings import packaged_embedding_path
from ragshield.run_config import RunConfig
from ragshield.services.annotation.labelling import add_annotator, label_sample
from ragshield.services.learning.judge_training import reads_reader, train_judge, trained_judges
from ragshield.services.questions.ask_types import AskRequest
from ragshield.services.questions.asking import prepare
from ragshield.services.runs.runs import execute, record_run
from ragshield.store.database import open_store
from ragshield.store.sample_import import import_samples
from ragshield.store.samples import load_sample
from ragshield.types import Answer, GivenAnswer, Passage
from tests.conftest import TEST_DATA, lane
from tests.fakes import ScriptedLLM, ScriptedReply
from tests.reliability.fake_openai import FakeOpenAIServer, Fault, Request, healthy_reply

# The subset keeps the first 24 answerable and unanswerable questions of its first article and
# at least the first 4 of each of the other 7, in the file's order: the same questions as in
# the full file are picked below.
SQUAD = TEST_DATA / "squad2_dev_part_a.jsonl"
PER_ARTICLE = 8  # 64 questions of 8 articles: enough of each kind, and 15 s of training


def squad_subset(per_article: int = PER_ARTICLE) -> list:
    """The first `per_article` answerable and unanswerable questions of each article."""
    kept, seen = [], {}
    for sample in load_dataset(SQUAD):
        key = (group_of(sample), bool(sample.answerable))
        if seen.get(key, 0) < per_article // 2:
            seen[key] = seen.get(key, 0) + 1
            kept.append(sample)
    return kept


@pytest.fixture
def cache_settings(tmp_path: Path, monkeypatch) -> Settings:
    monkeypatch.setenv("RAGSHIELD_CACHE_DIR", str(tmp_path / "cache"))
    return Settings(cache_dir=tmp_path / "cache")


@pytest.fixture
@lane("model")
def squad_store(tmp_path: Path):
    """SQuAD 2.0 samples of every article, on SQLite (the training needs the CPU for a
    while; the store's part is the same on PostgreSQL, tested below)."""
    store = open_store(f"sqlite:///{tmp_path / 'squad.db'}")
    import_samples(store, "squad", squad_subset())
    yield store
    store.close()


def test_train_measure_keep_and_use_a_judge(squad_store, cache_settings):
    store = squad_store
    add_annotator(store, "ann")
    first = load_sample(store, "squad", squad_subset()[0].id)
    flipped = "unanswerable" if first.answerable else "answerable"
    label_sample(store, "squad", first.id, "ann", flipped)  # a person overrides the flag
    steps = []
    info = train_judge(store, cache_settings, "squad-qpp", "squad", hard_negatives=True,
                       progress=lambda done, total: steps.append((done, total)))
    card = info.card
    assert info.judge == "trained:squad-qpp" and steps[-1][0] == steps[-1][1] > len(squad_subset())
    assert card.kind == "signals" and card.hard_negatives > 0 and card.reads == []
    assert card.labels["from_people"] == 1 and card.labels["total"] == len(squad_subset())
    assert card.split["training"] == card.split["held_out"] == card.labels["total"]
    cv = card.cv  # eight articles: each held out once, by a model that never saw it
    assert cv["folds"] == 8 and len(cv["fold_pr_auc"]) == 8 and sum(cv["fold_sizes"]) == 64
    assert cv["pr_auc_min"] <= cv["pr_auc_median"] <= cv["pr_auc_max"]
    metrics = card.metrics
    assert 0 <= metrics["pr_auc_interval"][0] <= metrics["pr_auc"] <= metrics["pr_auc_interval"][1]
    assert 0.3 < metrics["positive_rate"] < 0.7 and card.train_seconds > 0
    assert sorted(p.name for p in judges_dir(cache_settings.cache_dir).iterdir()) == ["squad-qpp"]
    weights = json.loads((info.directory / WEIGHTS_FILES["signals"]).read_text())
    assert weights["features"] == cv["features"] and len(weights["coef"]) == len(cv["features"])

    judge = make_judge("trained:squad-qpp", cache_settings)
    llm = ScriptedLLM()
    verdict = judge.judge(first, Answer(answerer="test", text="", raw="", messages=[]), llm)
    assert verdict.judge == "trained:squad-qpp" and verdict.available and verdict.error is None
    assert 0 <= verdict.score <= 1 and verdict.keep == (verdict.score >= 0.5)
    assert verdict.trace and verdict.trace[0].kind == "classify" and llm.seen == []
    assert "the strongest pushes: " in verdict.rationale
    assert set(verdict.details["signals"]) == set(cv["features"])
    listed = CliRunner().invoke(app, ["judges", "list", "--json"])
    rows = {row["judge"]: row for row in json.loads(listed.stdout)}
    assert rows["trained:squad-qpp"]["held-out PR-AUC"] == f"{metrics['pr_auc']:.3f}"

    # A stale card (the weights changed under it) and a folder that is no trained judge.
    weights_file = info.directory / WEIGHTS_FILES["signals"]
    weights_file.write_text(weights_file.read_text().replace('"strength"', '"strength" '))
    with pytest.raises(TrainedJudgeError, match="is stale"):
        make_judge("trained:squad-qpp", cache_settings)
    # Weights that match their card but are no model: refused with the file's name.
    weights_file.write_text('{"features": ["coverage"]}')
    card_path = info.directory / CARD_FILE
    body = json.loads(card_path.read_text())
    card_path.write_text(json.dumps({**body, "weights_sha256": weights_digest(
        info.directory, "signals")}))
    with pytest.raises(TrainedJudgeError, match="model.json: not a signals model"):
        make_judge("trained:squad-qpp", cache_settings)
    # A model of other signals (an older version's): refused, not misread.
    older = {**weights, "features": weights["features"][:-1] + ["retired signal"]}
    weights_file.write_text(json.dumps(older))
    card_path.write_text(json.dumps({**body, "weights_sha256": weights_digest(
        info.directory, "signals")}))
    with pytest.raises(TrainedJudgeError, match="are not the signals this version reads"):
        make_judge("trained:squad-qpp", cache_settings)
    (info.directory / CARD_FILE).unlink()
    with pytest.raises(TrainedJudgeError, match="is not a trained judge: it has no"):
        make_judge("trained:squad-qpp", cache_settings)
    assert isinstance(trained_judges(cache_settings)[0], TrainedJudgeError)


def test_a_cross_encoder_is_fine_tuned_on_held_out_articles(squad_store, cache_settings):
    import torch

    steps = []
    info = train_judge(squad_store, cache_settings, "encoder", "squad", kind="cross-encoder",
                       epochs=1, progress=lambda done, total: steps.append((done, total)))
    card = info.card
    assert card.kind == "cross-encoder" and steps[-1][0] == steps[-1][1] > 0
    assert card.split["training"] + card.split["held_out"] == card.labels["total"]
    held = set(card.split["held_out_groups"])
    assert held and all(group.startswith("title:") for group in held)
    judge = make_judge("trained:encoder", cache_settings)
    sample = squad_subset()[0]
    verdict = judge.judge(sample, Answer(answerer="test", text="", raw="", messages=[]),
                          ScriptedLLM())
    assert 0 <= verdict.score <= 1 and verdict.trace[0].kind == "classify"
    # The embedding layer stays as packaged; the encoder's layers learnt.
    trained, packaged = judge.model.base_model, load_base(packaged_embedding_path())[1].base_model
    assert all(torch.equal(a, b) for a, b in zip(trained.embeddings.parameters(),
                                                   packaged.embeddings.parameters()))
    assert not torch.equal(trained.encoder.layer[0].attention.self.query.weight,
                           packaged.encoder.layer[0].attention.self.query.weight)
    weights = info.directory / WEIGHTS_FILES["cross-encoder"]
    weights.write_bytes(weights.read_bytes()[:-8] + b"\0" * 8)
    with pytest.raises(TrainedJudgeError, match="is stale"):
        make_judge("trained:encoder", cache_settings)


def test_an_interrupted_training_leaves_nothing_behind(squad_store, cache_settings):
    def interrupt(done: int, total: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_judge(squad_store, cache_settings, "halted", "squad", progress=interrupt)
    root = judges_dir(cache_settings.cache_dir)
    assert list(root.iterdir()) == []


def test_bad_training_requests_are_refused_with_the_reason(store, cache_settings):
    import_samples(store, "few", squad_subset(per_article=4))
    with pytest.raises(UserError, match=r"good and \d+ bad labelled samples; training needs "
                                        "at least 20 of each"):
        train_judge(store, cache_settings, "few", "few")
    answerable_only = [s for s in squad_subset() if s.answerable]
    import_samples(store, "one-class", answerable_only)
    with pytest.raises(UserError, match="0 bad labelled samples"):
        train_judge(store, cache_settings, "one", "one-class")
    with pytest.raises(OptionError, match="judge name 'Bad Name'"):
        train_judge(store, cache_settings, "Bad Name", "few")
    with pytest.raises(OptionError, match="answer_ok reads the answers of a run: give --run"):
        train_judge(store, cache_settings, "ok", "few", target="answer_ok")
    with pytest.raises(OptionError, match="target must be one of answerable, answer_ok"):
        train_judge(store, cache_settings, "ok", "few", target="right")
    with pytest.raises(OptionError, match="the LLM grader grades a run's answers: use it with "
                                          "target answer_ok"):
        train_judge(store, cache_settings, "ok", "few", llm_grader=True)
    with pytest.raises(OptionError, match="kind must be one of signals, cross-encoder"):
        train_judge(store, cache_settings, "ok", "few", kind="forest")
    with pytest.raises(OptionError, match="reads are the scores of a run's judges: give --run"):
        train_judge(store, cache_settings, "ok", "few", reads=["pre_answer"])
    with pytest.raises(OptionError, match="reads must be scoring judges .* got trivial, "
                                          "dual_generation"):
        train_judge(store, cache_settings, "ok", "few", run_id=1,
                    reads=["trivial", "dual_generation"])
    with pytest.raises(OptionError, match="use them with target answerable, kind signals, no "
                                          "reads"):
        train_judge(store, cache_settings, "ok", "few", kind="cross-encoder",
                    hard_negatives=True)
    one_article = [s for s in squad_subset(per_article=48) if group_of(s) == group_of(
        squad_subset()[0])]
    import_samples(store, "one-article", one_article)
    with pytest.raises(UserError, match="its labelled samples form one group"):
        train_judge(store, cache_settings, "one", "one-article")
    assert not judges_dir(cache_settings.cache_dir).exists() or not any(
        judges_dir(cache_settings.cache_dir).iterdir())
    with pytest.raises(TrainedJudgeError, match="no trained judge 'trained:missing'"):
        make_judge("trained:missing", cache_settings)
    with pytest.raises(OptionError, match=r"unknown judge\(s\) \['trained:../x'\]"):
        judge_names("trained:../x")


def test_the_dashboard_trains_a_judge_on_its_labels(squad_store, cache_settings):
    from ragshield.services.learning.judge_training import JudgeTrainer
    from ragshield.ui.context import UiContext
    from ragshield.ui.dashboard_tab import start_training, training_html

    context = UiContext(settings=cache_settings, store=squad_store)
    trainer = JudgeTrainer(squad_store, cache_settings)
    import_samples(squad_store, "tiny", squad_subset(per_article=2))
    assert "a judge needs about 26 of each" in training_html(context, trainer, "tiny")
    assert "enough to train a judge" in training_html(context, trainer, "squad")
    assert "rs-msg-error" in start_training(context, trainer, "tiny", "tiny-qpp", False)
    assert "judge name &#x27;Bad&#x27;" in start_training(context, trainer, "squad", "Bad", False)
    started = start_training(context, trainer, "squad", "dash-qpp", True)
    assert "training dash-qpp on squad" in started  # seconds of training follow
    again = start_training(context, trainer, "squad", "other", False)
    assert "training dash-qpp is still going" in again
    for training in trainer.trainings():
        training.wait(300)
    shown = training_html(context, trainer, "squad")
    assert "trained:dash-qpp is ready: PR-AUC" in shown and "rs-msg-error" not in shown


def pre_answer_reply(answerable: dict[str, bool]):
    """A model whose P(yes) to "do the passages contain the answer?" knows the truth
    (0.8 or 0.25) and that says "yes" to everything else."""
    def respond(messages):
        text = messages[-1]["content"]
        question = next((q for q in answerable if q in " ".join(m["content"] for m in messages)),
                        None)
        if "contain the answer" in text and question is not None:
            p_yes = 0.8 if answerable[question] else 0.25
            return ScriptedReply("yes", {"yes": math.log(p_yes), "no": math.log(1 - p_yes)})
        return ScriptedReply("yes", {"yes": -0.1})
    return respond


def test_a_judge_learns_to_weigh_the_llm_reads_of_a_run(squad_store, cache_settings, settings):
    """Trained on a run's pre_answer scores, the judge leans on them, and then reads them
    itself through the model it is given."""
    store = squad_store
    samples = squad_subset()
    llm = ScriptedLLM(respond=pre_answer_reply({s.question: bool(s.answerable) for s in samples}))
    import_samples(store, "given", [replace(s, given_answer=GivenAnswer("an answer"))
                                    for s in samples])
    run = record_run(store, settings, RunConfig(dataset="given", answerer="given",
                                                judges=["pre_answer"], rule="pre_answer",
                                                judge_model=SELF))
    assert execute(store, settings, run.run_id, models=RunModels(main=llm)).outcome.status == "done"
    with pytest.raises(OptionError, match="run .* has no verdicts of p_true"):
        train_judge(store, cache_settings, "reads", "given", run_id=run.run_id,
                    reads=["p_true"])
    info = train_judge(store, cache_settings, "reads", "given", run_id=run.run_id,
                       reads=["pre_answer"])
    card = info.card
    assert card.reads == ["pre_answer"] and card.split["run"] == run.run_id
    assert card.reader == SMALLER_MODEL  # the answering model read them
    # Wherever it decides, it reads from that model, whoever reads for the other judges.
    asked = prepare(store, cache_settings, AskRequest(
        question="Who?", passages=(Passage("Text."),), judges=("trained:reads", "pre_answer"),
        judge_model=LARGER_MODEL, keep_record=False))
    # the 0.5B read its scores; the 1.5B answers this ask (the default): it stays with the 0.5B
    assert asked.readers.reader("trained:reads") == SMALLER_MODEL
    assert asked.readers.reader("pre_answer") == LARGER_MODEL
    assert card.cv["features"][-1] == "pre_answer (log-odds)" and card.cv["pr_auc_min"] >= 0.95
    judge = make_judge("trained:reads", cache_settings)
    assert judge.cost == "cheap" and judge.requires
    before = len(llm.seen)
    verdicts = [judge.judge(s, Answer(answerer="given", text="an answer", raw="", messages=[]),
                            llm) for s in samples[:4]]
    assert len(llm.seen) == before + 4  # one pre_answer call each, in the verdict's trace
    for sample, verdict in zip(samples[:4], verdicts):
        assert [c.purpose for c in verdict.trace][-1] == "trained:reads: weigh the signals"
        assert verdict.keep == bool(sample.answerable)
        assert "pre_answer (log-odds)" in verdict.rationale.split("pushes: ")[1].split(";")[0]


def test_a_judge_reads_its_scores_from_one_model(store, settings):
    """A run whose reads came from two models (where the 0.5B answers: pre_answer by the
    1.5B, token_prob by the answering model) cannot teach a judge that reads from one."""
    run = record_run(store, settings, RunConfig(dataset="demo", judges=["pre_answer",
                                                                        "token_prob"],
                                                model=SMALLER_MODEL))
    with pytest.raises(OptionError, match=r"read pre_answer by qwen-1.5b, token_prob by "
                                          r"qwen-0.5b: a trained judge reads its scores"):
        reads_reader(store, run.run_id, ["pre_answer", "token_prob"])
    assert reads_reader(store, run.run_id, ["pre_answer"]) == LARGER_MODEL


def test_a_judge_learns_whether_a_runs_answers_are_right(squad_store, cache_settings, settings):
    """Target answer_ok: the answers of a run, right or wrong, and the unanswerable questions
    counted by their flag (any answer shown there is wrong)."""
    store = squad_store
    samples = squad_subset()
    given = []
    for index, sample in enumerate(samples):
        right = sample.answerable and index % 4 != 0
        text = sample.reference_answers[0] if right else "Deabolis of Umbria"
        given.append(replace(sample, given_answer=GivenAnswer(text)))
    import_samples(store, "answers", given)
    run = record_run(store, settings, RunConfig(dataset="answers", answerer="given",
                                                judges=["trivial"], rule="trivial"))
    execute(store, settings, run.run_id, models=RunModels(main=ScriptedLLM()))
    info = train_judge(store, cache_settings, "answers-ok", "answers", target="answer_ok",
                       run_id=run.run_id)
    card = info.card
    right = sum(1 for i, s in enumerate(samples) if s.answerable and i % 4 != 0)
    assert card.labels["total"] == len(samples) and card.labels["positive"] == right
    assert "answer_coverage" in card.cv["features"] and card.cv["pr_auc_median"] > 0.9
    judge = make_judge("trained:answers-ok", cache_settings)
    sample = next(s for i, s in enumerate(samples) if s.answerable and i % 4 != 0)

    def p_good(text: str) -> float:
        return judge.judge(sample, Answer(answerer="given", text=text, raw=text, messages=[]),
                           ScriptedLLM()).score

    assert p_good(sample.reference_answers[0]) > 0.5 > p_good("Deabolis of Umbria")


PARAPHRASE = "the one the passage names"


def grade_paraphrases(request: Request) -> Fault | None:
    """A grader on a real OpenAI-compatible server: the paraphrase is accurate, the rest not."""
    if not request.is_chat:
        return None  # the model list
    reply = healthy_reply(request)
    accurate = f"Predicted answer: {PARAPHRASE}" in request.prompt
    reply["choices"][0]["message"]["content"] = json.dumps({"accurate": accurate})
    reply["choices"][0]["logprobs"] = None
    return Fault(body=json.dumps(reply).encode())


def test_the_llm_grader_decides_which_answers_taught_the_judge(squad_store, cache_settings,
                                                               settings, monkeypatch, tmp_path):
    """`judges train --target answer_ok --llm-grader`: right answers in other words (which the
    matching rules call wrong) count as right when the configured model grades them accurate;
    the grader is asked once per answer that has references, through the OpenAI backend."""
    store = squad_store
    samples = squad_subset()
    given = [replace(s, given_answer=GivenAnswer(
        PARAPHRASE if s.answerable and i % 4 != 0 else "Deabolis of Umbria"))
        for i, s in enumerate(samples)]
    import_samples(store, "answers", given)
    run = record_run(store, settings, RunConfig(dataset="answers", answerer="given",
                                                judges=["trivial"], rule="trivial"))
    execute(store, settings, run.run_id, models=RunModels(main=ScriptedLLM()))
    monkeypatch.setenv("RAGSHIELD_DATABASE_URL", f"sqlite:///{tmp_path / 'squad.db'}")
    right = sum(1 for i, s in enumerate(samples) if s.answerable and i % 4 != 0)
    with FakeOpenAIServer(grade_paraphrases) as server:
        trained = CliRunner().invoke(app, [
            "judges", "train", "graded", "--dataset", "answers", "--target", "answer_ok",
            "--run", str(run.run_id), "--llm-grader", "--backend", "openai", "--base-url",
            server.url, "--json"])
        graded = len(server.chat_requests())
    assert trained.exit_code == 0, trained.output
    card = json.loads(trained.stdout)
    assert card["labels"]["positive"] == right and card["labels"]["total"] == len(samples)
    assert card["split"]["answers_graded_by"] == "rules or LLM grader"
    assert graded == sum(1 for s in samples if s.answerable)  # no call without references
    by_rules = CliRunner().invoke(app, [
        "judges", "train", "ruled", "--dataset", "answers", "--target", "answer_ok", "--run",
        str(run.run_id), "--json"])
    assert by_rules.exit_code != 0 and "0 good" in by_rules.output  # the rules see none right
