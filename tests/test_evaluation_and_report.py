"""From a stored run to metric tables and a report, with a scripted model: correctness and
support labels, human labels winning under truth "human", the dual-generation percentile
scores, and the report's files (escaped HTML, real PNGs)."""

from __future__ import annotations

import json

import numpy as np

import pytest

from ragshield.evaluation import run_tables
from ragshield.metrics.summary import judge_metrics
from ragshield.pipeline import RunModels, execute_run, start_run
from ragshield.reports.build import write_report
from ragshield.reports.render import table_markdown
from ragshield.run_config import RunConfig
from ragshield.store.models import Annotator, Label, Sample as SampleRow
from ragshield.store.sample_import import import_samples
from ragshield.types import Passage, Sample, Table
from tests.fakes import ScriptedLLM, ScriptedReply

DATASET = "<b>toy</b>"


def sample(i: int) -> Sample:
    # Even samples: the passage names the city and the dataset says answerable.
    # Odd samples: the passage is about something else.
    text = f"The capital of Land{i} is City{i}." if i % 2 == 0 else "Rivers flow to the sea."
    return Sample(id=f"s{i}", question=f"What is the capital of Land{i}?",
                  passages=[Passage(text=text)], reference_answers=[f"City{i}"],
                  answerable=None, meta={"domain": "geo" if i < 4 else "misc"})


def respond(messages) -> ScriptedReply:
    """Right for samples 0, 1, 2; wrong for the rest. P(yes) high for samples 0, 2, 4."""
    prompt = " ".join(m["content"] for m in messages)
    i = next(i for i in range(8) if f"Land{i}?" in prompt)
    if "yes" not in messages[-1]["content"].lower():  # an answer prompt, not p_true's question
        return ScriptedReply(f"City{i}" if i < 3 else "Atlantis")
    yes = -0.1 if i % 2 == 0 else -2.0
    return ScriptedReply("yes", top={"yes": yes, "no": -1.0})


@pytest.fixture
def run_id(store, settings):
    import_samples(store, DATASET, [sample(i) for i in range(8)])
    run = start_run(store, RunConfig(dataset=DATASET, judges=["trivial", "p_true"],
                                     rule="p_true", fallback=True))
    execute_run(store, run, settings, models=RunModels(main=ScriptedLLM(respond=respond)),
                progress=False)
    return run


def test_truth_labels_come_from_the_matcher_and_the_passages(store, run_id):
    tables = run_tables(store, run_id)
    samples = tables.samples.set_index("sample_id")
    assert list(samples["answer"])[:4] == ["City0", "City1", "City2", "Atlantis"]
    assert list(samples["answer_correct"]) == [True, True, True] + [False] * 5
    # no dataset flag: a reference found in a passage decides
    assert list(samples["passages_support"]) == [i % 2 == 0 for i in range(8)]
    assert "norag_correct" in samples.columns and samples["domain"].tolist()[:4] == ["geo"] * 4
    assert len(tables.verdicts) == 16 and set(tables.verdicts["judge"]) == {"trivial", "p_true"}


def test_human_labels_win_only_under_human_truth(store, run_id):
    with store.session() as session:
        row_id = session.query(SampleRow.id).filter(SampleRow.external_id == "s1").scalar()
        ann = [Annotator(name=f"a{i}") for i in range(3)]
        session.add_all(ann)
        session.flush()
        # s1: two say answerable with a wrong answer, one says unanswerable -> majority wins;
        # a later label by a0 replaces its first one.
        first = Label(sample_id=row_id, annotator_id=ann[0].id, label="unanswerable")
        session.add_all([
            first,
            Label(sample_id=row_id, annotator_id=ann[1].id, label="answerable",
                  answer_correct=False),
            Label(sample_id=row_id, annotator_id=ann[2].id, label="unanswerable"),
        ])
        session.flush()
        session.add(Label(sample_id=row_id, annotator_id=ann[0].id, label="answerable",
                          answer_correct=False, previous_id=first.id))
    auto = run_tables(store, run_id, "auto").samples.set_index("sample_id")
    human = run_tables(store, run_id, "human").samples.set_index("sample_id")
    assert (auto.loc["s1", "passages_support"], auto.loc["s1", "answer_correct"]) == (False, True)
    assert (human.loc["s1", "passages_support"], human.loc["s1", "answer_correct"]) == (True, False)
    assert human.loc["s1", "human_label"] == "answerable" and human.loc["s1", "annotators"] == 3
    others = [s for s in auto.index if s != "s1"]
    assert auto.loc[others].equals(human.loc[others])
    with pytest.raises(ValueError, match="truth must be one of"):
        run_tables(store, run_id, "oracle")


def test_metrics_of_a_run_follow_the_definitions(store, run_id):
    metrics = judge_metrics(run_tables(store, run_id).verdicts, n_resamples=0)
    trivial, p_true = metrics["trivial"], metrics["p_true"]
    assert trivial["counts"] == {"AK": 3, "AD": 0, "UK": 5, "UD": 0}
    assert trivial["risk"] == pytest.approx(5 / 8) and trivial["coverage"] == 1.0
    # p_true keeps samples 0, 2, 4, 6 (P(yes) high): correct ones kept are 0 and 2.
    assert p_true["counts"] == {"AK": 2, "AD": 1, "UK": 2, "UD": 3}
    # AwF: V = correct & support = {0, 2}; F-Answerable = {0, 2, 4, 6}; kept {0, 2, 4, 6}
    assert p_true["precision"] == pytest.approx(2 / 4) and p_true["recall"] == pytest.approx(2 / 4)


def test_report_writes_markdown_html_and_pngs(store, run_id, tmp_path):
    (tmp_path / "report").mkdir()
    stale = tmp_path / "report" / "switch.png"  # an earlier report's, of another run
    stale.write_bytes(b"\x89PNG old")
    mine = tmp_path / "report" / "notes.txt"
    mine.write_text("a person's file")
    files = write_report(run_tables(store, run_id), tmp_path / "report", n_resamples=50)
    assert not stale.exists() and mine.read_text() == "a person's file"
    md, page = files.markdown.read_text(), files.html.read_text()
    for heading in ("Risk control (RC-RAG)", "Answer with faithfulness (AwF)", "CRAG scoring",
                    "CRAG by domain", "No-RAG fallback"):
        assert heading in md and heading in page
    assert "| p_true | 8 | 2 | 1 | 2 | 3 |" in md
    assert "<b>toy</b>" not in page and "&lt;b&gt;toy&lt;/b&gt;" in page
    assert {f.name for f in files.figures} == {"pr_curves.png", "risk_coverage.png", "fallback.png"}
    for figure in files.figures:
        assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and figure.stat().st_size > 5000
    assert set(json.loads(files.metrics.read_text())["judges"]) == {"trivial", "p_true"}


def test_report_of_a_run_with_a_judge_unavailable_on_every_sample(store, settings, tmp_path):
    """nli without a model is unavailable everywhere: the report lists it with n = 0 and
    draws and sweeps the other judges (its fallback row once failed on an all-NaN curve)."""
    import_samples(store, DATASET, [sample(i) for i in range(8)])
    run = start_run(store, RunConfig(dataset=DATASET, judges=["p_true", "nli"],
                                     rule="p_true", fallback=True))
    execute_run(store, run, settings, models=RunModels(main=ScriptedLLM(respond=respond)),
                progress=False)
    files = write_report(run_tables(store, run), tmp_path / "report", n_resamples=20)
    md = files.markdown.read_text()
    assert "| nli | 0 | 0 | 0 | 0 | 0 |" in md and "No-RAG fallback" in md
    fallback = md[md.index("No-RAG fallback"):]
    fallback = fallback.split("\n\n#")[0]
    assert "| p_true |" in fallback and "| nli |" not in fallback


def test_stacked_judge_is_fitted_out_of_fold_with_enough_labels():
    import numpy as np
    import pandas as pd

    from ragshield.reports.stacking import with_stacked_judge

    rng = np.random.default_rng(0)
    n = 80
    correct = rng.random(n) < 0.5
    informative = np.where(correct, rng.normal(1, 0.5, n), rng.normal(-1, 0.5, n))
    noise = rng.normal(0, 1, n)
    rows = [{"sample_id": f"s{i}", "judge": judge, "keep": bool(score > 0), "score": score,
             "answer_correct": bool(correct[i]), "passages_support": True}
            for i in range(n) for judge, score in (("good", informative[i]), ("noise", noise[i]))]
    table = pd.DataFrame(rows).astype({"keep": "boolean"})
    stacked, note = with_stacked_judge(table)
    rows = stacked[stacked["judge"] == "stacked"]
    assert len(rows) == n and "out of fold" in note
    assert rows["score"].between(0, 1).all()
    accuracy = (rows["keep"].to_numpy(bool) == rows["answer_correct"].to_numpy(bool)).mean()
    assert accuracy > 0.8  # the informative judge carries the label

    few, note = with_stacked_judge(table.iloc[:20])
    assert "stacked" not in set(few["judge"]) and "at least 20" in note


def test_report_has_threshold_table_and_says_why_no_stacked_judge(store, run_id, tmp_path):
    files = write_report(run_tables(store, run_id), tmp_path / "r", n_resamples=0)
    md = files.markdown.read_text()
    assert "## Thresholds" in md and "| p_true |" in md.split("## Thresholds")[1]
    assert "Stacked judge: not fitted" in md


def test_cv_thresholds_count_the_folds_that_keep_nothing():
    import numpy as np
    import pandas as pd

    from ragshield.evaluation import RunTables
    from ragshield.reports.tables import _fitted_thresholds, judge_series, threshold_table

    inf = np.inf
    assert _fitted_thresholds(np.array([0.5, 0.7, inf, 0.6, inf])) == (
        "0.600 ± 0.10 (2 of 5 folds: keep nothing)")  # the spread with ddof 1, as accuracy's
    assert _fitted_thresholds(np.array([0.5, 0.7])) == "0.600 ± 0.14"
    assert _fitted_thresholds(np.array([inf, inf])) == "keep nothing"
    assert _fitted_thresholds(np.array([np.nan, np.nan])) == "n/a"

    # No answer is right: every fold's best threshold keeps nothing.
    n = 40
    samples = pd.DataFrame({"sample_id": [f"s{i}" for i in range(n)], "answer_correct": False,
                            "passages_support": True})
    verdicts = pd.DataFrame({"sample_id": samples["sample_id"], "judge": "j",
                             "keep": pd.array([True] * n, dtype="boolean"),
                             "score": np.linspace(0, 1, n)})
    tables = RunTables(run_id=1, truth="auto", config={}, samples=samples, verdicts=verdicts)
    row = threshold_table(tables, judge_series(tables)).rows[0]
    assert row[:3] == ["j", "keep nothing", "1.000 ± 0.00"]


def test_long_curves_are_drawn_through_at_most_max_points_with_both_ends(tmp_path, monkeypatch):
    import numpy as np
    import pandas as pd

    from ragshield.evaluation import RunTables
    from ragshield.metrics.curves import risk_coverage_curve
    from ragshield.reports import figures
    from ragshield.reports.tables import judge_series

    rng = np.random.default_rng(0)
    n = 3000
    correct = rng.random(n) < 0.6
    samples = pd.DataFrame({"sample_id": [f"s{i}" for i in range(n)], "answer_correct": correct,
                            "passages_support": rng.random(n) < 0.7})
    verdicts = pd.DataFrame({"sample_id": samples["sample_id"], "judge": "scored",
                             "keep": pd.array(rng.random(n) < 0.5, dtype="boolean"),
                             "score": rng.random(n)})
    tables = RunTables(run_id=1, truth="auto", config={}, samples=samples, verdicts=verdicts)
    close, drawn = figures.plt.close, []
    monkeypatch.setattr(figures.plt, "close", drawn.append)  # keep the figure to look at it
    path = figures.risk_coverage_figure(tables, judge_series(tables), tmp_path / "rc.png")
    close(drawn[0])
    x, y = drawn[0].axes[0].lines[0].get_data()
    curve = risk_coverage_curve(verdicts["score"], correct)
    assert curve.coverage.size == n and len(x) <= figures.MAX_POINTS
    assert (x[0], y[0], x[-1], y[-1]) == (curve.coverage[0], curve.risk[0], curve.coverage[-1],
                                          curve.risk[-1])
    assert set(zip(x, y)) <= set(zip(curve.coverage, curve.risk))  # points of the curve
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_markdown_cells_keep_a_table_row_whole_and_show_tags_as_text() -> None:
    """A dataset's field ends up in a cell: a lone carriage return split the row in two."""
    table = Table(title="By domain", headers=["domain", "n"],
                  rows=[["fin\rance | x\u2028y <img src=x onerror=alert(1)>", 1]])
    row = table_markdown(table).splitlines()[-1]
    assert row == "| fin ance \\| x y &lt;img src=x onerror=alert(1)> | 1 |"


def test_the_crag_row_of_a_judge_counts_its_undecided_samples_as_missing():
    """It dropped them: its n differed from the answers' row, and so did its accuracy."""
    import pandas as pd

    from ragshield.evaluation import RunTables
    from ragshield.reports.tables import crag_tables, judge_series

    samples = pd.DataFrame({"sample_id": ["a", "b", "c", "d"],
                            "answer": ["Paris", "Paris", "Rome", "Paris"],
                            "references": [["Paris"]] * 4, "answer_correct": True,
                            "passages_support": True})
    verdicts = pd.DataFrame({"sample_id": ["a", "b", "c", "d"], "judge": "j",
                             "keep": pd.array([True, None, True, False], dtype="boolean"),
                             "score": np.nan})
    tables = RunTables(run_id=1, truth="auto", config={}, samples=samples, verdicts=verdicts)
    rows = crag_tables(tables, judge_series(tables))[0].rows
    assert rows[0][:3] == ["answer as generated", "4", "0.750"]
    # kept: a (right), c (wrong); b undecided and d withheld show nothing
    assert rows[1][:5] == ["with j", "4", "0.250", "0.250", "0.500"]


def test_an_answer_correct_flag_counts_only_for_the_answer_it_was_given_on(sqlite_store):
    """The flag was applied to whatever answer a later run gave: a run answering everything
    wrongly inherited the right answers' flags under truth human."""
    from sqlalchemy import insert, select

    from ragshield.store.models import AnswerRow, Run
    from ragshield.testing.synthetic_run import fill_synthetic_run

    store = sqlite_store
    first = fill_synthetic_run(store, 40, ["trivial"], seed=0)
    with store.session() as session:
        run = session.get(Run, first)
        again = Run(name="again", dataset_id=run.dataset_id, config=run.config, status="done",
                    samples_total=40)
        session.add(again)
        session.flush()
        second = again.id
        session.execute(insert(AnswerRow), [
            dict(run_id=second, sample_id=a.sample_id, role="main", answerer=a.answerer,
                 model="m", text="zzz totally wrong", raw="zzz", evidence=[], refusal=False,
                 passages=a.passages, messages=a.messages, trace=[], prompt_tokens=1,
                 completion_tokens=1, seconds=0.0)
            for a in session.scalars(select(AnswerRow).where(AnswerRow.run_id == first))])
    labelled = run_tables(store, first, "human").samples["human_answer_correct"].notna()
    assert labelled.sum() >= 3
    later = run_tables(store, second, "human").samples
    assert later["human_answer_correct"].isna().all()
    assert not later["answer_correct"].any()  # no reference is "zzz totally wrong"


def test_the_automatic_label_of_agreement_reads_the_passages_the_run_showed(sqlite_store):
    """A retrieval run answers from passages other than the dataset's own: the agreement
    view judged the humans against passages they never saw, and disagreed with the run's
    own tables."""
    from sqlalchemy import select, update

    from ragshield.label_agreement import automatic_labels
    from ragshield.store.models import AnswerRow, Sample as SampleModel
    from ragshield.testing.synthetic_run import fill_synthetic_run

    store = sqlite_store
    run = fill_synthetic_run(store, 10, ["trivial"], seed=0)
    with store.session() as session:
        session.execute(update(SampleModel).values(answerable=None))  # no flag: references
        answer = session.scalars(select(AnswerRow).where(AnswerRow.run_id == run)).first()
        sample = session.get(SampleModel, answer.sample_id)
        reference = sample.reference_answers[0]
        answer.passages = [{"text": f"Retrieved: the answer is {reference}.", "title": None,
                            "doc_id": "r", "score": None, "meta": {}}]
        for passage in sample.passages:
            passage.text = "A passage about something else entirely."
        external, row_id, dataset = sample.external_id, sample.id, sample.dataset.name
    tables = run_tables(store, run, "auto").samples.set_index("sample_id")
    assert bool(tables.loc[external, "passages_support"]) is True
    assert automatic_labels(store, dataset)[row_id] is True
