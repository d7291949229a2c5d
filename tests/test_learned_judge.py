"""The learned judge's parts, each on its own: the cheap signals (what they notice in a
question and its passages), the hard negatives made from answerable questions, and the
model with its nested grouped cross-validation (which must not learn a group by heart).
The judge trained and used end to end is in test_trained_judge.py."""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest

from ragshield.judges.hard_negatives import KINDS, hard_negatives
from ragshield.judges.learned import (Extra, FeatureModel, fit_final, fit_model, folds_of,
                                      grouped_cv, log_odds)
from ragshield.judges.signals import ANSWER_SIGNALS, QUESTION_SIGNALS, SignalReader
from ragshield.types import Passage, Sample


class WordEmbedder:
    """Bag-of-words vectors (each word hashed into 1024 dimensions), normalised: the
    similarity signals see shared words, as MiniLM sees shared meaning."""

    def encode(self, texts, normalize_embeddings=True):
        vectors = np.zeros((len(texts), 1024))
        for row, text in enumerate(texts):
            for word in text.lower().split():
                vectors[row, zlib.crc32(word.strip("?.,").encode()) % 1024] += 1
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)


ROUEN = Passage(title="Rouen", text="Rouen is a city on the Seine in northern France. It was "
                               "the capital of the Duchy of Normandy. In 1431 Joan of Arc was "
                               "burnt there.")


def signals(question: str, passage: Passage = ROUEN, answer: str | None = None) -> dict:
    reader = SignalReader(WordEmbedder())
    sample = Sample("s", question, [passage])
    row = reader.read([sample], None if answer is None else [answer])[0]
    return dict(zip(QUESTION_SIGNALS + (ANSWER_SIGNALS if answer is not None else ()), row))


def test_the_signals_notice_what_unanswerable_questions_change():
    plain = signals("Which river flows through the city of Rouen?")
    swapped = signals("Which river flows through the city of Deabolis?")
    assert plain["names_missing"] == 0.0 and swapped["names_missing"] == 1.0
    assert swapped["coverage"] < plain["coverage"] and swapped["similarity"] < plain["similarity"]
    assert signals("In what year was Joan of Arc burnt in Rouen?")["number_asked_not_found"] == 0
    assert signals("In 1432, who was burnt in Rouen?")["numbers_missing"] == 1.0
    assert signals("In 1431, who was burnt in Rouen?")["numbers_missing"] == 0.0
    assert signals("When was Rouen not the capital?")["negation"] == 1.0
    assert signals("When was Rouen the capital?")["negation"] == 0.0
    silent = Passage(title="Rouen", text="Rouen has a cathedral and many old houses.")
    assert signals("In what year was Joan of Arc burnt?", silent)["number_asked_not_found"] == 1.0


def test_the_answer_signals_read_the_answer_against_the_passages():
    supported = signals("Which river flows through Rouen?", answer="The Seine")
    made_up = signals("Which river flows through Rouen?", answer="The Deabolis")
    refused = signals("Which river flows through Rouen?", answer="I don't know.")
    assert supported["answer_coverage"] == 1.0 and made_up["answer_coverage"] == 0.0
    assert supported["answer_in_window"] == 1.0 and refused["answer_refusal"] == 1.0
    assert supported["answer_refusal"] == 0.0 and supported["answer_words"] > 0


def test_a_sample_without_passages_has_zero_signals_not_an_error():
    reader = SignalReader(WordEmbedder())
    row = reader.read([Sample("s", "Who?", [])])[0]
    assert row.shape == (len(QUESTION_SIGNALS),) and np.isfinite(row).all()


def corpus() -> list[Sample]:
    facts = [("Paris", "Paris is the capital of France. It has 2 million people.",
              "What is the capital of France?"),
             ("Berlin", "Berlin is the capital of Germany. It was divided in 1961.",
              "In what year was Berlin divided?"),
             ("Rome", "Rome is the capital of Italy. Caesar was killed there.",
              "Who was killed in Rome?"),
             ("Madrid", "Madrid is the capital of Spain. The Prado is there.",
              "Which museum is in Madrid?")]
    samples = [Sample(f"a{i}", question, [Passage(title=title, text=text)], [title],
                      answerable=True)
               for i, (title, text, question) in enumerate(facts)]
    samples.append(Sample("u0", "Who founded Oslo?", [Passage(title="Oslo", text="Oslo is cold.")],
                          answerable=False))
    return samples


def test_hard_negatives_are_unanswerable_copies_of_answerable_questions():
    samples = corpus()
    group = {s.id: s.passages[0].title for s in samples}
    made = hard_negatives(samples, lambda s: group[s.id], per_sample=3)
    sources = {m.id.split("#")[0] for m in made}
    assert sources <= {s.id for s in samples if s.answerable} and "u0" not in sources
    assert {m.id.split("#")[1] for m in made} <= set(KINDS)
    by_id = {s.id: s for s in samples}
    for negative in made:
        source = by_id[negative.id.split("#")[0]]
        kind = negative.id.split("#")[1]
        assert negative.answerable is False and negative.reference_answers == []
        assert negative.id.count("#") == 1
        if kind == "other_passage":
            assert negative.question == source.question
            assert negative.passages != source.passages
            assert source.reference_answers[0].lower() not in negative.passages[0].text.lower()
        elif kind == "swapped_name":
            assert negative.question != source.question and negative.passages == source.passages
            new_words = set(negative.question.split()) - set(source.question.split())
            text = negative.passages[0].text
            assert new_words and all(w.strip("?") not in text for w in new_words)
        else:
            assert " not " in negative.question and negative.passages == source.passages
    assert any(m.id == "a0#negated" for m in made)  # "What is not the capital of France?"
    assert hard_negatives(samples, lambda s: group[s.id], per_sample=1, seed=3) == \
        hard_negatives(samples, lambda s: group[s.id], per_sample=1, seed=3)


def test_folds_hold_whole_groups():
    few = folds_of(["a", "a", "b", "c", "c", "c"])
    assert len(set(few)) == 3 and few[0] == few[1] and few[3] == few[4] == few[5]
    many = [f"g{i % 20}" for i in range(200)]
    folds = folds_of(many, max_folds=8)
    assert len(set(folds)) == 8
    for name in set(many):
        assert len({f for g, f in zip(many, folds) if g == name}) == 1
    sizes = np.bincount(folds)
    assert sizes.max() - sizes.min() <= 10  # groups of 10 dealt largest first


def synthetic(seed: int = 0, groups: int = 6, per_group: int = 60):
    """One informative feature; one that only names the group (its labels' rate differs by
    group): a model that memorises groups would lean on it."""
    rng = np.random.default_rng(seed)
    rate = np.linspace(0.2, 0.8, groups)
    names, rows, labels = [], [], []
    for g in range(groups):
        y = rng.random(per_group) < rate[g]
        signal = y + rng.normal(0, 0.8, per_group)
        group_code = np.full(per_group, g / groups) + rng.normal(0, 0.01, per_group)
        rows.append(np.column_stack([signal, group_code]))
        labels.append(y)
        names += [f"g{g}"] * per_group
    return np.vstack(rows), np.concatenate(labels), names


def test_grouped_cv_measures_each_group_by_a_model_that_never_saw_it():
    rows, labels, groups = synthetic()
    cv = grouped_cv(rows, labels, groups, ["signal", "group code"])
    summary = cv.summary()
    assert summary["folds"] == 6 and len(summary["fold_pr_auc"]) == 6
    assert summary["pr_auc_min"] <= summary["pr_auc_median"] <= summary["pr_auc_max"]
    assert not np.isnan(cv.out_of_fold).any()
    # Where the groups' label rates are all the model could use, it ranks a new group no
    # better than keep-all: the group code does not carry over to a group never seen.
    only_code = grouped_cv(rows[:, 1:], labels, groups, ["group code"])
    assert np.median(np.asarray(only_code.fold_areas) - np.asarray(only_code.fold_keep_all)) < 0.05
    assert summary["pr_auc_median"] > summary["keep_all_median"] + 0.15


def test_extra_rows_train_but_are_never_scored():
    rows, labels, groups = synthetic(groups=4)
    extra = Extra(np.column_stack([np.full(40, -2.0), np.zeros(40)]), np.zeros(40, bool),
                  np.asarray(["g0"] * 20 + ["elsewhere"] * 20, dtype=object))
    cv = grouped_cv(rows, labels, groups, ["signal", "group code"], extra)
    assert len(cv.out_of_fold) == len(labels)
    model = fit_final(rows, labels, groups, ["signal", "group code"], extra)
    assert model.coef[0] > 0


def test_the_model_is_plain_json_and_reads_a_missing_value_as_its_mean():
    rows, labels, _ = synthetic()
    model = fit_model(rows, labels, ["signal", "group code"], 1.0)
    again = FeatureModel.from_dict(json.loads(json.dumps(model.to_dict())))
    assert again == model
    assert np.allclose(again.probability(rows[:5]), model.probability(rows[:5]))
    missing = again.probability(np.array([[np.nan, model.mean[1]]]))[0]
    average = again.probability(np.array([model.mean]))[0]
    assert missing == pytest.approx(average)
    pushes = model.contributions(rows[0])
    assert [abs(p) for _, _, p in pushes] == sorted((abs(p) for _, _, p in pushes), reverse=True)
    with pytest.raises(ValueError, match="differ in length"):
        FeatureModel.from_dict({**model.to_dict(), "coef": [1.0]})


def test_log_odds_of_reads_keep_a_missing_read_missing():
    values = log_odds([0.5, 0.9, None, 1.0, 0.0])
    assert values[0] == pytest.approx(0.0) and values[1] == pytest.approx(np.log(9))
    assert np.isnan(values[2]) and np.isfinite(values[3]) and values[4] < -9


def test_the_forms_offer_the_trained_judges_that_can_be_used(tmp_path):
    """A usable trained judge joins the registered ones; a folder without a card does not."""
    from ragshield.config import Settings
    from ragshield.judges.builtin import JUDGES
    from ragshield.judges.trained import CARD_FILE, ModelCard, judges_dir, weights_digest
    from ragshield.services.questions.ask_choices import judge_choices

    settings = Settings(cache_dir=tmp_path)
    assert judge_choices(settings) == list(JUDGES)
    rows, labels, _ = synthetic()
    folder = judges_dir(tmp_path) / "mine"
    folder.mkdir(parents=True)
    (folder / "model.json").write_text(json.dumps(
        fit_model(rows, labels, ["signal", "group code"], 1.0).to_dict()))
    card = ModelCard(name="mine", target="answerable", base_model="test", dataset="d",
                     labels={"total": len(labels)}, split={}, metrics={}, epochs=0,
                     train_seconds=0.0, code_version="test", created_at="now",
                     weights_sha256=weights_digest(folder, "signals"), kind="signals")
    (folder / CARD_FILE).write_text(json.dumps(card.to_dict()))
    (judges_dir(tmp_path) / "broken").mkdir()
    assert judge_choices(settings) == [*JUDGES, "trained:mine"]
