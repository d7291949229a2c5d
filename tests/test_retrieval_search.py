"""BM25, dense (flat, IVF, HNSW), hybrid, RRF and two-stage retrieval, and noise injection, on
a small corpus embedded with the real model."""

from __future__ import annotations

import pytest

from ragshield.config import Settings
from ragshield.retrieval.corpus import Corpus
from ragshield.retrieval.dense import DenseRetriever
from ragshield.retrieval.encoding import Embedder
from ragshield.retrieval.index_config import DenseIndexConfig
from ragshield.retrieval.hybrid import HybridRetriever, merge_by_share, reciprocal_rank_fusion
from ragshield.retrieval.ingest import IngestOptions, build_corpus
from ragshield.retrieval.noise import inject_noise
from ragshield.retrieval.retriever import Hit
from ragshield.retrieval.sparse import BM25Retriever
from ragshield.retrieval.two_stage import TwoStageRetriever
from tests.retrieval_fixtures import DOCUMENTS, write_jsonl

PARAPHRASE = "Which vegetation process converts solar energy into sugar?"  # -> photosynthesis


def build(tmp_path_factory, embedder: Embedder, index: DenseIndexConfig,
          chunk_tokens: int = 200) -> Corpus:
    folder = tmp_path_factory.mktemp("corpus")
    return build_corpus("kb", [write_jsonl(folder / "c.jsonl", DOCUMENTS)],
                        Settings(corpora_dir=folder / "corpora"),
                        IngestOptions(chunk_tokens=chunk_tokens, index=index),
                        embedder=embedder)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, embedder) -> Corpus:
    return build(tmp_path_factory, embedder, DenseIndexConfig())


def ids(passages) -> list[str]:
    return [p.meta["chunk_id"] for p in passages]


def test_bm25_finds_the_document_with_an_exact_rare_keyword(corpus):
    found = BM25Retriever(corpus).search("which board has part code QW7731?", 3)
    assert found[0].doc_id == "zx81" and found[0].score > 0
    expected_meta = {"chunk_id": "zx81#0", "retriever": "bm25", "corpus": "kb"}
    assert expected_meta.items() <= found[0].meta.items()
    assert found[0].text == corpus.chunks[corpus.row_of["zx81#0"]].text


def test_bm25_stems_and_returns_only_matching_chunks(corpus):
    found = BM25Retriever(corpus).search("designing towers", 5)
    # "designing" matches "designed" (Eiffel) and "design" (Python); "towers" only Eiffel.
    assert ids(found) == ["eiffel#0", "python#0"]
    assert BM25Retriever(corpus).search("the of and", 5) == []  # stop words only


def test_dense_finds_a_paraphrase_that_bm25_misses(corpus, embedder):
    dense = DenseRetriever(corpus, embedder).search(PARAPHRASE, 3)
    assert dense[0].doc_id == "photosynthesis"
    assert dense[0].score > dense[1].score and -1 <= dense[-1].score <= 1
    assert "photosynthesis#0" not in ids(BM25Retriever(corpus).search(PARAPHRASE, 3))


def test_queries_are_embedded_in_one_batch(corpus, recording_embedder):
    recording, recorder = recording_embedder
    queries = [PARAPHRASE, "first people on the moon", "highest peak"]
    results = DenseRetriever(corpus, recording).search_many(queries, 2)
    assert recorder.batches == [queries]
    assert [r[0].doc_id for r in results] == ["photosynthesis", "apollo", "everest"]


def hits(*rows: int, via: str) -> list[Hit]:
    return [Hit(row, 1.0 / (i + 1), via) for i, row in enumerate(rows)]


@pytest.mark.parametrize(
    ("alpha", "k", "expected"),
    [
        (0.5, 4, [1, 2, 3, 5]),  # 2 dense, then BM25 minus duplicates
        (0.25, 4, [1, 3, 5, 6]),
        (0.5, 3, [1, 2, 3]),  # 1.5 dense rounds up to 2
        (1.0, 4, [1, 2, 3, 4]),
        (0.0, 4, [3, 5, 6, 1]),
    ],
)
def test_dense_share_merge_by_hand(alpha, k, expected):
    merged = merge_by_share(hits(1, 2, 3, 4, via="dense"), hits(3, 5, 6, 1, via="bm25"), k, alpha)
    assert [h.row for h in merged] == expected


def test_dense_share_fills_from_dense_when_bm25_runs_short():
    merged = merge_by_share(hits(1, 2, 3, 4, via="dense"), hits(2, via="bm25"), 4, 0.25)
    expected = [(1, "dense"), (2, "bm25"), (3, "dense"), (4, "dense")]
    assert [(h.row, h.via) for h in merged] == expected


def test_reciprocal_rank_fusion_by_hand():
    fused = reciprocal_rank_fusion([hits(1, 2, 3, via="dense"), hits(3, 1, 4, via="bm25")], k=3)
    assert [h.row for h in fused] == [1, 3, 2]
    assert fused[0].score == pytest.approx(1 / 61 + 1 / 62)
    assert fused[1].score == pytest.approx(1 / 63 + 1 / 61)
    assert fused[2].score == pytest.approx(1 / 62)
    assert fused[0].via == "dense+bm25" and fused[2].via == "dense"
    tie = reciprocal_rank_fusion([hits(7, via="dense"), hits(8, via="bm25")], k=2)
    assert [h.row for h in tie] == [7, 8]  # equal scores: the first ranking wins


def test_hybrid_retrievers_merge_real_rankings(corpus, embedder):
    dense, sparse = DenseRetriever(corpus, embedder), BM25Retriever(corpus)
    query = "coffee and tea plants grown in tropical regions"
    d, s = dense.rank_many([query], 4)[0], sparse.rank_many([query], 4)[0]
    share = HybridRetriever(dense, sparse, alpha=0.5).search(query, 4)
    assert ids(share) == [corpus.chunks[h.row].id for h in merge_by_share(d, s, 4, 0.5)]
    assert len(set(ids(share))) == 4 and {p.meta["retriever"] for p in share} == {"hybrid"}
    rrf = HybridRetriever(dense, sparse, fusion="rrf").search(query, 3)
    deep = [dense.rank_many([query], 50)[0], sparse.rank_many([query], 50)[0]]
    expected = reciprocal_rank_fusion(deep, 3)
    assert ids(rrf) == [corpus.chunks[h.row].id for h in expected]
    with pytest.raises(ValueError, match="between 0 and 1"):
        HybridRetriever(dense, sparse, alpha=1.5)


@pytest.mark.parametrize("focus", ["dense", "hybrid", "rrf"])
def test_two_stage_returns_a_subset_of_the_broad_stage(corpus, focus, embedder,
                                                       recording_embedder):
    recording, recorder = recording_embedder
    query = "which drink is brewed from plants grown in tropical regions"
    broad = BM25Retriever(corpus).search(query, 3)
    retriever = TwoStageRetriever(BM25Retriever(corpus), recording, broad_k=3, focus=focus)
    focused = retriever.search(query, 2)
    assert len(focused) == 2 and set(ids(focused)) <= set(ids(broad))
    assert recorder.batches == [[query]]  # candidates come from the stored embeddings
    if focus == "dense":
        full = DenseRetriever(corpus, embedder).search(query, len(corpus))
        assert ids(focused) == [i for i in ids(full) if i in ids(broad)][:2]
    assert retriever.search("the of and", 2) == []  # no BM25 candidates, nothing to focus on


def test_ivf_and_hnsw_agree_with_flat_on_a_small_corpus(tmp_path_factory, corpus, embedder):
    queries = [PARAPHRASE, "first people on the moon", "a hot drink", "lava and ash",
               "who made a programming language", "mountain between Nepal and China"]
    flat = DenseRetriever(corpus, embedder).search_many(queries, 5)
    for config in (DenseIndexConfig(kind="ivf"), DenseIndexConfig(kind="hnsw", hnsw_m=8)):
        approximate = build(tmp_path_factory, embedder, config)
        found = DenseRetriever(approximate, embedder).search_many(queries, 5)
        assert [ids(r) for r in found] == [ids(r) for r in flat], config.kind
        flat_scores = [p.score for r in flat for p in r]
        assert [p.score for r in found for p in r] == pytest.approx(flat_scores, abs=1e-5)
    assert approximate.manifest.index.kind == "hnsw"


def test_ivf_probes_only_nprobe_lists(tmp_path_factory, embedder):
    config = DenseIndexConfig(kind="ivf", nlist=5, nprobe=5)
    corpus = build(tmp_path_factory, embedder, config, chunk_tokens=8)
    assert corpus.manifest.index.nlist == 5
    everything = DenseRetriever(corpus, embedder).search("drinks", len(corpus))
    one_list = DenseRetriever(corpus, embedder, nprobe=1).search("drinks", len(corpus))
    assert len(everything) == len(corpus) > len(one_list) > 0


def test_noise_chunks_are_counted_seeded_marked_and_distinct(corpus, embedder):
    retrieved = DenseRetriever(corpus, embedder).search("a hot drink", 3)
    noisy = inject_noise(retrieved, corpus, 4, seed=7)
    assert noisy[:3] == retrieved and len(noisy) == 7
    noise = noisy[3:]
    assert all(p.meta["noise"] is True and p.score is None for p in noise)
    assert not any(p.meta.get("noise") for p in retrieved)
    assert len(set(ids(noisy))) == 7  # no noise chunk repeats a retrieved one or another
    assert inject_noise(retrieved, corpus, 4, seed=7) == noisy
    assert ids(inject_noise(retrieved, corpus, 4, seed=8)) != ids(noisy)
    assert len(inject_noise(retrieved, corpus, len(corpus) - 3, seed=1)) == len(corpus)
    with pytest.raises(ValueError, match="only 7 chunks besides"):
        inject_noise(retrieved, corpus, 8, seed=1)
    with pytest.raises(ValueError, match="negative"):
        inject_noise(retrieved, corpus, -1, seed=1)


def test_k_must_be_positive(corpus):
    with pytest.raises(ValueError, match="k must be at least 1"):
        BM25Retriever(corpus).search("coffee", 0)
