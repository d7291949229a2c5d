"""FAISS indexes over unit vectors with inner product (= cosine): exact (flat) for small
corpora, IVF or HNSW for large ones, and their per-query search parameters."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

import faiss
import numpy as np

from ragshield.errors import OptionError

IndexKind = Literal["flat", "ivf", "hnsw"]
INDEX_KINDS: tuple[IndexKind, ...] = ("flat", "ivf", "hnsw")


@dataclass(frozen=True)
class DenseIndexConfig:
    """How the index is built, and the search defaults it is saved with (queries may override
    `nprobe` and `ef_search`).

    Defaults come from scripts/bench_retrieval.py on 2 cores: HNSW with M=16 builds 1M vectors
    in about 6 minutes, and efSearch=512 keeps recall@10 >= 0.95 at 1M (p50 about 3 ms);
    nprobe=64 gives 0.95 at 100k (nlist 316) but only about 0.9 at 1M, where HNSW is better.
    """

    kind: IndexKind = "flat"
    nlist: int | None = None  # IVF lists; None: about sqrt(number of vectors)
    nprobe: int = 64  # IVF lists scanned per query
    hnsw_m: int = 16  # HNSW links per node
    ef_construction: int = 40
    ef_search: int = 512  # HNSW candidate list size per query

    def __post_init__(self) -> None:
        if self.kind not in INDEX_KINDS:
            raise OptionError(
                f"unknown index type '{self.kind}' (choose from {', '.join(INDEX_KINDS)})"
            )
        for name in ("nprobe", "hnsw_m", "ef_construction", "ef_search"):
            if getattr(self, name) < 1:
                raise OptionError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.nlist is not None and self.nlist < 1:
            raise OptionError(f"nlist must be at least 1, got {self.nlist}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def build_dense_index(
    vectors: np.ndarray, config: DenseIndexConfig
) -> tuple[faiss.Index, DenseIndexConfig]:
    """The index holding `vectors` (row i gets id i), and the config with `nlist` resolved."""
    count, dim = vectors.shape
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
    if config.kind == "ivf":
        return faiss.SearchParametersIVF(nprobe=nprobe or config.nprobe)
    if config.kind == "hnsw":
        return faiss.SearchParametersHNSW(efSearch=ef_search or config.ef_search)
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
