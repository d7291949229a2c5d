"""The bundled demo set: real, balanced, small, attributed, made by its script; loaded as
`demo`.

tests/data holds the 160 ClapNQ and SQuAD 2.0 rows the shipped set was cut from, among others
(tests/data/README.md). The script's seeded pick is over every eligible row of the full files,
so only those rebuild the shipped files byte for byte; here the shipped set is checked against
its source rows and the script's rules, and the script, run on tests/data, must make a set by
the same rules, the same bytes each time."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from ragshield.datasets import load_dataset
from ragshield.datasets.demo import DEMO_CORPUS, DEMO_DIR, DEMO_RUN, DEMO_SAMPLES
from ragshield.services.data.datasets import ensure_demo_dataset
from ragshield.store.samples import DatasetSummary, list_datasets
from scripts.make_demo_set import main as make_demo_set
from scripts.make_demo_set import passage_id
from tests.conftest import TEST_DATA

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("clapnq_dev.jsonl", "squad2_dev_part_a.jsonl")


def demo_samples(path: Path = DEMO_SAMPLES):
    return list(load_dataset(path))


def source_rows() -> dict:
    return {s.id: s for name in SOURCES for s in load_dataset(TEST_DATA / name)}


def assert_real_rows(samples) -> None:
    """Each sample is a row of the public files, unchanged but for its passages' ids."""
    originals = source_rows()
    for sample in samples:
        original = originals[sample.id]
        assert (sample.question, sample.answerable, sample.reference_answers, sample.meta) == (
            original.question, original.answerable, original.reference_answers, original.meta)
        assert [(p.title, p.text) for p in sample.passages] == [
            (p.title, p.text) for p in original.passages]


def assert_made_by_the_rules(samples, corpus_path: Path, per_group: int = 40,
                             max_words: int = 350) -> None:
    """scripts/make_demo_set.py's rules: `per_group` of each source and label, passages of at
    most `max_words` words, references for every answerable one, one question per passage set
    and label, passages pooled in the corpus under the id hashed from title and text."""
    assert Counter((s.id.split(":")[0], s.answerable) for s in samples) == {
        (source, label): per_group for source in ("clapnq", "squad2") for label in (True, False)}
    assert all(sum(len(p.text.split()) for p in s.passages) <= max_words for s in samples)
    assert all(s.reference_answers for s in samples if s.answerable)
    keys = [(s.answerable, tuple(p.text for p in s.passages)) for s in samples]
    assert len(set(keys)) == len(keys)
    corpus = [json.loads(line) for line in corpus_path.read_text(encoding="utf-8").splitlines()]
    assert all(e["id"] == passage_id(e["source"], e["title"], e["text"]) for e in corpus)
    assert {p.doc_id for s in samples for p in s.passages} == {e["id"] for e in corpus}


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
    assert_real_rows(demo_samples())


def test_the_shipped_set_follows_the_scripts_rules():
    assert_made_by_the_rules(demo_samples(), DEMO_CORPUS)


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


def test_the_script_makes_a_set_by_its_rules_the_same_each_time(python_processes, tmp_path):
    """As a user runs it (a process of its own) and once more in this process: the same
    bytes, a set made by the rules, of real rows."""
    result = subprocess.run(
        [python_processes, "scripts/make_demo_set.py", "--data-dir", str(TEST_DATA),
         "--out", str(tmp_path / "first")],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("160 samples, ")
    make_demo_set(["--data-dir", str(TEST_DATA), "--out", str(tmp_path / "again")])
    for name in ("samples.jsonl", "corpus.jsonl"):
        assert (tmp_path / "first" / name).read_bytes() == (tmp_path / "again" / name).read_bytes()
    made = demo_samples(tmp_path / "first" / "samples.jsonl")
    assert_made_by_the_rules(made, tmp_path / "first" / "corpus.jsonl")
    assert_real_rows(made)
    assert {s.id for s in made} != {s.id for s in demo_samples()}  # another pool, another pick


def test_the_script_asks_for_the_public_sets(capsys):
    with pytest.raises(SystemExit) as raised:
        make_demo_set(["--out", "unused"])
    assert raised.value.code == 2
    error = capsys.readouterr().err
    assert "--data-dir is required" in error and "clapnq_dev.jsonl" in error


def test_ensure_demo_dataset_loads_it_once(store):
    assert ensure_demo_dataset(store) is True
    assert ensure_demo_dataset(store) is False
    count = len(demo_samples())
    assert list_datasets(store) == [
        DatasetSummary("demo", count, count // 2, count // 2, 0)]
