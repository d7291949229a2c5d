"""The dataset use cases behind `ragshield datasets ...` (ragshield.services.data.datasets) on a
real store: listing puts the demo set in, and a deletion is previewed (and refused while
labels use the dataset, unless forced) before anything is deleted."""

from __future__ import annotations

import pytest

from ragshield.datasets.demo import DEMO_DATASET
from ragshield.services.data.datasets import (all_datasets, dataset_samples, delete_dataset,
                                              deletion_preview)
from ragshield.store.dataset_deletion import DatasetInUseError
from ragshield.store.labels import add_annotator, add_label
from ragshield.store.sample_import import import_samples
from ragshield.types import Passage, Sample


def test_listing_a_fresh_database_shows_the_demo_set(store):
    assert [summary.name for summary in all_datasets(store)] == [DEMO_DATASET]
    assert len(dataset_samples(store, DEMO_DATASET, limit=2)) == 2


def test_a_dataset_in_use_is_refused_before_anyone_confirms(store):
    import_samples(store, "toy", [Sample(id="s0", question="q?", passages=[Passage(text="p")])])
    assert not deletion_preview(store, "toy").in_use
    add_annotator(store, "ann")
    add_label(store, "toy", "s0", "ann", "unsure")
    with pytest.raises(DatasetInUseError, match="--force"):
        deletion_preview(store, "toy")
    usage = deletion_preview(store, "toy", force=True)
    assert (usage.samples, usage.labels, usage.annotators) == (1, 1, 1)
    assert delete_dataset(store, "toy", force=True) == usage
