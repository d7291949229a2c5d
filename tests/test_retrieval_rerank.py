"""Reranking by embedding similarity (real model), by the LLM (scripted) and by a tiny
cross-encoder built from a config in the test."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from ragshield.config import Settings
from ragshield.retrieval.embeddings import packaged_embedding_path
from ragshield.retrieval.ingest import build_corpus
from ragshield.retrieval.llm_rerank import LLMReranker, parse_rating
from ragshield.retrieval.rerank import CrossEncoderReranker, EmbeddingReranker, RerankingRetriever
from ragshield.retrieval.sparse import BM25Retriever
from ragshield.types import Passage
from tests.fakes import ScriptedLLM
from tests.retrieval_fixtures import DOCUMENTS, write_jsonl

PASSAGES = [Passage(text=d["text"], doc_id=d["id"], score=float(-i), meta={"chunk_id": d["id"]})
            for i, d in enumerate(DOCUMENTS[:5])]


def test_embedding_reranker_orders_by_cosine_similarity(embedder):
    query = "who invented a programming language?"
    reranked = EmbeddingReranker(embedder).rerank(query, PASSAGES)
    vectors = embedder.encode([query, *(p.text for p in PASSAGES)])
    expected = np.argsort(-(vectors[1:] @ vectors[0]), kind="stable")
    assert [p.doc_id for p in reranked] == [PASSAGES[i].doc_id for i in expected]
    assert reranked[0].doc_id == "python"
    scores = [p.meta["rerank_score"] for p in reranked]
    assert scores == sorted(scores, reverse=True)
    assert reranked[0].score == PASSAGES[expected[0]].score  # the retrieval score is kept
    assert reranked[0].meta["reranker"] == "embedding:all-MiniLM-L6-v2 (packaged)"
    assert "rerank_score" not in PASSAGES[0].meta  # the input passages are left alone


@pytest.mark.parametrize(
    ("reply", "rating"),
    [("8", 8.0), ("Rating: 8/10", 8.0), ("7 out of 10.", 7.0), ("**6**", 6.0),
     ("I'd say 4.5.", 4.5), ("10", 10.0), ("0", 0.0), ("Relevance (0-10): 2", 2.0),
     ("85", None), ("none", None), ("", None)],
)
def test_llm_ratings_are_parsed_tolerantly(reply, rating):
    assert parse_rating(reply) == rating


def test_llm_reranker_sorts_rated_passages_and_leaves_unparsed_ones_in_place():
    replies = {"eiffel": "3", "everest": "Rating: 9/10", "photosynthesis": "no idea",
               "python": "**7**", "zx81": "0-10 scale: 10"}
    llm = ScriptedLLM(respond=lambda messages: next(r for doc_id, r in replies.items()
                                            if _text_of(doc_id) in messages[-1]["content"]))
    reranked = LLMReranker(llm).rerank("Which mountain is highest?", PASSAGES)
    assert [p.doc_id for p in reranked] == ["zx81", "everest", "photosynthesis", "python", "eiffel"]
    kept = reranked[2]
    assert kept.meta["rerank_unparsed"] is True and kept.meta["rerank_score"] is None
    assert kept.meta["rerank_raw"] == "no idea"
    assert [p.meta["rerank_score"] for p in reranked if p is not kept] == [10, 9, 7, 3]
    assert len(llm.seen) == 5
    prompt = llm.seen[0][-1]["content"]
    assert prompt.startswith("Question: Which mountain is highest?")
    assert "0 (unrelated) to 10" in prompt


def _text_of(doc_id: str) -> str:
    return next(d["text"] for d in DOCUMENTS if d["id"] == doc_id)


def test_reranking_retriever_reranks_top_n_and_keeps_k(tmp_path, embedder):
    corpus = build_corpus("kb", [write_jsonl(tmp_path / "c.jsonl", DOCUMENTS)],
                          Settings(corpora_dir=tmp_path / "corpora"), embedder=embedder)
    query = "coffee tea drink plant tropical regions"
    candidates = BM25Retriever(corpus).search(query, 4)
    llm = ScriptedLLM(
        respond=lambda messages: "9" if "hot water" in messages[-1]["content"] else "1")
    retriever = RerankingRetriever(BM25Retriever(corpus), LLMReranker(llm), top_n=4)
    best = retriever.search(query, 2)
    assert len(llm.seen) == len(candidates) and len(best) == 2
    assert best[0].doc_id == "tea" and best[0].meta["retriever"] == "bm25"
    assert retriever.name == "bm25+rerank"


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory):
    """A one-layer BERT relevance model with random weights and the MiniLM tokenizer."""
    import torch
    from sentence_transformers import CrossEncoder
    from transformers import BertConfig, BertForSequenceClassification

    folder = tmp_path_factory.mktemp("cross-encoder")
    torch.manual_seed(0)
    config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=64, num_labels=1)
    BertForSequenceClassification(config).save_pretrained(folder)
    for name in ("tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(packaged_embedding_path() / name, folder / name)
    return CrossEncoder(str(folder))


def test_cross_encoder_reranker_orders_by_the_model_scores(tiny_cross_encoder):
    query = "highest mountain"
    reranked = CrossEncoderReranker(tiny_cross_encoder).rerank(query, PASSAGES)
    scores = tiny_cross_encoder.predict([(query, p.text) for p in PASSAGES])
    order = np.argsort(-scores, kind="stable")
    assert [p.doc_id for p in reranked] == [PASSAGES[i].doc_id for i in order]
    assert [p.meta["rerank_score"] for p in reranked] == pytest.approx(sorted(scores, reverse=True))
    assert CrossEncoderReranker(tiny_cross_encoder).rerank(query, []) == []


def test_cross_encoder_with_several_outputs_is_refused():
    class ThreeLabels:
        def predict(self, pairs, **options):
            return np.zeros((len(pairs), 3))

    with pytest.raises(ValueError, match="3 scores per pair"):
        CrossEncoderReranker(ThreeLabels()).rerank("q", PASSAGES)
