"""The optional LLM grader (METHODS 2): reading its replies tolerantly, refusals without a
call, agreement with the rules (Cohen's kappa by hand), rescuing a correct answer the rules
miss in a stored run, the call cache serving repeated grades, the CLI flags, and one real
grading with the embedded model."""

from __future__ import annotations

import json
import math

import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from ragshield.cli.app import app
from ragshield.evaluation import run_tables
from ragshield.grading import LLMGrader, grader_messages, parse_grade, rule_llm_agreement
from ragshield.llm.call_cache import CachedLLM
from ragshield.pipeline import RunModels, execute_run, start_run
from ragshield.reports.build import write_report
from ragshield.run_config import RunConfig
from ragshield.store.models import LLMCallRow
from ragshield.store.sample_import import import_samples
from ragshield.types import Passage, Sample
from tests.fakes import ScriptedLLM

# -- reading the grader's reply ------------------------------------------------------------


@pytest.mark.parametrize("reply, expected", [
    ('{"accurate": true}', True),
    ('{"accurate": false}', False),
    ('```json\n{"accurate": true}\n```', True),
    ('```\n{ "accurate" : false }\n```', False),
    ('Here is my grade: {"accurate": true}. The prediction names the same city.', True),
    ('{"accurate": True}', True),  # Python-style, not JSON
    ('{"Accurate": "FALSE"}', False),
    ('accurate: TRUE', True),
    ("Yes", True),
    ("no.", False),
    ("True", True),
    ("FALSE", False),
])
def test_replies_are_read_tolerantly(reply, expected):
    assert parse_grade(reply) == (expected, None)


@pytest.mark.parametrize("reply", [
    "", "   ", None, "The prediction seems related to the reference.", "{broken json",
    '{"accurate": true|false}',  # the template echoed back
    '{"accurate": true} or {"accurate": false}',  # both values
    '{"score": 1}',
])
def test_unreadable_replies_give_none_with_a_reason(reply):
    accurate, error = parse_grade(reply)
    assert accurate is None and error


def test_unreadable_reply_keeps_the_raw_text_and_never_raises():
    grader = LLMGrader(ScriptedLLM(["I am not able to decide that."]))
    result = grader.grade("Q?", "Paris", ["Paris"])
    assert result.accurate is None and result.parse_error and result.called
    assert result.raw == "I am not able to decide that."


def test_a_refusal_is_never_accurate_and_costs_no_call():
    llm = ScriptedLLM()  # any call would fail: nothing is scripted
    grader = LLMGrader(llm)
    for refusal in ("I don't know", "__DONT_KNOW__", "", "..."):
        result = grader.grade("What is the capital of France?", refusal, ["Paris"])
        assert result.accurate is False and not result.called
    assert llm.seen == []


def test_the_request_is_deterministic_at_temperature_zero():
    llm = ScriptedLLM(['{"accurate": true}'] * 2)
    grader = LLMGrader(llm)
    grader.grade("Who?", "Bob", ["Robert", "Bob Smith"])
    grader.grade("Who?", "Bob", ["Robert", "Bob Smith"])
    assert llm.seen[0] == llm.seen[1] == grader_messages("Who?", "Bob", ["Robert", "Bob Smith"])
    content = llm.seen[0][-1]["content"]
    assert content.index("Robert") < content.index("Bob Smith")  # references in given order
    assert all(p["temperature"] == 0.0 and p["max_tokens"] <= 32 for p in llm.params)


# -- agreement of rules and grader ---------------------------------------------------------


def test_agreement_and_kappa_on_a_hand_computed_table():
    # 2x2: both 4, rule only 1, llm only 2, neither 3; n = 10
    rule = [True] * 4 + [True] + [False] * 2 + [False] * 3
    llm = [True] * 4 + [False] + [True] * 2 + [False] * 3
    result = rule_llm_agreement(rule + [True], llm + [None])  # None pairs are left out
    assert result["n"] == 10
    assert result["counts"] == {"rule_and_llm": 4, "rule_only": 1, "llm_only": 2, "neither": 3}
    assert result["agreement"] == pytest.approx(0.7)
    # p_e = (5 * 6 + 5 * 4) / 100 = 0.5 -> kappa = (0.7 - 0.5) / 0.5
    assert result["kappa"] == pytest.approx(0.4)


def test_kappa_edge_cases():
    perfect = rule_llm_agreement([True, False, True], [True, False, True])
    assert perfect["agreement"] == 1.0 and perfect["kappa"] == pytest.approx(1.0)
    opposite = rule_llm_agreement([True, False], [False, True])
    assert opposite["agreement"] == 0.0 and opposite["kappa"] == pytest.approx(-1.0)
    # both always say the same single value: p_o = p_e = 1, kappa 0/0 -> None
    constant = rule_llm_agreement([False] * 3, [False] * 3)
    assert constant["agreement"] == 1.0 and constant["kappa"] is None
    # one rater constant, the other not: p_e = p_o -> kappa 0
    assert rule_llm_agreement([True, True], [True, False])["kappa"] == pytest.approx(0.0)
    empty = rule_llm_agreement([True], [None])
    assert empty == {"n": 0, "agreement": None, "kappa": None,
                     "counts": {"rule_and_llm": 0, "rule_only": 0, "llm_only": 0, "neither": 0}}
    with pytest.raises(ValueError, match="length"):
        rule_llm_agreement([True], [])


# -- a stored run graded by a scripted grader ----------------------------------------------

DATASET = "grading-toy"
CASES = [  # question, reference, the scripted model's answer
    ("Which city is called the Big Apple?", "New York City", "NYC"),
    ("What is the capital of France?", "Paris", "Paris"),
    ("What is the capital of Germany?", "Berlin", "Munich"),
    ("What is the capital of Atlantis?", "Poseidonis", "I don't know"),
]
GRADES = {"NYC": '{"accurate": true}', "Paris": 'Sure.\n```json\n{"accurate": TRUE}\n```',
          "Munich": '{"accurate": false}'}


def answer(messages) -> str:
    prompt = " ".join(m["content"] for m in messages)
    return next(a for q, _, a in CASES if q in prompt)


def grade(messages) -> str:
    prediction = messages[-1]["content"].split("Predicted answer: ")[1].split("\n")[0]
    return GRADES[prediction]


def llm_rows(store) -> int:
    with store.session() as session:
        return session.scalar(select(func.count()).select_from(LLMCallRow))


@pytest.fixture
def run_id(store, settings):
    import_samples(store, DATASET, [
        Sample(id=f"g{i}", question=q, passages=[Passage(text=f"The answer is {ref}.")],
               reference_answers=[ref]) for i, (q, ref, _) in enumerate(CASES)])
    run = start_run(store, RunConfig(dataset=DATASET, judges=["trivial"], rule="trivial",
                                     fallback=True))
    execute_run(store, run, settings, models=RunModels(main=ScriptedLLM(respond=answer)),
                progress=False)
    return run


def test_the_grader_rescues_an_answer_the_rules_miss(store, run_id):
    plain = run_tables(store, run_id).samples.set_index("sample_id")
    assert not plain.loc["g0", "answer_correct"] and not plain.loc["g0", "rule_correct"]
    assert plain["llm_correct"].isna().all() and plain["norag_llm_correct"].isna().all()
    assert run_tables(store, run_id).grader_agreement is None

    grader_llm = ScriptedLLM(respond=grade)
    tables = run_tables(store, run_id, grader=LLMGrader(grader_llm))
    samples = tables.samples.set_index("sample_id")
    assert samples.loc["g3", "refusal"]  # the refusal was never sent to the grader
    assert not any("I don't know" in m[-1]["content"] for m in grader_llm.seen)
    assert list(samples["rule_correct"]) == [False, True, False, False]
    assert list(samples["llm_correct"]) == [True, True, False, False]
    assert list(samples["answer_correct"]) == [True, True, False, False]  # rules OR LLM
    assert list(samples["norag_correct"]) == [True, True, False, False]
    assert list(samples["norag_llm_correct"]) == [True, True, False, False]
    # the verdicts table carries the rescued label too
    verdicts = tables.verdicts.set_index("sample_id")
    assert bool(verdicts.loc["g0", "answer_correct"])
    # main answers, refusal excluded: (rule, llm) = (F, T), (T, T), (F, F)
    agreement = tables.grader_agreement
    assert agreement["n"] == 3 and agreement["agreement"] == pytest.approx(2 / 3)
    assert agreement["counts"] == {"rule_and_llm": 1, "rule_only": 0, "llm_only": 1, "neither": 1}
    # p_e = (1 * 2 + 2 * 1) / 9 = 4/9 -> kappa = (2/3 - 4/9) / (5/9) = 0.4
    assert agreement["kappa"] == pytest.approx(0.4)


def test_a_second_grading_of_the_run_is_served_by_the_call_cache(store, run_id):
    first_inner = ScriptedLLM(respond=grade)
    before = llm_rows(store)
    first = run_tables(store, run_id, grader=LLMGrader(CachedLLM(first_inner, store)))
    # three distinct (question, prediction, references) triples; the No-RAG answers repeat
    # the RAG answers and were already served from the cache
    assert len(first_inner.seen) == 3 and llm_rows(store) == before + 3
    unscripted = ScriptedLLM()  # would fail on any call that reaches the model
    grader = LLMGrader(CachedLLM(unscripted, store))
    second = run_tables(store, run_id, grader=grader)
    assert unscripted.seen == [] and llm_rows(store) == before + 3
    assert second.samples["llm_correct"].tolist() == first.samples["llm_correct"].tolist()
    assert second.grader_agreement == first.grader_agreement
    result = grader.grade(CASES[0][0], "NYC", ["New York City"])
    assert result.cache_hit and result.accurate is True


def test_human_answer_labels_still_win(store, run_id):
    from ragshield.store.models import Annotator, Label, Sample as SampleRow

    with store.session() as session:
        row_id = session.query(SampleRow.id).filter(SampleRow.external_id == "g0").scalar()
        annotator = Annotator(name="a0")
        session.add(annotator)
        session.flush()
        session.add(Label(sample_id=row_id, annotator_id=annotator.id, label="answerable",
                          answer_correct=False))
    human = run_tables(store, run_id, "human", grader=LLMGrader(ScriptedLLM(respond=grade)))
    row = human.samples.set_index("sample_id").loc["g0"]
    assert row["llm_correct"] and row["auto_correct"] and not row["answer_correct"]


def test_report_shows_rules_vs_grader(store, run_id, tmp_path):
    tables = run_tables(store, run_id, grader=LLMGrader(ScriptedLLM(respond=grade)))
    md = write_report(tables, tmp_path / "report", n_resamples=0).markdown.read_text()
    assert "Correctness: rules vs LLM grader" in md
    assert "Correctness: rules vs LLM grader" not in write_report(
        run_tables(store, run_id), tmp_path / "plain", n_resamples=0).markdown.read_text()


# -- the CLI flags -------------------------------------------------------------------------


def test_metrics_cli_with_the_grader(store, store_url, run_id, monkeypatch, tmp_path):
    import ragshield.llm.factory as factory

    monkeypatch.setenv("RAGSHIELD_DATABASE_URL", store_url)
    monkeypatch.setattr(factory, "make_llm",
                        lambda settings, store=None, packaged=None: CachedLLM(
                            ScriptedLLM(respond=grade), store))
    runner = CliRunner()
    result = runner.invoke(app, ["metrics", str(run_id), "--llm-grader", "--json",
                                 "--resamples", "0"])
    assert result.exit_code == 0, result.output
    assert set(json.loads(result.stdout)) == {"trivial"}  # judge -> metrics, nothing else
    line = [x for x in result.stderr.splitlines() if x.startswith("llm grader vs rules: ")]
    assert len(line) == 1
    agreement = json.loads(line[0].removeprefix("llm grader vs rules: "))
    assert agreement["n"] == 3 and math.isclose(agreement["kappa"], 0.4)

    verdicts = tmp_path / "v.jsonl"
    verdicts.write_text("")
    refused = runner.invoke(app, ["metrics", "--verdicts", str(verdicts), "--llm-grader"])
    assert refused.exit_code == 1 and "--llm-grader" in refused.stderr
    assert "not --verdicts" in refused.stderr


# -- the real embedded model ---------------------------------------------------------------


def test_the_embedded_model_grades_obvious_pairs(embedded_llm):
    grader = LLMGrader(embedded_llm)
    results = [grader.grade("What is the capital of France?", "Paris", ["Paris"]),
               grader.grade("Who wrote Hamlet?", "William Shakespeare", ["Shakespeare"]),
               grader.grade("What is the capital of Japan?", "Berlin", ["Tokyo"])]
    for result in results:
        assert isinstance(result.accurate, bool), (result.raw, result.parse_error)
    assert results[0].accurate is True
