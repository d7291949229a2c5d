"""A synthetic run in a real store, made fast (bulk inserts, no model): for the UI tests and
scripts/bench_ui.py. Every 10th sample gets a human label."""

from __future__ import annotations

import random
from typing import Any, Sequence

from sqlalchemy import insert, select

from ragshield.metrics.judge_disagreement import disagreement
from ragshield.run_config import RunConfig
from ragshield.store.database import Store
from ragshield.store.labels import add_annotator
from ragshield.store.models import AnswerRow, Label, Run, VerdictRow, utcnow
from ragshield.store.models import Sample as SampleRow
from ragshield.store.sample_import import import_samples
from ragshield.store.samples import dataset_id_of, has_dataset
from ragshield.types import Passage, Sample

LABELLED_EVERY = 10
ANNOTATOR = "synthetic-annotator"


def _dataset_name(store: Store, n_samples: int, n_judges: int, seed: int) -> str:
    base = f"synthetic-{n_samples}x{n_judges}-seed{seed}"
    name, number = base, 1
    while has_dataset(store, name):
        number += 1
        name = f"{base}-{number}"
    return name


def _samples(n_samples: int, rng: random.Random) -> list[Sample]:
    samples = []
    for i in range(n_samples):
        answerable = rng.random() < 0.6
        fact = (f"The answer to question {i} is word{i}." if answerable
                else f"Passage {i} talks about something else entirely.")
        samples.append(Sample(
            id=f"syn-{i:06d}", question=f"Synthetic question {i}: what is thing {i}?",
            passages=[Passage(text=fact, doc_id=f"doc-{i}-0"),
                      Passage(text=f"Filler text {rng.random():.6f}.", doc_id=f"doc-{i}-1")],
            reference_answers=[f"word{i}"], answerable=answerable,
            meta={"domain": rng.choice(["science", "history", "sports"])}))
    return samples


def _call(purpose: str, question: str, output: str) -> dict[str, Any]:
    return {"purpose": purpose, "messages": [{"role": "user", "content": question}],
            "output": output, "parsed": output, "prompt_tokens": 40, "completion_tokens": 3,
            "cached_prompt_tokens": 30, "cache_hit": False, "seconds": 0.01, "kind": "chat",
            "logprobs": None, "parse_error": None}


def _answer_text(i: int, rng: random.Random) -> str:
    draw = rng.random()
    return f"word{i}" if draw < 0.55 else "I don't know" if draw < 0.65 else f"other{i}"


def _answer_row(run_id: int, row_id: int, sample: Sample, text: str,
                keeps: list[bool | None]) -> dict[str, Any]:
    raw = f"Answer: {text}\nEvidence: ## Passage-0 ##"
    return {"run_id": run_id, "sample_id": row_id, "role": "main", "answerer": "evidence",
            "model": "synthetic", "text": text, "raw": raw, "evidence": [0],
            "refusal": text == "I don't know",
            "passages": [{"text": p.text, "title": None, "doc_id": p.doc_id, "score": None,
                          "meta": {}} for p in sample.passages],
            "messages": [{"role": "user", "content": sample.question}],
            "trace": [_call("base answer", sample.question, raw)],
            "disagreement": disagreement(keeps), "prompt_tokens": 40, "completion_tokens": 8,
            "seconds": 0.02}


def _verdict_row(answer_id: int, sample: Sample, judge: str, keep: bool | None,
                 rng: random.Random) -> dict[str, Any]:
    return {"answer_id": answer_id, "judge": judge, "keep": keep,
            "score": None if keep is None else rng.random(),
            "rationale": f"synthetic verdict of {judge}", "available": True,
            "details": {"synthetic": True},
            "trace": [_call(judge, sample.question, "yes" if keep else "no")],
            "calls": 1, "prompt_tokens": 40, "completion_tokens": 1, "seconds": 0.01}


def fill_synthetic_run(store: Store, n_samples: int, judges: Sequence[str], seed: int) -> int:
    """A finished run of `n_samples` (at least 1) samples x `judges` (verdicts drawn at
    random, about 5% undecided; rule "majority") on a new synthetic dataset; returns the
    run id."""
    rng = random.Random(seed)
    judges = list(judges)
    name = _dataset_name(store, n_samples, len(judges), seed)
    samples = _samples(n_samples, rng)
    import_samples(store, name, samples)
    config = RunConfig(dataset=name, judges=judges, rule="majority", seed=seed).to_dict()
    annotator_id = add_annotator(store, ANNOTATOR)
    with store.session() as session:
        dataset_id = dataset_id_of(session, name)
        run = Run(name=f"synthetic {n_samples}x{len(judges)}", dataset_id=dataset_id,
                  config=config, code_version="synthetic", seed=seed, status="done",
                  samples_total=n_samples, finished_at=utcnow())
        session.add(run)
        session.flush()
        row_ids = dict(session.execute(select(SampleRow.external_id, SampleRow.id)
                                       .where(SampleRow.dataset_id == dataset_id)).tuples().all())
        keeps = [[None if rng.random() < 0.05 else rng.random() < 0.6 for _ in judges]
                 for _ in samples]
        session.execute(insert(AnswerRow), [
            _answer_row(run.id, row_ids[sample.id], sample, _answer_text(i, rng), sample_keeps)
            for i, (sample, sample_keeps) in enumerate(zip(samples, keeps))])
        answer_ids = dict(session.execute(select(AnswerRow.sample_id, AnswerRow.id)
                                          .where(AnswerRow.run_id == run.id)).tuples().all())
        if judges:
            session.execute(insert(VerdictRow), [
                _verdict_row(answer_ids[row_ids[sample.id]], sample, judge, keep, rng)
                for sample, sample_keeps in zip(samples, keeps)
                for judge, keep in zip(judges, sample_keeps)])
        session.execute(insert(Label), [
            {"sample_id": row_ids[sample.id], "annotator_id": annotator_id,
             "answer_id": answer_ids[row_ids[sample.id]],
             "label": rng.choice(["answerable", "unanswerable"]),
             "answer_correct": rng.random() < 0.5, "passages_shown": []}
            for sample in samples[::LABELLED_EVERY]])
        return run.id
