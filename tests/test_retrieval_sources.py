"""Named knowledge sources: the LLM router (scripted and the real embedded model) and the fixed
fallback path."""

from __future__ import annotations

import pytest

from ragshield.config import Settings
from ragshield.retrieval.fallback import FallbackRetrieval
from ragshield.retrieval.ingest import IngestOptions, build_corpus
from ragshield.retrieval.sources import KnowledgeSource, SourceRouter, parse_route
from ragshield.retrieval.sparse import BM25Retriever
from tests.fakes import ScriptedLLM
from tests.retrieval_fixtures import DOCUMENTS, write_jsonl


class CountingRetriever:
    def __init__(self, inner):
        self.inner, self.name, self.queries = inner, inner.name, []

    def search(self, query, k):
        self.queries.append(query)
        return self.inner.search(query, k)

    def search_many(self, queries, k):
        return [self.search(q, k) for q in queries]


@pytest.fixture(scope="module")
def sources(tmp_path_factory, embedder) -> tuple[KnowledgeSource, KnowledgeSource]:
    folder = tmp_path_factory.mktemp("sources")
    settings = Settings(corpora_dir=folder / "corpora")
    science = build_corpus("science", [write_jsonl(folder / "s.jsonl", DOCUMENTS[:5])], settings,
                           IngestOptions(description="landmarks, geography, biology and computing"),
                           embedder=embedder)
    everyday = build_corpus("everyday", [write_jsonl(folder / "e.jsonl", DOCUMENTS[5:])], settings,
                            embedder=embedder)
    return (KnowledgeSource.of_corpus(science, CountingRetriever(BM25Retriever(science))),
            KnowledgeSource("everyday", "food, drinks, the human body and space travel",
                            CountingRetriever(BM25Retriever(everyday))))


@pytest.mark.parametrize(
    ("reply", "choice"),
    [("a", "a"), ("B", "b"), ("(a)", "a"), ("b) everyday", "b"), ("A.\nIt is about Paris", "a"),
     ("Answer: b", "b"), ("both", "both"), ("A and B", "both"), ("Both sources.", "both"),
     ("The science source", "a"), ("search everyday things", "b"), ("science and everyday", "both"),
     ("A source is needed", None), ("banana", None), ("", None)],
)
def test_router_replies_are_parsed_tolerantly(reply, choice):
    assert parse_route(reply, ("science", "everyday")) == choice


@pytest.mark.parametrize(
    ("reply", "choice", "searched"),
    [("a", "a", ["science"]), ("b", "b", ["everyday"]), ("Both.", "both", ["science", "everyday"])],
)
def test_router_searches_the_chosen_sources(sources, reply, choice, searched):
    llm = ScriptedLLM(respond=lambda messages: reply)
    route, passages = SourceRouter(llm, *sources).retrieve("Who wrote Python and what is tea?", 2)
    assert route.choice == choice and not route.fell_back and route.reply == reply
    assert [s.name for s in route.sources] == searched
    assert passages and {p.meta["knowledge_source"] for p in passages} == set(searched)
    prompt = llm.seen[0][-1]["content"]
    assert "(a) science: landmarks" in prompt and "(b) everyday: food" in prompt


def test_router_falls_back_to_both_on_garbage_and_records_it(sources):
    llm = ScriptedLLM(respond=lambda messages: "I like turtles")
    route = SourceRouter(llm, *sources).route("Why?")
    assert route.choice == "both" and route.fell_back and route.reply == "I like turtles"
    assert [s.name for s in route.sources] == ["science", "everyday"]


def test_router_with_the_embedded_model_returns_a_valid_choice(sources, embedded_llm):
    route = SourceRouter(embedded_llm, *sources).route("How many times a day does the heart beat?")
    assert route.choice in {"a", "b", "both"} and route.reply.strip()
    assert route.sources


@pytest.mark.parametrize("answer", ["Paris.", "It was completed in 1889."])
def test_fallback_keeps_a_closed_book_answer_without_searching(sources, answer):
    for source in sources:
        source.retriever.queries.clear()
    result = FallbackRetrieval(lambda q: answer, sources).run("When was the Eiffel Tower built?", 2)
    assert result.closed_book_answer == answer and not result.refused and result.passages == []
    assert all(source.retriever.queries == [] for source in sources)


def test_fallback_searches_every_source_after_a_refusal(sources):
    asked = []
    result = FallbackRetrieval(lambda q: asked.append(q) or "__DONT_KNOW__", sources).run(
        "Which board part code did the ZX81 have?", 2)
    assert asked == ["Which board part code did the ZX81 have?"]
    assert result.refused and result.closed_book_answer == "__DONT_KNOW__"
    first = result.passages[0]
    assert first.doc_id == "zx81" and first.meta["knowledge_source"] == "science"
    with pytest.raises(ValueError, match="at least one"):
        FallbackRetrieval(lambda q: "x", [])
