"""`python -m ragshield corpus ...` and `python -m ragshield search` as a user runs them, on a
temporary corpora folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.retrieval_fixtures import DOCUMENTS, write_jsonl

ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args: str, corpora: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ragshield", *args], cwd=ROOT,
        env={**os.environ, "RAGSHIELD_CORPORA_DIR": str(corpora)},
        capture_output=True, text=True, timeout=300,
    )


def test_ingest_list_and_search(packaged_models, python_processes, tmp_path):
    corpora = tmp_path / "corpora"
    source = write_jsonl(tmp_path / "docs.jsonl", DOCUMENTS)
    ingested = run_cli("corpus", "ingest", "kb", str(source), "--chunk-tokens", "64",
                       "--overlap", "8", "--index", "hnsw", "--description", "test documents",
                       "--json", corpora=corpora)
    assert ingested.returncode == 0, ingested.stderr
    manifest = json.loads(ingested.stdout)
    assert manifest["chunks"] == len(DOCUMENTS) and manifest["index"]["kind"] == "hnsw"
    assert (manifest["chunk_tokens"], manifest["overlap"]) == (64, 8)
    assert (corpora / "kb" / "manifest.json").is_file()

    listed = run_cli("corpus", "list", "--json", corpora=corpora)
    assert listed.returncode == 0, listed.stderr
    listing = json.loads(listed.stdout)
    assert [(c["name"], c["description"]) for c in listing] == [("kb", "test documents")]

    searched = run_cli("search", "--corpus", "kb", "--k", "3", "--mode", "hybrid",
                       "Which vegetation process converts solar energy into sugar?", "--json",
                       corpora=corpora)
    assert searched.returncode == 0, searched.stderr
    found = json.loads(searched.stdout)
    assert len(found) == 3 and all(set(p) == {"id", "text", "score", "doc_id"} for p in found)
    assert found[0]["id"] == "photosynthesis#0" and found[0]["doc_id"] == "photosynthesis"
    assert found[0]["text"] == DOCUMENTS[2]["text"] and found[0]["score"] > 0


def test_bad_input_ends_with_a_message_and_status_1(python_processes, tmp_path):
    corpora = tmp_path / "corpora"
    missing = run_cli("corpus", "ingest", "kb", str(tmp_path / "nowhere"), corpora=corpora)
    assert missing.returncode == 1 and "nowhere: no such file or folder" in missing.stderr
    unknown = run_cli("search", "--corpus", "absent", "--mode", "bm25", "anything", corpora=corpora)
    assert unknown.returncode == 1 and "no corpus 'absent'" in unknown.stderr
