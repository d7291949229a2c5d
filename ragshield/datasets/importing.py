"""A dataset file into the store: load (checked, streamed) and import in one transaction."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Iterator

from ragshield.datasets.column_mapping import ColumnMapping
from ragshield.datasets.registry import detect_format, get_format, load_dataset
from ragshield.names import check_name
from ragshield.store.database import Store
from ragshield.store.samples import ImportResult, import_samples
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
