"""A judge that learns: the packaged MiniLM fine-tuned on a dataset's labels (SQuAD 2.0
samples from ../shared/data, flags standing in for people, and people's labels winning),
measured on held-out articles, kept with its model card, used as trained:NAME; and every
way it refuses bad input without leaving half a model behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragshield.cli import app
from ragshield.config import Settings
from ragshield.datasets.registry import load_dataset
from ragshield.errors import OptionError, UserError
from ragshield.judges.registry import judge_names, make_judge
from ragshield.judges.trained import CARD_FILE, WEIGHTS_FILE, TrainedJudgeError, judges_dir
from ragshield.judges.training import group_of, load_base
from ragshield.retrieval.embeddings import packaged_embedding_path
from ragshield.services.judge_training import train_judge, trained_judges
from ragshield.services.labelling import add_annotator, label_sample
from ragshield.store.database import open_store
from ragshield.store.samples import import_samples, load_sample
from ragshield.types import Answer
from tests.conftest import SHARED_DATA, lane
from tests.fakes import ScriptedLLM

SQUAD = SHARED_DATA / "squad2_dev_part_a.jsonl"
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
    import torch

    store = squad_store
    add_annotator(store, "ann")
    first = load_sample(store, "squad", squad_subset()[0].id)
    flipped = "unanswerable" if first.answerable else "answerable"
    label_sample(store, "squad", first.id, "ann", flipped)  # a person overrides the flag
    steps = []
    info = train_judge(store, cache_settings, "squad-qpp", "squad", epochs=1,
                       progress=lambda done, total: steps.append((done, total)))
    card = info.card
    assert info.judge == "trained:squad-qpp" and steps[-1][0] == steps[-1][1] > 0
    assert card.labels["from_people"] == 1 and card.labels["total"] == len(squad_subset())
    assert card.split["training"] + card.split["held_out"] == card.labels["total"]
    held = set(card.split["held_out_groups"])
    assert held and all(group.startswith("title:") for group in held)
    metrics = card.metrics
    assert 0 <= metrics["pr_auc_interval"][0] <= metrics["pr_auc"] <= metrics["pr_auc_interval"][1]
    assert 0.3 < metrics["positive_rate"] < 0.7 and card.train_seconds > 0
    assert sorted(p.name for p in judges_dir(cache_settings.cache_dir).iterdir()) == ["squad-qpp"]

    judge = make_judge("trained:squad-qpp", cache_settings)
    llm = ScriptedLLM()
    verdict = judge.judge(first, Answer(answerer="test", text="", raw="", messages=[]), llm)
    assert verdict.judge == "trained:squad-qpp" and verdict.available and verdict.error is None
    assert 0 <= verdict.score <= 1 and verdict.keep == (verdict.score >= 0.5)
    assert verdict.trace and verdict.trace[0].kind == "classify" and llm.seen == []
    # The embedding layer stays as packaged; the encoder's layers learnt.
    trained, packaged = judge.model.base_model, load_base(packaged_embedding_path())[1].base_model
    assert all(torch.equal(a, b) for a, b in zip(trained.embeddings.parameters(),
                                                   packaged.embeddings.parameters()))
    assert not torch.equal(trained.encoder.layer[0].attention.self.query.weight,
                           packaged.encoder.layer[0].attention.self.query.weight)
    listed = CliRunner().invoke(app, ["judges", "list", "--json"])
    rows = {row["judge"]: row for row in json.loads(listed.stdout)}
    assert rows["trained:squad-qpp"]["held-out PR-AUC"] == f"{metrics['pr_auc']:.3f}"

    # A stale card (the weights changed under it) and a folder that is no trained judge.
    weights = info.directory / WEIGHTS_FILE
    weights.write_bytes(weights.read_bytes()[:-8] + b"\0" * 8)
    with pytest.raises(TrainedJudgeError, match="is stale"):
        make_judge("trained:squad-qpp", cache_settings)
    (info.directory / CARD_FILE).unlink()
    with pytest.raises(TrainedJudgeError, match="is not a trained judge: it has no"):
        make_judge("trained:squad-qpp", cache_settings)
    assert isinstance(trained_judges(cache_settings)[0], TrainedJudgeError)


def test_an_interrupted_training_leaves_nothing_behind(squad_store, cache_settings):
    def interrupt(done: int, total: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_judge(squad_store, cache_settings, "halted", "squad", epochs=1, progress=interrupt)
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
    assert not judges_dir(cache_settings.cache_dir).exists() or not any(
        judges_dir(cache_settings.cache_dir).iterdir())
    with pytest.raises(TrainedJudgeError, match="no trained judge at"):
        make_judge("trained:missing", cache_settings)
    with pytest.raises(OptionError, match=r"unknown judge\(s\) \['trained:../x'\]"):
        judge_names("trained:../x")


def test_the_dashboard_trains_a_judge_on_its_labels(squad_store, cache_settings):
    from ragshield.services.judge_training import JudgeTrainer
    from ragshield.ui.context import UiContext
    from ragshield.ui.dashboard_tab import start_training, training_html

    context = UiContext(settings=cache_settings, store=squad_store)
    trainer = JudgeTrainer(squad_store, cache_settings)
    import_samples(squad_store, "tiny", squad_subset(per_article=2))
    assert "a judge needs about 26 of each" in training_html(context, trainer, "tiny")
    assert "enough to train a judge" in training_html(context, trainer, "squad")
    assert "rs-msg-error" in start_training(context, trainer, "tiny", "tiny-qpp", 1)
    assert "judge name &#x27;Bad&#x27;" in start_training(context, trainer, "squad", "Bad", 1)
    started = start_training(context, trainer, "squad", "dash-qpp", 1)
    assert "training dash-qpp on squad" in started  # seconds of training follow
    again = start_training(context, trainer, "squad", "other", 1)
    assert "dash-qpp is still training" in again
    for training in trainer.trainings():
        training.thread.join(300)
    shown = training_html(context, trainer, "squad")
    assert "trained:dash-qpp is ready: PR-AUC" in shown and "rs-msg-error" not in shown
