"""The bundled demo set (assets/demo, built by scripts/make_demo_set.py): real ClapNQ and
SQuAD 2.0 questions, half answerable, with short passages; loaded as dataset `demo`."""

from __future__ import annotations

from sqlalchemy.exc import IntegrityError

from ragshield.config import PROJECT_ROOT
from ragshield.datasets.importing import import_file
from ragshield.store.database import Store
from ragshield.store.samples import has_dataset

DEMO_DATASET = "demo"
DEMO_DIR = PROJECT_ROOT / "assets" / "demo"
DEMO_SAMPLES = DEMO_DIR / "samples.jsonl"
DEMO_CORPUS = DEMO_DIR / "corpus.jsonl"  # the samples' passages, pooled, for retrieval
DEMO_LICENSE = "CC BY-SA 4.0 (SQuAD 2.0); Apache-2.0 and CC BY-SA 3.0 (ClapNQ); see ATTRIBUTION.md"


def ensure_demo_dataset(store: Store) -> bool:
    """Import the demo set as dataset `demo` unless the store has one; True when it imported."""
    if has_dataset(store, DEMO_DATASET):
        return False
    try:
        import_file(store, DEMO_DATASET, DEMO_SAMPLES, format="unified", license=DEMO_LICENSE)
    except IntegrityError:
        # Another process (the app, a CLI call) created it at the same moment.
        if has_dataset(store, DEMO_DATASET):
            return False
        raise
    return True
