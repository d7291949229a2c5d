"""`ragshield corpus ...` and `ragshield search` as a user runs them (in this process:
tests/test_cli.py `invoke`), on a temporary corpora folder."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import Result

from tests.retrieval_fixtures import DOCUMENTS, write_jsonl
from tests.cli_support import invoke


def corpus_cli(*args: str, corpora: Path) -> Result:
    return invoke(*args, env={"RAGSHIELD_CORPORA_DIR": str(corpora)})


def test_ingest_list_and_search(packaged_models, tmp_path):
    corpora = tmp_path / "corpora"
    source = write_jsonl(tmp_path / "docs.jsonl", DOCUMENTS)
    ingested = corpus_cli("corpus", "ingest", "kb", str(source), "--chunk-tokens", "64",
                          "--overlap", "8", "--index", "hnsw", "--description",
                          "test documents", "--json", corpora=corpora)
    assert ingested.exit_code == 0, ingested.stderr
    manifest = json.loads(ingested.stdout)
    assert manifest["chunks"] == len(DOCUMENTS) and manifest["index"]["kind"] == "hnsw"
    assert (manifest["chunk_tokens"], manifest["overlap"]) == (64, 8)
    assert (corpora / "kb" / "manifest.json").is_file()

    listed = corpus_cli("corpus", "list", "--json", corpora=corpora)
    assert listed.exit_code == 0, listed.stderr
    listing = json.loads(listed.stdout)
    assert [(c["name"], c["description"]) for c in listing] == [("kb", "test documents")]

    searched = corpus_cli("search", "--corpus", "kb", "--k", "3", "--retrieval", "hybrid",
                          "Which vegetation process converts solar energy into sugar?", "--json",
                          corpora=corpora)
    assert searched.exit_code == 0, searched.stderr
    found = json.loads(searched.stdout)
    assert len(found) == 3 and all(set(p) == {"id", "text", "score", "doc_id"} for p in found)
    assert found[0]["id"] == "photosynthesis#0" and found[0]["doc_id"] == "photosynthesis"
    assert found[0]["text"] == DOCUMENTS[2]["text"] and found[0]["score"] > 0


def test_bad_input_ends_with_a_message_and_status_1(tmp_path):
    corpora = tmp_path / "corpora"
    missing = corpus_cli("corpus", "ingest", "kb", str(tmp_path / "nowhere"), corpora=corpora)
    assert missing.exit_code == 1 and "nowhere: no such file or folder" in missing.stderr
    unknown = corpus_cli("search", "--corpus", "absent", "--retrieval", "bm25", "anything",
                         corpora=corpora)
    assert unknown.exit_code == 1 and "no corpus 'absent'" in unknown.stderr
