"""Numbers that mean nothing (NaN, Infinity) are stored and exported as absent: a caller of
the Python front door, a judge or an upstream can hand them over, and `runs export` must write
JSON that strict parsers read (json.dumps writes NaN, which they refuse; PostgreSQL's JSON
columns refuse it outright)."""

from __future__ import annotations

import lzma
import math
from pathlib import Path

import pytest
from sqlalchemy import select, text

from ragshield import strict_json
from ragshield.answerers.given import GivenAnswerer
from ragshield.errors import UserError
from ragshield.services.data.run_bundles import export_run
from ragshield.services.questions.live_runs import LIVE_DATASET
from ragshield.store import runs as run_store
from ragshield.store.database import Store
from ragshield.store.models import AnswerRow, VerdictRow
from ragshield.store.models import Passage as PassageRow
from ragshield.store.models import Sample as SampleRow
from ragshield.store.runs import MAIN, RoleAnswer
from ragshield.store.sample_import import ensure_sample
from ragshield.types import GivenAnswer, Passage, Sample, TokenLogprob, Verdict

NAN, INF = math.nan, math.inf


def test_non_finite_numbers_are_stored_and_exported_as_absent(store: Store,
                                                              tmp_path: Path) -> None:
    given = GivenAnswer("The Normans", tokens=[TokenLogprob("The", -INF),
                                               TokenLogprob(" Normans", -0.1)])
    passages = [Passage("The Normans gave their name to Normandy.", score=NAN),
                Passage("Rollo was a Viking.", score=INF)]
    sample = Sample(id="q-1", question="Who?", passages=passages, given_answer=given,
                    meta={"weights": [1.0, -INF]})
    row_id = ensure_sample(store, LIVE_DATASET, sample)
    answer = GivenAnswerer().answer(sample, None)  # type: ignore[arg-type]  # calls no model
    run_id = run_store.create_run(store, dataset=LIVE_DATASET, config={"threshold": NAN},
                                  seed=0, code_version="test", samples_total=0)
    verdicts = [Verdict("token_prob", keep=False, score=NAN,
                        details={"mean_logprob": -INF, "tokens": 2}),
                Verdict("trivial", keep=True, score=INF)]
    assert run_store.add_live_sample(store, run_id, row_id,
                                     {MAIN: RoleAnswer(answer, None, passages)}, verdicts)
    with store.session() as session:
        scores = session.scalars(select(VerdictRow.score).order_by(VerdictRow.id)).all()
        details = session.scalar(select(VerdictRow.details).order_by(VerdictRow.id).limit(1))
        passage_scores = session.scalars(select(PassageRow.score)
                                         .order_by(PassageRow.position)).all()
        stored = session.scalar(select(SampleRow))
        shown = session.scalar(select(AnswerRow.passages))
        trace = session.scalar(select(AnswerRow.trace))
    assert scores == [None, None] and details == {"mean_logprob": None, "tokens": 2}
    assert passage_scores == [None, None] and [p["score"] for p in shown] == [None, None]
    assert stored.meta == {"weights": [1.0, None]}
    assert [t["logprob"] for t in stored.given_answer["tokens"]] == [None, -0.1]
    assert trace[0]["logprobs"][0]["logprob"] is None

    (tmp_path / "a-file").write_text("")
    for under_a_file in (tmp_path / "a-file" / "run.json.xz",
                         tmp_path / "a-file" / "sub" / "run.json.xz"):
        with pytest.raises(UserError, match=f"cannot write {under_a_file}"):
            export_run(store, run_id, under_a_file)  # a traceback before
    path = export_run(store, run_id, tmp_path / "run.json.xz")
    with lzma.open(path, "rt", encoding="utf-8") as handle:
        bundle = strict_json.loads(handle.read())  # refuses NaN and Infinity
    assert bundle["run"]["config"] == {"threshold": None}
    assert [v["score"] for v in bundle["answers"][0]["verdicts"]] == [None, None]
    if store.engine.dialect.name == "sqlite":  # a NaN an older version stored is exported too
        with store.session() as session:
            session.execute(text("UPDATE verdicts SET details = '{\"mean\": NaN}'"))
        with lzma.open(export_run(store, run_id, path), "rt", encoding="utf-8") as handle:
            verdict = strict_json.loads(handle.read())["answers"][0]["verdicts"][0]
        assert verdict["details"] == {"mean": None}


def test_strict_dumps_writes_null_for_non_finite_numbers() -> None:
    value = {"a": [1.5, NAN, {"b": -INF}], "c": (INF,), "d": "NaN"}
    assert strict_json.loads(strict_json.dumps(value)) == {
        "a": [1.5, None, {"b": None}], "c": [None], "d": "NaN"}
    assert strict_json.dumps({"x": 1}, sort_keys=True) == '{"x": 1}'

