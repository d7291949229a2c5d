"""FAISS indexes over unit vectors with inner product (= cosine): exact (flat) for small
corpora, IVF or HNSW for large ones, and their per-query search parameters."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from ragshield.retrieval.index_config import DenseIndexConfig


def build_dense_index(
    vectors: np.ndarray, config: DenseIndexConfig
) -> tuple[faiss.Index, DenseIndexConfig]:
    """The index holding `vectors` (row i gets id i), and the config with `nlist` resolved."""
    count, dim = vectors.shape
    index: Any  # faiss's stubs type each index class apart, without its own fields
    if config.kind == "flat":
        index = faiss.IndexFlatIP(dim)
    elif config.kind == "hnsw":
        index = faiss.IndexHNSWFlat(dim, config.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = config.ef_construction
    else:
        nlist = min(count, config.nlist or max(1, round(math.sqrt(count))))
        config = replace(config, nlist=nlist)
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, faiss.METRIC_INNER_PRODUCT)
        index.cp.min_points_per_centroid = 1  # small corpora: train without complaint
        index.train(vectors)
    index.add(vectors)
    return index, config


def search_parameters(
    config: DenseIndexConfig, *, nprobe: int | None = None, ef_search: int | None = None
) -> faiss.SearchParameters | None:
    # faiss's stubs lack IVF's nprobe and the HNSW parameters.
    if config.kind == "ivf":
        return faiss.SearchParametersIVF(nprobe=nprobe or config.nprobe)  # type: ignore
    if config.kind == "hnsw":
        return faiss.SearchParametersHNSW(efSearch=ef_search or config.ef_search)  # type: ignore
    return None


def search_index(
    index: faiss.Index, queries: np.ndarray, k: int, params: faiss.SearchParameters | None
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per query: the rows found (best first) and their inner products."""
    scores, rows = index.search(np.ascontiguousarray(queries, dtype=np.float32), k, params=params)
    found = rows >= 0  # an approximate index may find fewer than k
    return [(r[f], s[f]) for r, s, f in zip(rows, scores, found)]


def save_dense_index(index: faiss.Index, path: Path) -> None:
    faiss.write_index(index, str(path))


def load_dense_index(path: Path) -> faiss.Index:
    return faiss.read_index(str(path))
