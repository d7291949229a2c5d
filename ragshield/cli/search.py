"""`ragshield search`: query an ingested corpus."""

from __future__ import annotations

import typer

from ragshield.cli.errors import user_errors
from ragshield.cli.output import emit_json
from ragshield.config import Settings
from ragshield.types import RetrievalMode

PREVIEW_CHARS = 160


def search(
    query: str = typer.Argument(..., help="The question or keywords."),
    corpus: str = typer.Option(..., "--corpus",
                               help="Corpus name ('demo' is ingested on first use)."),
    k: int = typer.Option(3, "--k", help="Passages to return."),
    retrieval: RetrievalMode = typer.Option("hybrid", "--retrieval", help="Retrieval method."),
    alpha: float = typer.Option(0.5, "--alpha", help="Dense share of the hybrid mode."),
    as_json: bool = typer.Option(False, "--json",
                                 help="Print a JSON list of {id, text, score, doc_id}."),
) -> None:
    """Retrieve the best passages of a corpus for QUERY."""
    from ragshield.services.data.corpora import search as search_corpus

    with user_errors():
        passages = search_corpus(Settings(), corpus, query, k, retrieval, alpha=alpha,
                                 progress=True)
    if as_json:
        emit_json([{"id": p.meta["chunk_id"], "text": p.text, "score": p.score, "doc_id": p.doc_id}
                   for p in passages])
        return
    if not passages:
        typer.echo("no passages found")
    for rank, p in enumerate(passages, start=1):
        preview = " ".join(p.text.split())[:PREVIEW_CHARS]
        via = f"{p.meta['via']} " if "via" in p.meta else ""
        typer.echo(f"{rank}. [{via}{p.score:.3f}] {p.meta['chunk_id']}: {preview}")
