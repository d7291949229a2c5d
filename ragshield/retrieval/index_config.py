"""How a FAISS index is built and searched, apart from FAISS itself, so that the command line
and settings can name the options without loading the search library."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

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
