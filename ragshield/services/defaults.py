"""The defaults the faces show in their options and forms, light to import (the CLI reads
them as it starts, before any command has loaded a model or the metrics)."""

from __future__ import annotations

from ragshield.config import TRAINING_EPOCHS
from ragshield.holdout import HOLDOUT_SHARE
from ragshield.retrieval.index_config import DenseIndexConfig, IndexKind

__all__ = ["HOLDOUT_SHARE", "TRAINING_EPOCHS", "DenseIndexConfig", "IndexKind"]
