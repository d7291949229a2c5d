"""CRAG task-1 JSONL (often .bz2): {interaction_id, query, answer, alternative_answers,
search_results: [{page_name, page_url, page_snippet, page_result (HTML), page_last_modified}],
domain, question_type, static_or_dynamic, query_time}.

Each page becomes one Markdown passage (chunking is retrieval's job); a page without text falls
back to its snippet and is left out when that is empty too (meta["page_index"] keeps the
original rank). False-premise questions have the reference answer "invalid question" (CRAG's
scoring); the annotator's explanation stays in meta["original_answer"]. Whether the pages hold
the answer is not known, so samples are unlabelled.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, Iterator

from ragshield import strict_json
from ragshield.datasets.loader_spec import LoaderSpec, LocatedSample
from ragshield.datasets.reading import iter_json_lines
from ragshield.datasets.records import Record, unique
from ragshield.html_to_markdown import html_to_markdown
from ragshield.types import Passage, Sample

META_FIELDS = ("domain", "question_type", "static_or_dynamic", "query_time")
FALSE_PREMISE_ANSWER = "invalid question"
MISSING_ANSWER = "nan"  # how CRAG's export writes an answer it does not have


def sniff(first: Any) -> bool:
    return isinstance(first, dict) and {"interaction_id", "query"} <= first.keys()


def _alternative_answers(record: Record) -> list[str]:
    """A list of strings, or its repr as a string (CRAG writes both)."""
    value = record.data.get("alternative_answers")
    if isinstance(value, str):
        try:
            value = strict_json.loads(value)
        except ValueError:  # not strict JSON: maybe a Python repr, checked below as any value
            try:
                value = ast.literal_eval(value)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                raise record.error("alternative_answers", "expected a list of strings") from None
    is_list = isinstance(value, list) and all(isinstance(v, str) for v in value)
    if value is not None and not is_list:
        raise record.error("alternative_answers", "expected a list of strings")
    return value or []


def _page_passage(page: Record, index: int, markdown: dict[str, str]) -> Passage | None:
    """`markdown` caches conversions: a record often lists the same page twice."""
    def converted(html: str) -> str:
        if html not in markdown:
            markdown[html] = html_to_markdown(html)
        return markdown[html]

    text = converted(page.optional_text("page_result") or "")
    from_snippet = not text
    if from_snippet:
        text = converted(page.optional_text("page_snippet") or "")
    if not text:
        return None
    meta: dict[str, Any] = {"page_index": index, "from_snippet": from_snippet}
    last_modified = (page.optional_text("page_last_modified") or "").strip()
    if last_modified:
        meta["last_modified"] = last_modified
    return Passage(text=text, title=page.optional_text("page_name"),
                   doc_id=page.optional_text("page_url"), meta=meta)


def read(path: Path) -> Iterator[LocatedSample]:
    for number, value in iter_json_lines(path):
        where = f"line {number}"
        record = Record(value, path, where)
        meta: dict[str, Any] = {key: record.text(key) for key in META_FIELDS if record.has(key)}
        answer = record.optional_text("answer")
        if meta.get("question_type") == "false_premise":
            answers = [FALSE_PREMISE_ANSWER]
            if answer is not None:
                meta["original_answer"] = answer
        else:
            given = [answer] if answer is not None else []
            answers = [a for a in given + _alternative_answers(record)
                       if a.strip() and a.strip() != MISSING_ANSWER]
        markdown: dict[str, str] = {}
        passages = [
            passage for index, page in enumerate(record.records("search_results"))
            if (passage := _page_passage(page, index, markdown)) is not None
        ]
        yield where, Sample(
            id=record.identifier("interaction_id"),
            question=record.text("query"),
            passages=passages,
            reference_answers=unique(answers),
            meta=meta,
        )


SPEC = LoaderSpec(
    name="crag",
    description="CRAG task-1 JSONL (.bz2 too); HTML pages become Markdown passages",
    read=read,
    sniff=sniff,
    license="CC BY-NC 4.0",
)
