"""Datasets in the store: a file (loaded, checked and streamed by ragshield.datasets)
imported in one transaction, the bundled demo set put into an empty database, the datasets
and samples listed, and a dataset deleted."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Iterator

from sqlalchemy.exc import IntegrityError

from ragshield.datasets import FORMATS, parse_mapping
from ragshield.datasets.column_mapping import ColumnMapping
from ragshield.datasets.demo import DEMO_DATASET, DEMO_LICENSE, DEMO_SAMPLES, demo_asset
from ragshield.datasets.registry import detect_format, get_format, load_dataset
from ragshield.names import check_name
from ragshield.store.database import Store
from ragshield.store.dataset_deletion import (DatasetInUseError, DatasetUsage, dataset_usage,
                                              delete_dataset)
from ragshield.store.samples import (DatasetSummary, ImportResult, SampleSummary, dataset_names,
                                     has_dataset, import_samples, list_datasets, list_samples)
from ragshield.types import Sample

__all__ = ["FORMATS", "Progress", "all_datasets", "dataset_names", "dataset_samples",
           "delete_dataset", "deletion_preview", "ensure_demo_dataset", "import_file",
           "parse_mapping"]

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
        import_file(store, DEMO_DATASET, demo_asset(DEMO_SAMPLES), format="unified",
                    license=DEMO_LICENSE)
    except IntegrityError:
        # Another process (the app, a CLI call) created it at the same moment.
        if has_dataset(store, DEMO_DATASET):
            return False
        raise
    return True


def all_datasets(store: Store) -> list[DatasetSummary]:
    """Every dataset with its sample counts, by name; the demo set is put in when missing."""
    ensure_demo_dataset(store)
    return list_datasets(store)


def dataset_samples(store: Store, name: str, *, limit: int | None = None) -> list[SampleSummary]:
    """The samples of a dataset in import order, with their passage counts (the demo set is
    put in when missing, so that `demo` is always there)."""
    ensure_demo_dataset(store)
    return list_samples(store, name, limit=limit)


def deletion_preview(store: Store, name: str, *, force: bool = False) -> DatasetUsage:
    """What deleting the dataset would remove. Without `force`, a dataset that runs or
    labels use is refused here (DatasetInUseError), before anyone is asked to confirm a
    deletion that `delete_dataset` would refuse."""
    usage = dataset_usage(store, name)
    if usage.in_use and not force:
        raise DatasetInUseError(usage)
    return usage
