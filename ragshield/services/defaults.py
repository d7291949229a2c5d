"""The defaults the faces show in their options and forms, light to import (the CLI reads
them as it starts, before any command has loaded a model or the metrics)."""

from __future__ import annotations

from ragshield.config import TRAINING_EPOCHS
from ragshield.holdout import HOLDOUT_SHARE
from ragshield.retrieval.index_config import DenseIndexConfig, IndexKind

# A policy file or a run bundle uploaded in the app (Data tab, "Results out") larger than this
# is refused before it is read; `ragshield policy import` and `runs import` take any size.
# The demo run with every model call behind it is about 1 MB.
TRANSFER_MAX_BYTES = 20_000_000
# What an uploaded run bundle may unpack to (xz packs the demo run's JSON about 18 to 1).
TRANSFER_MAX_UNPACKED = 400_000_000

__all__ = ["HOLDOUT_SHARE", "TRAINING_EPOCHS", "TRANSFER_MAX_BYTES", "TRANSFER_MAX_UNPACKED",
           "DenseIndexConfig", "IndexKind"]
