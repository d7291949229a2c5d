"""Datasets in the store: a file (loaded, checked and streamed by ragshield.datasets)
imported in one transaction, the bundled demo set put into an empty database, the datasets
and samples listed, and a dataset deleted."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator


from ragshield.datasets import FORMATS, parse_mapping
from ragshield.datasets.column_mapping import ColumnMapping
from ragshield.datasets.demo import DEMO_DATASET, DEMO_LICENSE, DEMO_SAMPLES, demo_asset
from ragshield.datasets.loader_spec import LoaderSpec
from ragshield.datasets.registry import detect_format, get_format, load_dataset
from ragshield.errors import UserError
from ragshield.names import check_name
from ragshield.services.data.column_mappings import forget_mapping, move_mapping
from ragshield.store import dataset_rename
from ragshield.store.database import Store
from ragshield.store.dataset_deletion import (DatasetInUseError, DatasetUsage, dataset_usage,
                                              delete_dataset as delete_stored_dataset)
from ragshield.store.sample_import import (ConcurrentImportError, ImportResult, import_samples,
                                           preview_import)
from ragshield.store.samples import (DatasetSummary, SampleSummary, dataset_names, dataset_origins,
                                     has_dataset, list_datasets, list_samples)
from ragshield.types import Sample

__all__ = ["FORMATS", "DatasetListing", "Progress", "all_datasets", "dataset_listing",
           "dataset_names", "dataset_samples", "delete_as_previewed", "delete_dataset",
           "deletion_preview", "ensure_demo_dataset", "import_file", "parse_mapping",
           "preview_file", "rename_dataset"]

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
    spec, samples = _loaded(path, format, limit, mapping)
    return import_samples(
        store, name, progress(samples) if progress else samples,
        source=f"{path.name} ({spec.name})", license=license or spec.license,
        description=spec.description,
    )


def preview_file(
    store: Store, name: str, path: Path | str, *, format: str | None = None,
    limit: int | None = None, mapping: ColumnMapping | None = None,
    progress: Progress | None = None,
) -> ImportResult:
    """What `import_file` with the same arguments would do (added, updated, unchanged,
    missing), without writing anything; a bad sample fails here as it would there."""
    name = check_name(name, "dataset name")
    _, samples = _loaded(Path(path), format, limit, mapping)
    return preview_import(store, name, progress(samples) if progress else samples)


def _loaded(path: Path, format: str | None, limit: int | None,
            mapping: ColumnMapping | None) -> tuple[LoaderSpec, Iterator[Sample]]:
    """The file's format (the one given, else detected) and its samples, streamed."""
    spec = get_format(format or detect_format(path, mapped=mapping is not None))
    return spec, load_dataset(path, spec.name, limit=limit, mapping=mapping)


def ensure_demo_dataset(store: Store) -> bool:
    """Import the demo set as dataset `demo` unless the store has one; True when it imported."""
    if has_dataset(store, DEMO_DATASET):
        return False
    try:
        import_file(store, DEMO_DATASET, demo_asset(DEMO_SAMPLES), format="unified",
                    license=DEMO_LICENSE)
    except ConcurrentImportError:
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


@dataclass(frozen=True)
class DatasetListing:
    """A dataset's counts, and where its first import came from."""

    summary: DatasetSummary
    source: str | None
    license: str | None


def dataset_listing(store: Store) -> list[DatasetListing]:
    """`all_datasets` with each dataset's source and licence."""
    summaries = all_datasets(store)
    origins = dataset_origins(store)
    return [DatasetListing(summary, *origins.get(summary.name, (None, None)))
            for summary in summaries]


class ReservedDatasetError(UserError, ValueError):
    """A rename from or to a name the app fills by itself."""


def rename_dataset(store: Store, old: str, new: str) -> str:
    """Rename dataset `old` to `new` (returned as checked), in one transaction: its samples,
    labels and runs stay attached (see store/dataset_rename.py), and its saved column
    mapping moves with it. `demo` and `live` are refused both ways: the app refills `demo`
    when it is missing and adds typed questions to `live`."""
    from ragshield.services.questions.live_runs import LIVE_DATASET  # loads the pipeline: only here

    new = check_name(new, "new dataset name")
    for name in (old, new):
        if name in (DEMO_DATASET, LIVE_DATASET):
            raise ReservedDatasetError(
                f"dataset {name!r} is filled by the app itself, so a dataset cannot be "
                f"renamed from or to {name!r}")
    with store.one_transaction():
        new = dataset_rename.rename_dataset(store, old, new)
        if new != old:
            move_mapping(store, old, new)
    return new


class DatasetChangedError(UserError, ValueError):
    """The dataset changed between the deletion's preview and its confirmation."""


def delete_as_previewed(store: Store, name: str, previewed: DatasetUsage) -> DatasetUsage:
    """Delete the dataset with its runs and labels, as a person confirmed after reading
    `previewed` (from `deletion_preview(..., force=True)`); refused, deleting nothing, when
    runs or labels were added since, so nothing goes that was not shown."""
    with store.one_transaction():
        usage = dataset_usage(store, name)
        if usage != previewed:
            raise DatasetChangedError(
                f"dataset {name!r} changed since the deletion was shown (now "
                f"{usage.samples} samples, {len(usage.runs)} runs, {usage.labels} labels); "
                "look at it again before deleting")
        return delete_dataset(store, name, force=True)


def delete_dataset(store: Store, name: str, *, force: bool = False) -> DatasetUsage:
    """Delete the dataset (with its runs and labels when `force`; see the store's
    delete_dataset) and forget the column mapping saved for it."""
    deleted = delete_stored_dataset(store, name, force=force)
    forget_mapping(store, name)
    return deleted
