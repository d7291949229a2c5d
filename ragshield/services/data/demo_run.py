"""The demo run that ships with the app (ragshield/assets/demo/run.json.xz): the demo set
answered by the embedded model (and by the larger one, for the switch curve) and judged by
every judge. A new database gets it with the demo set (once, however many app processes start on it
together), so Browse, the Dashboard and the threshold panel are full at first launch, and a
demo sample asked with the Demo's defaults is replayed from the call cache.
scripts/make_demo_run.py makes the file again when prompts change."""

from __future__ import annotations

import logging
from pathlib import Path

from sqlalchemy.exc import OperationalError

from ragshield.datasets.demo import DEMO_RUN
from ragshield.services.data.datasets import ensure_demo_dataset
from ragshield.store.database import Store
from ragshield.store.run_bundle import load_bundle, read_bundle, run_count

log = logging.getLogger(__name__)


def load_demo_run(store: Store, path: Path = DEMO_RUN) -> int | None:
    """On a store without any run, load the demo set and the shipped demo run; returns the
    run's id, or None when the store already has runs or no demo run ships. A file that is
    there but unreadable is an error (BundleError names the file and field)."""
    ensure_demo_dataset(store)
    if run_count(store) or not path.is_file():
        return None
    bundle = read_bundle(path)  # outside the lock: decompressing takes a moment
    try:
        with store.exclusive("load the shipped demo run"):
            if run_count(store):  # another process loaded it meanwhile
                return None
            run_id = load_bundle(store, bundle)
    except OperationalError:
        # SQLite gave up waiting for the other process's load (its busy timeout): the run
        # is there when that load went through.
        if run_count(store):
            return None
        raise
    log.info("loaded the shipped demo run as run %d", run_id)
    return run_id
