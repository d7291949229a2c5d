"""A run moved between databases as one file (store/run_bundle.py): `export_run` writes it,
`import_run` adds it to another store, where it shows, is browsed and is measured like any
run. `ragshield runs export` and `runs import` call these."""

from __future__ import annotations

from pathlib import Path

from ragshield.datasets.demo import DEMO_DATASET
from ragshield.errors import UserError
from ragshield.run_config import RunConfig
from ragshield.services.data.datasets import ensure_demo_dataset
from ragshield.store.database import Store
from ragshield.store.run_bundle import BundleError, load_bundle, read_bundle, write_bundle
from ragshield.version import code_version


def export_run(store: Store, run_id: int, path: Path, *, calls: bool = False) -> Path:
    """Write the run to `path` (xz-compressed JSON). With `calls`, every LLM call the store
    holds goes too, so that the run's questions replay from the cache where it is imported:
    meant for a store made for this run (other runs' prompts would go along)."""
    return write_bundle(store, run_id, path, code_version=code_version(), calls=calls)


def import_run(store: Store, path: Path, max_unpacked: int | None = None) -> int:
    """Add the run in `path` to the store; its id. Its dataset must be there already (the
    demo set is imported on the way); BundleError names the file and field otherwise, and
    when the file unpacks to more than `max_unpacked` characters."""
    bundle = read_bundle(path, max_unpacked)
    try:  # a config no run of this version could resume, re-judge or report on
        RunConfig.from_dict(bundle.run["config"])
    except (UserError, TypeError, ValueError) as error:
        raise BundleError(f"{path}: run.config: {error}") from None
    if bundle.dataset == DEMO_DATASET:
        ensure_demo_dataset(store)
    return load_bundle(store, bundle)
