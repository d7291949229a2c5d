"""Ingestion: documents -> token chunks -> de-duplicated -> embedded -> BM25 and FAISS indexes
-> saved as a named corpus."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

from ragshield.config import Settings
from ragshield.errors import OptionError
from ragshield.retrieval.bm25_index import BM25Index
from ragshield.retrieval.chunking import TokenChunker, deduplicate, load_chunk_tokenizer
from ragshield.retrieval.corpus import Corpus, CorpusManifest
from ragshield.retrieval.corpus_store import corpus_folder, ensure_name_free, save_corpus
from ragshield.retrieval.documents import read_documents
from ragshield.retrieval.encoding import Embedder, default_embedder
from ragshield.retrieval.errors import EmptyCorpus
from ragshield.retrieval.faiss_index import build_dense_index
from ragshield.retrieval.index_config import DenseIndexConfig

SPECIAL_TOKENS = 2  # the [CLS] and [SEP] an encoder adds around each chunk


@dataclass(frozen=True)
class IngestOptions:
    chunk_tokens: int = 200
    overlap: int = 0
    index: DenseIndexConfig = field(default_factory=DenseIndexConfig)
    description: str = ""


def build_corpus(
    name: str,
    paths: Sequence[str | Path],
    settings: Settings,
    options: IngestOptions = IngestOptions(),
    *,
    embedder: Embedder | None = None,
    progress: bool = False,
) -> Corpus:
    """The corpus in memory (nothing is written)."""
    corpus_folder(settings.corpora_dir, name)  # a bad name fails before any work
    chunker = TokenChunker(load_chunk_tokenizer(settings), options.chunk_tokens, options.overlap)
    read = read_documents(paths)
    chunks, dropped = deduplicate(list(chunker.chunk(read.documents)))
    if not chunks:
        raise EmptyCorpus(
            f"nothing to index in {', '.join(map(str, paths))}: {read.files} file(s) read, "
            f"{len(read.documents)} document(s), no text in them"
            + (f" ({len(read.skipped)} file(s) of other types skipped)" if read.skipped else "")
        )
    embedder = embedder or default_embedder(settings)
    _check_chunks_fit(embedder, options.chunk_tokens)
    texts = [chunk.text for chunk in chunks]
    embeddings = embedder.encode(texts, progress=progress)
    dense_index, index_config = build_dense_index(embeddings, options.index)
    manifest = CorpusManifest(
        name=name, chunk_tokens=options.chunk_tokens, overlap=options.overlap,
        embedding_model=embedder.name, embedding_dim=int(embeddings.shape[1]), index=index_config,
        documents=len(read.documents), chunks=len(chunks), duplicates_dropped=dropped,
        files=read.files, created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        description=options.description, inputs=[str(p) for p in paths],
        skipped_files=read.skipped,
    )
    bm25 = BM25Index.build(texts, progress=progress)
    return Corpus(manifest, chunks, embeddings, bm25, dense_index)


def _check_chunks_fit(embedder: Embedder, chunk_tokens: int) -> None:
    """An encoder silently truncates longer inputs: the end of each chunk would not be embedded."""
    limit = getattr(embedder.model, "max_seq_length", None)
    if limit and chunk_tokens + SPECIAL_TOKENS > limit:
        raise OptionError(
            f"chunks of {chunk_tokens} tokens are longer than {embedder.name} reads "
            f"({limit - SPECIAL_TOKENS} tokens); choose a smaller chunk size"
        )


def ingest_corpus(
    name: str,
    paths: Sequence[str | Path],
    settings: Settings,
    options: IngestOptions = IngestOptions(),
    *,
    embedder: Embedder | None = None,
    replace: bool = False,
    progress: bool = False,
) -> Corpus:
    """Build the corpus and save it under `settings.corpora_dir / name`."""
    if not replace:
        ensure_name_free(settings.corpora_dir, name)  # before the costly part
    corpus = build_corpus(name, paths, settings, options, embedder=embedder, progress=progress)
    save_corpus(corpus, settings.corpora_dir, replace=replace)
    return corpus
