"""Datasets into the store: a file (loaded, checked and streamed by ragshield.datasets)
imported in one transaction, and the bundled demo set put into an empty database."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Iterator

from sqlalchemy.exc import IntegrityError

from ragshield.datasets.column_mapping import ColumnMapping
from ragshield.datasets.demo import DEMO_DATASET, DEMO_LICENSE, DEMO_SAMPLES
from ragshield.datasets.registry import detect_format, get_format, load_dataset
from ragshield.names import check_name
from ragshield.store.database import Store
from ragshield.store.samples import ImportResult, has_dataset, import_samples
from ragshield.types import Sample

Progress = Callable[[Iterator[Sample]], Iterable[Sample]]  # e.g. tqdm


def import_file(
    store: Store, name: str, path: Path | str, *, format: str | None = None,
    limit: int | None = None, mapping: ColumnMapping | None = None,
    license: str | None = None, progress: Progress | None = None,
) -> ImportResult:
    """Import a dataset file as dataset `name`; nothing stays when any sample is bad. Into an
    existing dataset, changed samples are updated in place (see `import_samples`), so the same
    file again changes nothing. `license` defaults to the format's. The name is checked first
    (see ragshield.names) and stripped of surrounding blanks."""
    name = check_name(name, "dataset name")
    path = Path(path)
    spec = get_format(format or detect_format(path, mapped=mapping is not None))
    samples = load_dataset(path, spec.name, limit=limit, mapping=mapping)
    return import_samples(
        store, name, progress(samples) if progress else samples,
        source=f"{path.name} ({spec.name})", license=license or spec.license,
        description=spec.description,
    )


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
