"""The names of the retrieval methods, apart from the retrievers themselves, so that settings
and command lines can name one without loading the search libraries."""

from __future__ import annotations

from typing import Literal

RetrievalMode = Literal["bm25", "dense", "hybrid", "rrf", "two-stage"]
