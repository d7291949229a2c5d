"""Reading documents, chunking, de-duplication, persisting and reloading corpora, and every
bad-input case of ingestion."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ragshield.config import Settings
from ragshield.retrieval import demo_corpus
from ragshield.retrieval.chunking import TokenChunker, deduplicate, load_chunk_tokenizer
from ragshield.retrieval.corpus_store import MANIFEST_FILE, list_corpora, load_corpus
from ragshield.retrieval.dense import DenseRetriever
from ragshield.retrieval.documents import Document, read_documents
from ragshield.retrieval.encoding import Embedder
from ragshield.retrieval.errors import (
    BadJsonlLine,
    CorpusExists,
    CorpusFormatError,
    CorpusNotFound,
    CorpusPathNotFound,
    DuplicateDocumentId,
    EmbeddingModelMismatch,
    EmptyCorpus,
    InvalidCorpusName,
    NotUtf8Error,
    UnsupportedFileType,
)
from ragshield.retrieval.factory import make_retriever
from ragshield.retrieval.index_config import DenseIndexConfig
from ragshield.retrieval.ingest import IngestOptions, build_corpus, ingest_corpus
from tests.retrieval_fixtures import DOCUMENTS, write_jsonl

TEXT = (
    "Café au lait — naïve façade at 東京 station. The Eiffel Tower (1889) is 330 m tall!\n\n"
    "Second paragraph: über-long compound words like Donaudampfschifffahrt break into pieces. "
) * 6


@pytest.fixture(scope="module")
def tokenizer():
    return load_chunk_tokenizer(Settings())


@pytest.fixture
def settings(tmp_path) -> Settings:
    return Settings(corpora_dir=tmp_path / "corpora")


# --- chunking ---------------------------------------------------------------------------


def test_chunk_offsets_map_back_to_the_source_text(tokenizer):
    chunks = list(TokenChunker(tokenizer, chunk_tokens=20).chunk([Document("d", TEXT)]))
    assert len(chunks) > 3
    for i, chunk in enumerate(chunks):
        assert chunk.text == TEXT[chunk.start : chunk.end]
        assert (chunk.id, chunk.doc_id, chunk.index) == (f"d#{i}", "d", i)
        assert len(tokenizer.encode(chunk.text, add_special_tokens=False).ids) <= 20
    # Without overlap, consecutive chunks cover the text in order, gaps only whitespace.
    assert chunks[0].start == 0 and chunks[-1].end == len(TEXT.rstrip())
    for before, after in zip(chunks, chunks[1:]):
        assert before.end <= after.start and not TEXT[before.end : after.start].strip()


def test_overlapping_chunks_share_tokens(tokenizer):
    size, overlap = 20, 5
    chunks = list(TokenChunker(tokenizer, size, overlap).chunk([Document("d", TEXT)]))
    offsets = tokenizer.encode(TEXT, add_special_tokens=False).offsets
    # Chunk i holds tokens [15 i, 15 i + 20): the last 5 tokens of one open the next.
    expected = [(offsets[first][0], offsets[min(first + size, len(offsets)) - 1][1])
                for first in range(0, len(offsets) - overlap, size - overlap)]
    assert [(c.start, c.end) for c in chunks] == expected
    assert all(c.text == TEXT[c.start : c.end] for c in chunks)
    assert chunks[1].start < chunks[0].end and chunks[-1].end == offsets[-1][1]


def test_chunking_rejects_bad_sizes(tokenizer):
    with pytest.raises(ValueError, match="overlap"):
        TokenChunker(tokenizer, 10, 10)
    with pytest.raises(ValueError, match="at least 1"):
        TokenChunker(tokenizer, 0)


def test_duplicate_chunks_are_dropped_keeping_the_first(tokenizer):
    docs = [Document("a", "Same words here."), Document("b", "Same  words\nhere."),
            Document("c", "Different words.")]
    kept, dropped = deduplicate(list(TokenChunker(tokenizer).chunk(docs)))
    assert [c.doc_id for c in kept] == ["a", "c"] and dropped == 1


# --- reading documents ------------------------------------------------------------------


def test_reads_every_supported_type_and_turns_html_into_markdown(tmp_path):
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "notes.txt").write_text("Plain text.")
    (folder / "sub" / "readme.md").write_text("# Title\n\nSome *markdown*.")
    (folder / "page.html").write_text(
        "<html><head><script>var hidden = 1;</script></head><body><nav>Menu</nav>"
        "<h2>Volcanoes</h2><p>Lava is <b>hot</b>.</p><ul><li>Etna</li><li>Fuji</li></ul>"
        "</body></html>"
    )
    write_jsonl(folder / "records.jsonl", [{"id": 7, "title": "T", "text": "Seven.", "url": "u"},
                                          {"text": "No id."}])
    (folder / "image.png").write_bytes(b"\x89PNG")
    (folder / ".hidden.txt").write_text("secret")
    (folder / ".git").mkdir()
    (folder / ".git" / "notes.txt").write_text("hidden folder")

    read = read_documents([folder])
    by_id = {d.id: d for d in read.documents}
    assert set(by_id) == {"notes.txt", "sub/readme.md", "page.html", "7", "records.jsonl:2"}
    page = by_id["page.html"].text
    assert page.startswith("## Volcanoes") and "Lava is **hot**." in page and "* Etna" in page
    assert "hidden" not in page and "Menu" not in page
    assert by_id["7"].title == "T" and by_id["7"].meta == {"url": "u"}
    assert read.files == 4 and read.skipped == [str(folder / "image.png")]


def test_missing_path_is_reported(tmp_path):
    with pytest.raises(CorpusPathNotFound, match="nowhere"):
        read_documents([tmp_path / "nowhere"])


def test_unsupported_file_named_directly_is_reported(tmp_path):
    (tmp_path / "data.csv").write_text("a,b")
    with pytest.raises(UnsupportedFileType, match="data.csv.*'.csv'"):
        read_documents([tmp_path / "data.csv"])


def test_non_utf8_files_are_reported_with_file_and_position(tmp_path):
    (tmp_path / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(NotUtf8Error, match=r"latin1.txt: not UTF-8 \(invalid byte 0xe9 at byte 3"):
        read_documents([tmp_path / "latin1.txt"])
    (tmp_path / "bad.jsonl").write_bytes(b'{"text": "ok"}\n{"text": "caf\xe9"}\n')
    with pytest.raises(NotUtf8Error, match=r"bad.jsonl:2: not UTF-8"):
        read_documents([tmp_path / "bad.jsonl"])


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", r"bad.jsonl:2: not valid JSON"),
        ('["a list"]', r"bad.jsonl:2: expected a JSON object, got list"),
        ('{"title": "no text"}', r"bad.jsonl:2: field 'text' is missing"),
        ('{"text": 42}', r"bad.jsonl:2: field 'text' must be a string, got int"),
        ('{"text": "x", "title": ["t"]}', r"bad.jsonl:2: field 'title' must be a string"),
        ('{"text": "x", "id": true}', r"bad.jsonl:2: field 'id' must be a non-empty string"),
        ('{"text": "x", "id": ""}', r"bad.jsonl:2: field 'id' must be a non-empty string"),
        ('{"text": "x", "n": [1e999]}', r"bad.jsonl:2: field 'n\[0\]': 1e999 is not a finite"),
        ('{"text": "x", "n": NaN}', r"bad.jsonl:2: field 'n': NaN is not a finite number"),
        ('{"text": "x", "n": %s}' % ("9" * 5000), r"bad.jsonl:2: field 'n': an integer of 5000"),
        ('{"text": "x", "n": %s}' % ("[" * 5000 + "]" * 5000), r"bad.jsonl:2: nested deeper"),
    ],
)
def test_bad_jsonl_lines_name_file_line_and_field(tmp_path, line, message):
    (tmp_path / "bad.jsonl").write_text('{"text": "fine"}\n' + line + "\n")
    with pytest.raises(BadJsonlLine, match=message):
        read_documents([tmp_path / "bad.jsonl"])


def test_duplicate_document_ids_are_reported(tmp_path):
    write_jsonl(tmp_path / "a.jsonl", [{"id": "x", "text": "one"}])
    write_jsonl(tmp_path / "b.jsonl", [{"id": "x", "text": "two"}])
    with pytest.raises(DuplicateDocumentId, match="'x' appears twice: in .*a.jsonl:1 and in"):
        read_documents([tmp_path / "a.jsonl", tmp_path / "b.jsonl"])


# --- building, persisting and reloading -------------------------------------------------


def test_empty_inputs_are_an_empty_corpus_error(tmp_path, settings, embedder):
    (tmp_path / "empty").mkdir()
    with pytest.raises(EmptyCorpus, match="0 file"):
        build_corpus("c", [tmp_path / "empty"], settings, embedder=embedder)
    (tmp_path / "blank.txt").write_text("  \n\n ")
    (tmp_path / "skip.pdf").write_bytes(b"%PDF")
    message = r"1 file\(s\) read, 1 document\(s\), no text.*1 file\(s\) of other types"
    with pytest.raises(EmptyCorpus, match=message):
        build_corpus("c", [tmp_path], settings, embedder=embedder)


def test_bad_names_sizes_and_index_types_are_refused(tmp_path, settings, embedder):
    source = write_jsonl(tmp_path / "c.jsonl", DOCUMENTS[:2])
    for name in ("../escape", "", "a b", ".hidden"):
        with pytest.raises(InvalidCorpusName):
            build_corpus(name, [source], settings, embedder=embedder)
    with pytest.raises(ValueError, match="longer than .* reads"):
        build_corpus("c", [source], settings, IngestOptions(chunk_tokens=400),
                     embedder=embedder)
    with pytest.raises(ValueError, match="unknown index type"):
        DenseIndexConfig(kind="lsh")  # type: ignore[arg-type]


def test_ingest_persist_reload_gives_identical_results_without_embedding_chunks(
        tmp_path, settings, recording_embedder):
    source = write_jsonl(tmp_path / "c.jsonl", DOCUMENTS + [dict(DOCUMENTS[0], id="eiffel-copy")])
    embedder, recorder = recording_embedder
    built = ingest_corpus("kb", [source], settings, IngestOptions(description="test docs"),
                          embedder=embedder)
    assert recorder.texts == [c.text for c in built.chunks]  # chunks embedded once, at ingest
    assert built.manifest.duplicates_dropped == 1 and built.manifest.chunks == len(DOCUMENTS)
    queries = ["tallest mountain in the world", "who wrote the Python language", "QW7731"]
    before = {mode: make_retriever(built, mode, embedder=embedder).search_many(queries, 3)
              for mode in ("bm25", "dense", "hybrid", "rrf", "two-stage")}

    recorder.batches.clear()
    loaded = load_corpus(settings.corpora_dir, "kb")
    assert recorder.batches == []  # loading embeds nothing
    assert isinstance(loaded.embeddings, np.memmap)
    np.testing.assert_array_equal(np.asarray(loaded.embeddings), built.embeddings)
    assert [c.to_record() for c in loaded.chunks] == [c.to_record() for c in built.chunks]
    assert loaded.chunks[-1] == built.chunks[-1] and loaded.chunks[1:3] == built.chunks[1:3]
    assert loaded.chunk_ids == built.chunk_ids
    assert loaded.manifest == built.manifest and loaded.manifest.description == "test docs"
    after = {mode: make_retriever(loaded, mode, embedder=embedder).search_many(queries, 3)
             for mode in before}
    assert after == before
    assert all(batch == queries for batch in recorder.batches)  # only the queries were embedded
    chunk = loaded.chunks[loaded.row_of["eiffel#0"]]
    assert chunk.meta == {"source": "wiki"} and chunk.title == "Eiffel Tower"


def test_existing_missing_and_broken_corpora(tmp_path, settings, embedder):
    source = write_jsonl(tmp_path / "c.jsonl", DOCUMENTS[:3])
    ingest_corpus("kb", [source], settings, embedder=embedder)
    with pytest.raises(CorpusExists, match="'kb' already exists"):
        ingest_corpus("kb", [source], settings, embedder=embedder)
    replaced = ingest_corpus("kb", [source], settings, IngestOptions(chunk_tokens=8),
                             embedder=embedder, replace=True)
    assert load_corpus(settings.corpora_dir, "kb").manifest == replaced.manifest
    assert [m.name for m in list_corpora(settings.corpora_dir)] == ["kb"]
    with pytest.raises(CorpusNotFound, match="no corpus 'other'"):
        load_corpus(settings.corpora_dir, "other")

    manifest_path = settings.corpora_dir / "kb" / MANIFEST_FILE
    manifest = json.loads(manifest_path.read_text())
    manifest_path.write_text(json.dumps({**manifest, "format_version": 99}))
    with pytest.raises(CorpusFormatError, match="format version 99"):
        load_corpus(settings.corpora_dir, "kb")
    manifest_path.write_text(json.dumps({**manifest, "chunks": 1}))
    with pytest.raises(CorpusFormatError, match="disagree"):
        load_corpus(settings.corpora_dir, "kb")
    manifest_path.write_text(json.dumps(manifest))
    (settings.corpora_dir / "kb" / "dense.faiss").unlink()
    with pytest.raises(CorpusFormatError, match="missing dense.faiss"):
        load_corpus(settings.corpora_dir, "kb")


def test_queries_must_use_the_model_the_corpus_was_embedded_with(tmp_path, settings, embedder):
    corpus = build_corpus("kb", [write_jsonl(tmp_path / "c.jsonl", DOCUMENTS[:3])], settings,
                          embedder=embedder)
    other = Embedder("some-other-model", embedder.model)
    with pytest.raises(EmbeddingModelMismatch, match="embedded with all-MiniLM"):
        DenseRetriever(corpus, other)


def test_demo_corpus_is_ingested_on_first_use(tmp_path, settings, monkeypatch, embedder):
    monkeypatch.setattr(demo_corpus, "DEMO_CORPUS_FILE", tmp_path / "absent.jsonl")
    with pytest.raises(CorpusNotFound, match="absent.jsonl is missing"):
        demo_corpus.open_corpus("demo", settings)
    demo_file = write_jsonl(tmp_path / "corpus.jsonl",
                            [dict(d, source="demo-source") for d in DOCUMENTS[:4]])
    monkeypatch.setattr(demo_corpus, "DEMO_CORPUS_FILE", demo_file)
    first = demo_corpus.open_corpus("demo", settings, embedder=embedder)
    assert first.manifest.inputs == [str(demo_file)] and len(first) == 4
    assert (settings.corpora_dir / "demo" / MANIFEST_FILE).is_file()
    demo_file.unlink()  # the second open loads what was saved
    assert demo_corpus.open_corpus("demo", settings).manifest == first.manifest
    with pytest.raises(CorpusNotFound):
        demo_corpus.open_corpus("not-demo", settings)

