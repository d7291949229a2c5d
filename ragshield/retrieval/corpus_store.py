"""Corpora on disk: one folder per name under the corpora folder, holding the chunk table
(JSONL), the manifest, the embeddings (.npy) and the BM25 and FAISS indexes.

A corpus is written to a temporary folder and renamed into place, so a reader never sees half
of one. Loading embeds nothing, parses no chunk and memory-maps what it can.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import numpy as np

from ragshield import strict_json
from ragshield.retrieval.bm25_index import BM25Index
from ragshield.retrieval.chunk_table import FILES as CHUNK_TABLE_FILES
from ragshield.retrieval.chunk_table import ChunkTable, write_chunk_table
from ragshield.retrieval.corpus import FORMAT_VERSION, Corpus, CorpusManifest
from ragshield.retrieval.errors import (
    CorpusExists,
    CorpusFormatError,
    CorpusNotFound,
    InvalidCorpusName,
)
from ragshield.retrieval.faiss_index import load_dense_index, save_dense_index

MANIFEST_FILE = "manifest.json"
EMBEDDINGS_FILE = "embeddings.npy"
DENSE_INDEX_FILE = "dense.faiss"
BM25_FOLDER = "bm25"
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
SHOWN_NAME_LENGTH = 80


def corpus_folder(corpora_dir: Path, name: str) -> Path:
    """The folder of corpus `name`; a name that is not a plain folder name is refused (shown
    quoted and cut short: it may hold terminal escapes or be thousands of characters long)."""
    if not NAME_PATTERN.fullmatch(name):
        shown = repr(name[:SHOWN_NAME_LENGTH]) + ("..." if len(name) > SHOWN_NAME_LENGTH else "")
        raise InvalidCorpusName(
            f"invalid corpus name {shown}: use up to 64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return Path(corpora_dir) / name


def ensure_name_free(corpora_dir: Path, name: str) -> None:
    if corpus_folder(corpora_dir, name).exists():
        raise CorpusExists(
            f"corpus '{name}' already exists in {corpora_dir}; replace it explicitly"
        )


def save_corpus(corpus: Corpus, corpora_dir: Path, *, replace: bool = False) -> Path:
    folder = corpus_folder(corpora_dir, corpus.name)
    if not replace:
        ensure_name_free(corpora_dir, corpus.name)
    Path(corpora_dir).mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{corpus.name}.", dir=corpora_dir))
    try:
        _write(corpus, staging)
        if folder.exists():
            retired = Path(tempfile.mkdtemp(prefix=f".{corpus.name}.old.", dir=corpora_dir))
            folder.rename(retired / "corpus")
            shutil.rmtree(retired)
        try:
            staging.rename(folder)
        except OSError as exc:  # another process saved the same name meanwhile
            raise CorpusExists(
                f"corpus '{corpus.name}' was created meanwhile in {corpora_dir}"
            ) from exc
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return folder


def _write(corpus: Corpus, folder: Path) -> None:
    write_chunk_table(corpus.chunks, folder)
    np.save(folder / EMBEDDINGS_FILE, np.ascontiguousarray(corpus.embeddings, dtype=np.float32))
    corpus.bm25.save(folder / BM25_FOLDER)
    save_dense_index(corpus.dense_index, folder / DENSE_INDEX_FILE)
    # The manifest goes last: a folder with a manifest is complete.
    (folder / MANIFEST_FILE).write_text(json.dumps(corpus.manifest.to_dict(), indent=2) + "\n")
    os.chmod(folder, 0o755)  # mkdtemp made it private to this user


def read_manifest(corpora_dir: Path, name: str) -> CorpusManifest:
    folder = corpus_folder(corpora_dir, name)
    path = folder / MANIFEST_FILE
    if not path.is_file():  # named, not its folder: the guard API answers with this
        found = ", ".join(_complete(Path(corpora_dir))) or "none"
        raise CorpusNotFound(f"no corpus '{name}' (ingested here: {found}; `python -m "
                             "ragshield corpus list` lists them, `python -m ragshield corpus "
                             "ingest NAME FILES` adds one)")
    try:
        data = strict_json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # unreadable, not UTF-8, not JSON, absurdly nested
        raise CorpusFormatError(f"{path}: unreadable manifest ({exc})") from exc
    version = data.get("format_version") if isinstance(data, dict) else None
    if version != FORMAT_VERSION:
        raise CorpusFormatError(
            f"{path}: format version {version}, expected {FORMAT_VERSION}; ingest the corpus again"
        )
    try:
        return CorpusManifest.from_dict(data)
    except (TypeError, KeyError, ValueError) as exc:
        raise CorpusFormatError(f"{path}: unreadable manifest ({exc})") from exc


def load_corpus(corpora_dir: Path, name: str) -> Corpus:
    manifest = read_manifest(corpora_dir, name)
    folder = corpus_folder(corpora_dir, name)
    missing = [f for f in (*CHUNK_TABLE_FILES, EMBEDDINGS_FILE, DENSE_INDEX_FILE, BM25_FOLDER)
               if not (folder / f).exists()]
    if missing:
        raise CorpusFormatError(f"{folder}: incomplete corpus, missing {', '.join(missing)}")
    chunks = ChunkTable(folder)
    corpus = Corpus(
        manifest=manifest,
        chunks=chunks,
        embeddings=np.load(folder / EMBEDDINGS_FILE, mmap_mode="r"),
        bm25=BM25Index.load(folder / BM25_FOLDER),
        dense_index=load_dense_index(folder / DENSE_INDEX_FILE),
        chunk_ids=chunks.ids,
    )
    sizes = {"manifest": manifest.chunks, "chunk table": len(chunks), "chunk ids": len(chunks.ids),
             "embeddings": len(corpus.embeddings), "BM25 index": corpus.bm25.size,
             "FAISS index": corpus.dense_index.ntotal}
    if len(set(sizes.values())) != 1:
        raise CorpusFormatError(
            f"{folder}: parts disagree on the number of chunks ("
            + ", ".join(f"{part} {n}" for part, n in sizes.items()) + ")"
        )
    return corpus


def _complete(corpora_dir: Path) -> list[str]:
    """The names of the complete corpora (those with a manifest), sorted."""
    if not corpora_dir.is_dir():
        return []
    return [folder.name for folder in sorted(corpora_dir.iterdir())
            if NAME_PATTERN.fullmatch(folder.name) and (folder / MANIFEST_FILE).is_file()]


def list_corpora(corpora_dir: Path) -> list[CorpusManifest]:
    """Manifests of the complete corpora, by name."""
    return [read_manifest(corpora_dir, name) for name in _complete(Path(corpora_dir))]
