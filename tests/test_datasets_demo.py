"""The bundled demo set: real, balanced, small, attributed, reproducible; loaded as `demo`."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

from ragshield.datasets import load_dataset
from ragshield.datasets.demo import DEMO_CORPUS, DEMO_DIR, DEMO_RUN, DEMO_SAMPLES
from ragshield.services.datasets import ensure_demo_dataset
from ragshield.store.samples import DatasetSummary, list_datasets
from tests.conftest import SHARED_DATA

ROOT = Path(__file__).resolve().parents[1]


def demo_samples():
    return list(load_dataset(DEMO_SAMPLES))


def test_demo_set_is_balanced_mixed_and_small():
    samples = demo_samples()
    assert 100 <= len(samples) <= 200
    by_group = Counter((s.id.split(":")[0], s.answerable) for s in samples)
    assert set(by_group) == {(source, label) for source in ("clapnq", "squad2")
                             for label in (True, False)}
    assert len(set(by_group.values())) == 1  # as many in each source x label group
    assert all(sum(len(p.text.split()) for p in s.passages) <= 350 for s in samples)
    assert sum(f.stat().st_size for f in DEMO_DIR.iterdir() if f != DEMO_RUN) < 600_000
    assert DEMO_RUN.stat().st_size < 2_000_000  # the shipped demo run stays a few MB at most


def test_demo_samples_are_the_real_dataset_samples():
    originals = {s.id: s for name in ("clapnq_dev.jsonl", "squad2_dev_part_a.jsonl")
                 for s in load_dataset(SHARED_DATA / name)}
    for sample in demo_samples():
        original = originals[sample.id]
        assert (sample.question, sample.answerable, sample.reference_answers, sample.meta) == (
            original.question, original.answerable, original.reference_answers, original.meta)
        assert [(p.title, p.text) for p in sample.passages] == [
            (p.title, p.text) for p in original.passages]


def test_corpus_pools_every_passage_once():
    corpus = [json.loads(line) for line in DEMO_CORPUS.read_text(encoding="utf-8").splitlines()]
    assert all(set(entry) == {"id", "title", "text", "source"} for entry in corpus)
    by_id = {entry["id"]: entry for entry in corpus}
    assert len(by_id) == len(corpus) == len({(e["title"], e["text"]) for e in corpus})
    used = set()
    for sample in demo_samples():
        for passage in sample.passages:
            entry = by_id[passage.doc_id]
            assert (entry["title"], entry["text"]) == (passage.title, passage.text)
            assert entry["source"] == sample.id.split(":")[0]
            used.add(passage.doc_id)
    assert used == set(by_id)


def test_licence_and_attribution_name_the_sources():
    licence = (DEMO_DIR / "LICENSE").read_text()
    attribution = (DEMO_DIR / "ATTRIBUTION.md").read_text()
    for text in ("CC BY-SA 4.0", "CC BY-SA 3.0", "Apache"):
        assert text in licence
    for text in ("SQuAD", "Rajpurkar", "ClapNQ", "primeqa/clapnq", "Wikipedia",
                 "Natural Questions"):
        assert text in attribution
    assert "Apache License" in (DEMO_DIR / "LICENSE-Apache-2.0.txt").read_text()


def test_the_script_rebuilds_the_same_files(python_processes, tmp_path):
    result = subprocess.run(
        [sys.executable, "scripts/make_demo_set.py", "--data-dir", str(SHARED_DATA),
         "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    for name in ("samples.jsonl", "corpus.jsonl"):
        assert (tmp_path / name).read_bytes() == (DEMO_DIR / name).read_bytes()


def test_ensure_demo_dataset_loads_it_once(store):
    assert ensure_demo_dataset(store) is True
    assert ensure_demo_dataset(store) is False
    count = len(demo_samples())
    assert list_datasets(store) == [
        DatasetSummary("demo", count, count // 2, count // 2, 0)]
