"""`ragshield corpus ...`: ingesting and listing corpora."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ragshield.cli.errors import user_errors
from ragshield.cli.output import emit_json
from ragshield.config import Settings
from ragshield.services.defaults import DenseIndexConfig, IndexKind

app = typer.Typer(no_args_is_help=True, help="Corpora: chunks with their BM25 and FAISS indexes.")


@app.command("ingest")
def ingest(
    name: str = typer.Argument(..., help="Corpus name (a folder under the corpora folder)."),
    paths: list[Path] = typer.Argument(..., help="Files or folders: .txt .md .html .htm .jsonl"),
    chunk_tokens: int = typer.Option(200, "--chunk-tokens", help="Tokens per chunk."),
    overlap: int = typer.Option(0, "--overlap", help="Tokens shared by consecutive chunks."),
    index: IndexKind = typer.Option("flat", "--index", help="FAISS index type."),
    nlist: Optional[int] = typer.Option(None, "--nlist", help="IVF lists (default: sqrt(chunks))."),
    nprobe: int = typer.Option(DenseIndexConfig.nprobe, "--nprobe", help="IVF lists per query."),
    hnsw_m: int = typer.Option(DenseIndexConfig.hnsw_m, "--hnsw-m", help="HNSW links per node."),
    ef_search: int = typer.Option(DenseIndexConfig.ef_search, "--ef-search",
                                  help="HNSW search depth."),
    description: str = typer.Option("", "--description",
                                    help="What the corpus holds (shown to the source router)."),
    replace: bool = typer.Option(False, "--replace", help="Replace a corpus of the same name."),
    as_json: bool = typer.Option(False, "--json", help="Print the manifest as JSON."),
) -> None:
    """Chunk, embed and index documents as a named corpus."""
    from ragshield.services.data.corpora import ingest as ingest_documents

    settings = Settings()
    with user_errors():
        corpus = ingest_documents(
            name, paths, settings, chunk_tokens=chunk_tokens, overlap=overlap,
            description=description, replace=replace, progress=True,
            index=DenseIndexConfig(kind=index, nlist=nlist, nprobe=nprobe, hnsw_m=hnsw_m,
                                   ef_search=ef_search))
    manifest = corpus.manifest
    if as_json:
        emit_json(manifest.to_dict())
        return
    typer.echo(
        f"corpus '{name}': {manifest.chunks} chunks from {manifest.documents} documents "
        f"({manifest.duplicates_dropped} duplicate chunks dropped, {len(manifest.skipped_files)} "
        f"files skipped), {manifest.index.kind} index, in {settings.corpora_dir / name}"
    )


@app.command("list")
def list_corpora(as_json: bool = typer.Option(False, "--json", help="Print a JSON list.")) -> None:
    """The ingested corpora."""
    from ragshield.services.data.corpora import corpora

    settings = Settings()
    with user_errors():
        found = corpora(settings)
    if as_json:
        emit_json([m.to_dict() for m in found])
        return
    if not found:
        typer.echo(f"no corpora in {settings.corpora_dir}")
    for m in found:
        typer.echo(f"{m.name}: {m.chunks} chunks, {m.documents} documents, {m.index.kind} index, "
                   f"{m.chunk_tokens} tokens/chunk, created {m.created_at}"
                   + (f" - {m.description}" if m.description else ""))
