"""Opening a corpus by name; the bundled demo corpus is ingested on first use."""

from __future__ import annotations

from ragshield.config import Settings
from ragshield.datasets.demo import DEMO_CORPUS as DEMO_CORPUS_FILE
from ragshield.retrieval.corpus import Corpus
from ragshield.retrieval.corpus_store import load_corpus
from ragshield.retrieval.encoding import Embedder
from ragshield.retrieval.errors import CorpusExists, CorpusNotFound
from ragshield.retrieval.ingest import IngestOptions, ingest_corpus

DEMO_CORPUS_NAME = "demo"
DEMO_DESCRIPTION = "The bundled demo documents"


def open_corpus(name: str, settings: Settings, *, embedder: Embedder | None = None,
                progress: bool = False) -> Corpus:
    """The saved corpus `name`; `embedder` (default: the configured model) embeds the demo
    corpus when it is ingested on first use."""
    try:
        return load_corpus(settings.corpora_dir, name)
    except CorpusNotFound:
        if name != DEMO_CORPUS_NAME:
            raise
    if not DEMO_CORPUS_FILE.is_file():
        raise CorpusNotFound(
            f"the demo corpus is not ingested and its file {DEMO_CORPUS_FILE} is missing; reinstall"
            " ragshield (`pip install --force-reinstall ragshield`)"
        )
    try:
        return ingest_corpus(DEMO_CORPUS_NAME, [DEMO_CORPUS_FILE], settings,
                             IngestOptions(description=DEMO_DESCRIPTION), embedder=embedder,
                             progress=progress)
    except CorpusExists:  # another process ingested it meanwhile
        return load_corpus(settings.corpora_dir, name)
