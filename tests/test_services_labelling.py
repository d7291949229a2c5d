"""The label use cases (ragshield.services.annotation.labelling) on a real store: the rules the
faces used to hold (who annotates, the dataset a queue opens on, the demo set on a fresh database,
what follows a label or a skip, one annotator's progress)."""

from __future__ import annotations

import pytest

from ragshield.datasets.demo import DEMO_DATASET
from ragshield.services.annotation import labelling
from ragshield.services.annotation.labelling import AnnotatorMissingError, Queue
from ragshield.services.data.datasets import dataset_names
from ragshield.store.sample_import import import_samples
from ragshield.types import Passage, Sample

TOY = Queue(dataset="toy")


@pytest.fixture
def toy(store):
    import_samples(store, "toy", [Sample(id=f"s{i}", question=f"q{i}?",
                                         passages=[Passage(text=f"p{i}")]) for i in range(3)])
    return store


def test_the_login_name_wins_and_a_name_is_required(store):
    assert labelling.annotator_name("mallory", "ann") == "ann"
    assert labelling.annotator_name("  bob ") == "bob"
    with pytest.raises(AnnotatorMissingError, match="No annotator name"):
        labelling.annotator_name("   ", None)
    assert labelling.sign_in(store, " carol ") == "carol"
    assert labelling.sign_in(store, "carol") == "carol"  # known names are accepted again


def test_a_queue_opens_on_the_demo_set_while_there_is_one():
    assert labelling.default_dataset(["a", DEMO_DATASET, "z"]) == DEMO_DATASET
    assert labelling.default_dataset(["b", "c"]) == "b"
    assert labelling.default_dataset([]) == DEMO_DATASET


def test_a_label_or_a_skip_hands_over_the_next_sample(toy):
    name = labelling.sign_in(toy, "ann")
    record, handed = labelling.label_then_next(toy, TOY, name, "s0", "answerable",
                                               request_id="r-1", passages_shown=["p0"])
    assert record.stored and record.passages_shown == ["p0"] and handed.sample_id == "s1"
    assert labelling.skip_then_next(toy, TOY, name, "s1").sample_id == "s2"
    _, last = labelling.label_then_next(toy, TOY, name, "s2", "unsure")
    assert last.sample_id is None and last.error is None


def test_a_queue_error_after_a_label_is_handed_back_not_raised(toy):
    name = labelling.sign_in(toy, "ann")
    record, handed = labelling.label_then_next(toy, Queue("toy", strategy="alphabetical"),
                                               name, "s0", "unsure")
    assert record.stored and handed.sample_id is None
    assert "strategy must be one of" in str(handed.error)
    assert [r.label for r in labelling.label_history(toy, "toy", "s0")] == ["unsure"]


def test_the_first_command_on_a_fresh_database_finds_the_demo_set(store):
    labelling.add_annotator(store, "ann")
    first = labelling.next_to_label(store, "ann", Queue())
    assert first is not None and DEMO_DATASET in dataset_names(store)
    record = labelling.label_sample(store, DEMO_DATASET, first, "ann", "answerable",
                                    answer_correct=True)
    assert record.stored and record.answer_correct is True


def test_one_annotators_progress(toy):
    labelling.sign_in(toy, "ann")
    labelling.label_then_next(toy, TOY, "ann", "s0", "answerable")
    labelling.skip_then_next(toy, TOY, "ann", "s1")
    mine = labelling.annotator_progress(toy, "toy", "ann")
    assert (mine.labelled, mine.skipped, mine.total) == (1, 1, 3)
    nobody = labelling.annotator_progress(toy, "toy", None)
    assert (nobody.labelled, nobody.skipped, nobody.total) == (0, 0, 3)
    import_samples(toy, "empty", [])
    assert labelling.annotator_progress(toy, "empty", "ann").total == 0
