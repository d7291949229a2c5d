"""The Dashboard tab's handlers on a real store with runs made by the real pipeline and a
scripted model: metric tables equal to judge_metrics with their intervals, fold counts,
figures and the notes for curves a run cannot draw, the cached view reused while nothing
changes, human truth, annotation progress and agreement, runs started in a background
thread, readable errors, escaping, and the named endpoints through gradio_client."""

from __future__ import annotations

import base64
import html
import re
import threading

import pytest
from sqlalchemy import select

from ragshield.config import GROUNDED_JUDGES, GROUNDED_RULE

from ragshield.metrics.summary import judge_metrics
from ragshield.pipeline import RunModels, execute_run, start_run
from ragshield.reports.tables import fmt
from ragshield.run_config import RunConfig
from ragshield.services.annotation.agreement import Agreement, agreement
from ragshield.services.runs.run_choices import run_choices
from ragshield.services.runs.run_views import DashboardCache, agreement_tables
from ragshield.services.runs.runs import RunForm, RunLauncher, form_defaults
from ragshield.store.labels import add_annotator, add_label
from ragshield.store.models import AnswerRow
from ragshield.store.models import Sample as SampleRow
from ragshield.store.runs import add_verdicts, list_runs
from ragshield.store.sample_import import import_samples
from ragshield.types import Passage, Sample, Verdict
from ragshield.ui import dashboard_tab
from ragshield.ui.context import UiContext
from ragshield.ui.dashboard_tab import (MISSING_CURVES, refresh_dashboard, run_progress_html,
                                        start_run_from_form)
from tests.fakes import ScriptedLLM, ScriptedReply
from tests.app_support import dashboard_client

DATASET = "<img src=x onerror=alert(1)>toy"
RISK = "Risk control (RC-RAG)"
# The handlers only call library functions that have their own PostgreSQL tests: the
# store-heavy tests here run on both databases, the others on SQLite only.
SQLITE_ONLY = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
QUALITY = "Answer with faithfulness (AwF)"


def sample(i: int) -> Sample:
    # Even samples: the passage names the city (passages support an answer); odd: not.
    text = f"The capital of Land{i} is City{i}." if i % 2 == 0 else "Rivers flow to the sea."
    return Sample(id=f"s{i}", question=f"What is the capital of Land{i}?",
                  passages=[Passage(text=text)], reference_answers=[f"City{i}"])


def respond(messages) -> ScriptedReply:
    """Answers right for samples 0, 1, 2, wrong for the rest; P(yes) high for even ones."""
    prompt = " ".join(m["content"] for m in messages)
    i = next(i for i in range(8) if f"Land{i}?" in prompt)
    if "yes" not in messages[-1]["content"].lower():
        return ScriptedReply(f"City{i}" if i < 3 else "Atlantis")
    return ScriptedReply("yes", top={"yes": -0.1 if i % 2 == 0 else -2.0, "no": -1.0})


def scripted_models(config: RunConfig | None = None) -> RunModels:
    return RunModels(main=ScriptedLLM(respond=respond))


def make_run(store, settings, *, fallback: bool = True, execute: bool = True) -> int:
    run_id = start_run(store, RunConfig(dataset=DATASET, judges=["trivial", "p_true"],
                                        rule="p_true", fallback=fallback))
    if execute:
        execute_run(store, run_id, settings, models=scripted_models(), progress=False)
    return run_id


@pytest.fixture
def context(store, settings) -> UiContext:
    import_samples(store, DATASET, [sample(i) for i in range(8)])
    # One scripted model answers and reads for every judge: runs started here say so.
    return UiContext(settings=settings.model_copy(update={"judge_model": "self"}), store=store)


@pytest.fixture
def run_id(context, settings) -> int:
    return make_run(context.store, settings)


def table_rows(page: str, title: str) -> dict[str, list[str]]:
    """The rows (first cell -> cells, unescaped) of the table under the heading `title`."""
    section = page.split(f"<h2>{html.escape(title)}</h2>", 1)[1].split("</table>", 1)[0]
    rows = {}
    for row in re.findall(r"<tr>(.*?)</tr>", section.split("<tbody>", 1)[1]):
        cells = [html.unescape(re.sub(r"<[^>]+>", "", cell))  # a link's text
                 for cell in re.findall(r"<td>(.*?)</td>", row)]
        rows[cells[0]] = cells
    return rows


def figures_of(page: str) -> dict[str, bytes]:
    return {name: base64.b64decode(data) for name, data in
            re.findall(r'data-figure="(\w+)" src="data:image/png;base64,([^"]+)"', page)}


def label(store, sample_id: str, annotator: str, value: str, correct: bool | None = None) -> None:
    add_annotator(store, annotator)
    add_label(store, DATASET, sample_id, annotator, value, answer_correct=correct)


def card(page: str, key: str) -> str:
    """The text of a headline card, its tags taken out."""
    found = re.search(rf'<div class="rs-card" data-card="{key}">(.*?)</div></div>', page)
    assert found, f"no card {key}"
    return html.unescape(re.sub(r"<[^>]+>", " ", found.group(1)))


def test_the_dashboard_opens_on_cards_and_the_trade_off_picture(context, run_id):
    """Samples 0 and 2 are good (right, and their passages say so); p_true keeps the even
    ones: 4 of 8 shown, 2 of them wrong, both good ones shown; showing everything: 6 of 8
    wrong. The cards say so with intervals; the pictures carry their numbers in words."""
    shown = refresh_dashboard(context, DashboardCache(), run_id, "auto", 0)
    page = shown.headline_html
    assert "With the shield: 50% of answers shown, 1 in 2 of them wrong; without it: all " \
           "shown, 3 in 4 wrong." in html.unescape(page)
    assert " ".join(card(page, "shown").split()) == (
        "Answers shown 50% 95% interval 16% to 84%; 4 of 8 questions showing everything: 100%")
    assert "2 of 4 shown" in card(page, "wrong") and "showing everything: 75% wrong" in \
        card(page, "wrong")
    assert "2 of 2 right answers" in card(page, "right")
    pictures = figures_of(page)
    assert set(pictures) == {"tradeoff", "judges"}
    assert all(png.startswith(b"\x89PNG") for png in pictures.values())
    alts = dict(re.findall(r'alt="([^"]*)" data-figure="(\w+)"', page))
    tradeoff = html.unescape(next(a for a, name in alts.items() if name == "tradeoff"))
    assert "The shield (p_true) shows 50% of answers, 50% of them wrong; showing everything " \
           "shows 100%, 75% wrong." in tradeoff
    judges = html.unescape(next(a for a, name in alts.items() if name == "judges"))
    assert "p_true: 50% shown, 50% wrong" in judges and "trivial: 100% shown" in judges
    # The tables sit behind their titles, closed; the research curves too.
    assert shown.tables_html.startswith('<div class="rs-dashboard"><details class="rs-section" '
                                        'open><summary><h2>What people see</h2>')
    assert shown.tables_html.count('<details class="rs-section">') >= 4
    assert shown.figures_html.startswith('<details class="rs-section')


def test_metric_tables_equal_judge_metrics_with_intervals_and_fold_counts(context, run_id):
    cache = DashboardCache()
    shown = refresh_dashboard(context, cache, run_id, "auto", 200)
    metrics = judge_metrics(context.tables.get(run_id, "auto").verdicts, n_resamples=200, seed=0)
    risk, quality = table_rows(shown.tables_html, RISK), table_rows(shown.tables_html, QUALITY)
    assert set(risk) == set(quality) == {"trivial", "p_true"}
    # fold counts by hand: every answer kept by trivial (3 right, 5 wrong); p_true keeps
    # the even samples 0, 2, 4, 6, of which 0 and 2 are right; it drops 1 (right), 3, 5, 7.
    assert risk["trivial"][1:6] == ["8", "3", "0", "5", "0"]
    assert risk["p_true"][1:6] == ["8", "2", "1", "2", "3"]
    for judge, values in metrics.items():
        for column, name in ((6, "risk"), (7, "carefulness"), (8, "alignment"), (9, "coverage")):
            low, high = values["ci"][name]
            assert risk[judge][column] == f"{fmt(values[name])} [{fmt(low, 2)}, {fmt(high, 2)}]"
        assert quality[judge][1].startswith(fmt(values["precision"]) + " [")
        assert quality[judge][4] == fmt(values["max_f1"])
        assert quality[judge][6] == fmt(values["pr_auc"])
    assert risk["p_true"][6].startswith(fmt(2 / 4))
    no_intervals = refresh_dashboard(context, cache, run_id, "auto", 0)
    assert "[" not in "".join(table_rows(no_intervals.tables_html, RISK)["p_true"])
    assert "Thresholds" in shown.tables_html and "No-RAG fallback" in shown.tables_html


@SQLITE_ONLY
def test_the_dashboard_opens_with_what_people_see(context, run_id):
    # Answers right for samples 0-2, passages support the even ones: 0 and 2 are good.
    # p_true keeps the even samples: 4 shown, 2 of them wrong; every answer: 6 of 8 wrong.
    page = refresh_dashboard(context, DashboardCache(), run_id, "auto", 0).tables_html
    assert page.index("<h2>What people see</h2>") < page.index("<h2>Run</h2>") < page.index(RISK)
    rows = table_rows(page, "What people see")
    assert rows["the run's rule: p_true"][1:] == ["50%", "50%", "100%"]
    assert rows["every answer shown"][1:] == ["100%", "75%", "100%"]
    assert rows["p_true"] == ["p_true", "50%", "50%", "100%"]
    assert ("With the shield: 50% of answers shown, 1 in 2 of them wrong; without it: all "
            "shown, 3 in 4 wrong (the run's rule, p_true).") in html.unescape(page)


def test_figures_are_pngs_and_missing_curves_get_a_note(context, settings, run_id):
    cache = DashboardCache()
    with_fallback = refresh_dashboard(context, cache, run_id, "auto", 0).figures_html
    pictures = figures_of(with_fallback)
    assert set(pictures) == {"pr", "risk_coverage", "fallback"}
    assert all(png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 3000 for png in pictures.values())
    assert html.escape(MISSING_CURVES["switch"]) in with_fallback
    assert html.escape(MISSING_CURVES["fallback"]) not in with_fallback

    plain = make_run(context.store, settings, fallback=False)
    shown = refresh_dashboard(context, cache, plain, "auto", 0)
    assert set(figures_of(shown.figures_html)) == {"pr", "risk_coverage"}
    assert html.escape(MISSING_CURVES["fallback"]) in shown.figures_html
    assert "No-RAG fallback" not in shown.tables_html


def test_unchanged_refresh_reuses_the_view_and_new_data_replaces_it(context, run_id):
    cache = DashboardCache()
    tables = context.tables.get(run_id, "auto")
    first = cache.view(context.store, tables, 100)
    assert cache.view(context.store, context.tables.get(run_id, "auto"), 100) is first
    assert cache.view(context.store, tables, 0) is not first  # another number of resamples
    def serial() -> int | None:
        return refresh_dashboard(context, cache, run_id, "auto", 100).view_serial

    assert serial() == first.serial == serial()

    with context.store.session() as session:
        answer_id = session.query(AnswerRow.id).filter(AnswerRow.run_id == run_id).first()[0]
    add_verdicts(context.store, answer_id, [Verdict(judge="calibration", keep=False, score=0.1)])
    after_verdict = refresh_dashboard(context, cache, run_id, "auto", 100)
    assert after_verdict.view_serial != first.serial
    assert "calibration" in table_rows(after_verdict.tables_html, RISK)

    label(context.store, "s5", "ann", "unanswerable")
    after_label = refresh_dashboard(context, cache, run_id, "auto", 100)
    assert after_label.view_serial != after_verdict.view_serial
    assert serial() == after_label.view_serial


@SQLITE_ONLY
def test_human_truth_uses_the_annotators_majority(context, run_id):
    # s1's answer is right by the matcher; two of three annotators say it is wrong.
    label(context.store, "s1", "a0", "answerable", correct=False)
    label(context.store, "s1", "a1", "answerable", correct=False)
    label(context.store, "s1", "a2", "unanswerable")
    cache = DashboardCache()
    auto = table_rows(refresh_dashboard(context, cache, run_id, "auto", 0).tables_html, RISK)
    human = table_rows(refresh_dashboard(context, cache, run_id, "human", 0).tables_html, RISK)
    assert auto["trivial"][2:6] == ["3", "0", "5", "0"]
    assert human["trivial"][2:6] == ["2", "0", "6", "0"]
    assert human["p_true"][2:6] == ["2", "0", "2", "4"]


def test_annotation_progress_and_agreement(context, run_id):
    annotator = "<b>ann</b>"
    for sample_id, first, second in (("s0", "answerable", "answerable"),
                                     ("s1", "unanswerable", "answerable"),
                                     ("s2", "answerable", "answerable")):
        label(context.store, sample_id, annotator, first)
        label(context.store, sample_id, "bo", second)
    label(context.store, "s3", "bo", "unanswerable")
    shown = refresh_dashboard(context, DashboardCache(), run_id, "auto", 0)

    progress = table_rows(shown.progress_html, f"Annotation of {DATASET}")
    assert progress[annotator][1:4] == ["3", "0", "8"] and progress["bo"][1:4] == ["4", "0", "8"]
    among = table_rows(shown.agreement_html, "Agreement among annotators")
    assert among["samples with two or more labels"][1] == "3"
    assert among["percent agreement"][1] == "0.667"  # s0 and s2 agree, s1 not
    # Fleiss: P_bar = 2/3, P_e = (5/6)^2 + (1/6)^2 = 26/36 -> (2/3 - 26/36) / (10/36) = -0.2
    assert among["Fleiss' kappa"][1] == "-0.200"
    assert among[f"Cohen's kappa {annotator} / bo"][1] == "0.000"  # p_o = p_e = 2/3
    # AC1: p_a = 2/3, pi_answerable = (1 + 1/2 + 1) / 3 = 5/6, p_e = 2 * 5/6 * 1/6 = 10/36
    # -> (24/36 - 10/36) / (26/36) = 7/13
    assert among["Gwet's AC1"][1] == fmt(7 / 13)
    majority = table_rows(shown.agreement_html, "Agreement with the human majority")
    # majority: s0, s2 answerable, s3 unanswerable (s1 a tie); p_true keeps s0, s2, drops s3
    assert majority["p_true"][1:7] == ["3", "1.000", "1.000", "1.000", "0", "0"]
    # trivial keeps s3 too: a false keep, named by the dataset's own id. AC1 as above: 7/13.
    assert majority["trivial"][1:7] == ["3", "0.667", "0.000", fmt(7 / 13), "1: s3", "0"]
    assert majority["automatic label"][1:3] == ["3", "1.000"]
    for page in (shown.progress_html, shown.agreement_html, shown.tables_html):
        assert "<b>ann" not in page and "<img src=x" not in page
    assert "&lt;b&gt;ann&lt;/b&gt;" in shown.progress_html
    assert html.escape(DATASET) in shown.tables_html


def test_sentence_label_agreement_and_the_support_judge_against_it(context, run_id):
    """Issue 57: the Dashboard shows agreement on sentence labels and the run's support judge
    against the people's majority; the view follows a new sentence label."""
    from ragshield.store.sentence_labels import add_sentence_label

    with context.store.session() as session:
        answers = session.execute(
            select(SampleRow.external_id, AnswerRow.id, AnswerRow.text)
            .join(SampleRow, SampleRow.id == AnswerRow.sample_id)
            .where(AnswerRow.run_id == run_id, AnswerRow.role == "main")).tuples().all()
    scores = {"s0": 0.9, "s1": 0.8, "s2": 0.3, "s3": 0.2}
    for sample_id, answer_id, text in answers:
        if sample_id in scores:
            claim = {"start": 0, "end": len(text), "score": scores[sample_id],
                     "supported": scores[sample_id] >= 0.5}
            add_verdicts(context.store, answer_id, [Verdict(
                "support", claim["supported"], scores[sample_id], details={"claims": [claim]})])
    people = {"ann": {"s0": "supported", "s1": "supported", "s2": "unsupported",
                      "s3": "supported"},
              "bo": {"s0": "supported", "s1": "unsupported", "s2": "unsupported",
                     "s3": "supported"}}
    cache = DashboardCache()
    before = refresh_dashboard(context, cache, run_id, "auto", 0)
    assert "Agreement on sentence labels" not in before.agreement_html
    for person, marks in people.items():
        add_annotator(context.store, person)
        for sample_id, answer_id, text in answers:
            if sample_id in marks:
                add_sentence_label(context.store, DATASET, sample_id, person,
                                   answer_id=answer_id, start=0, end=len(text),
                                   label=marks[sample_id], answer_text=text)
    shown = refresh_dashboard(context, cache, run_id, "auto", 0)
    among = table_rows(shown.agreement_html, "Agreement on sentence labels")
    assert among["sentences labelled"][1] == "4" and among["people"][1] == "2"
    assert among["percent agreement"][1] == "0.750"
    # AC1: p_a = 3/4; pi_supported = (1 + 1/2 + 0 + 1) / 4 = 5/8, p_e = 2 * 5/8 * 3/8 = 15/32
    assert among["Gwet's AC1"][1].startswith(fmt((3 / 4 - 15 / 32) / (1 - 15 / 32)) + " [")
    judge = table_rows(shown.agreement_html, "The support judge against people's sentence labels")
    # Majority: s0 and s3 supported, s2 not (s1 a tie). Scores 0.9 and 0.2 against 0.3: the
    # judge ranks s3 below s2, so AUROC 1/2; marks: s0 and s2 right, s3 wrong: (1/2 + 1) / 2.
    [row] = judge.values()
    assert row[:2] == ["3", "2"]
    assert row[2].startswith("0.500") and row[3].startswith("0.750")


def test_agreement_table_lists_false_keeps_escaped_and_cut_short():
    many = [f"<i>{i:02d}" for i in range(25)]
    against = {"n": 30, "percent": 0.1, "kappa": None, "ac1": -0.5, "false_keeps": many,
               "false_withholds": ["x&y"]}
    result = Agreement(among={"n_items": 0, "percent": None, "fleiss": None,
                              "krippendorff_alpha": None, "gwet_ac1": None, "cohen": {}},
                       automatic=against, judges={"<b>j</b>": against})
    page = dashboard_tab._tables_html(agreement_tables(result))
    assert "<i>" not in page and "<b>j" not in page and "&lt;i&gt;00" in page
    rows = table_rows(page, "Agreement with the human majority")
    assert rows["<b>j</b>"][3:5] == ["n/a", "-0.500"]
    assert rows["<b>j</b>"][5] == "25: " + ", ".join(many[:20]) + ", +5 more"
    assert rows["<b>j</b>"][6] == "1: x&y"
    assert table_rows(page, "Agreement among annotators")["Gwet's AC1"][1] == "n/a"


def test_false_keeps_across_datasets_name_their_dataset(context):
    # Across every dataset (no dataset chosen) an id is named "dataset/id".
    for annotator in ("ann", "bo"):
        label(context.store, "s1", annotator, "unanswerable")
        label(context.store, "s2", annotator, "answerable")
    rows = {name: row for name, row in sample_rows(context.store).items() if name in ("s1", "s2")}
    result = agreement(context.store, None, {rows["s1"]: True, rows["s2"]: False}, {})
    assert result.automatic["false_keeps"] == [f"{DATASET}/s1"]
    assert result.automatic["false_withholds"] == [f"{DATASET}/s2"]
    one = agreement(context.store, DATASET, {rows["s1"]: True, rows["s2"]: False}, {})
    assert one.automatic["false_keeps"] == ["s1"] and one.automatic["false_withholds"] == ["s2"]


def sample_rows(store) -> dict[str, int]:
    with store.session() as session:
        return dict(session.query(SampleRow.external_id, SampleRow.id).all())


@SQLITE_ONLY
def test_errors_are_readable_messages(context, run_id):
    cache = DashboardCache()
    for run, truth, resamples, expected in ((999, "auto", 0, "no run with id 999"),
                                            (run_id, "oracle", 0, "truth must be one of"),
                                            (run_id, "auto", -1, "bootstrap resamples"),
                                            (run_id, "auto", None, "bootstrap resamples"),
                                            ("x", "auto", 0, "run: give a whole number"),
                                            # past SQL's integers: a traceback before
                                            ("1e30", "auto", 0, "run: give a whole number")):
        shown = refresh_dashboard(context, cache, run, truth, resamples)
        assert "rs-msg-error" in shown.headline_html
        assert expected in html.unescape(shown.headline_html) and shown.tables_html == ""
        assert shown.view_serial is None and shown.figures_html == ""
    assert "No run yet" in refresh_dashboard(context, cache, None, "auto", 0).headline_html


@SQLITE_ONLY
def test_a_judge_unavailable_everywhere_is_listed_without_curves(context, settings):
    # nli without a configured classifier model is unavailable on every sample
    run_id = start_run(context.store, RunConfig(dataset=DATASET, judges=["trivial", "nli"],
                                                rule="trivial", fallback=True))
    execute_run(context.store, run_id, settings, models=scripted_models(), progress=False)
    shown = refresh_dashboard(context, DashboardCache(), run_id, "auto", 100)
    assert table_rows(shown.tables_html, RISK)["nli"][1:6] == ["0", "0", "0", "0", "0"]
    assert set(table_rows(shown.tables_html, "No-RAG fallback")) == {"trivial"}
    assert set(figures_of(shown.figures_html)) == {"pr", "risk_coverage", "fallback"}


@SQLITE_ONLY
def test_a_run_without_saved_samples_says_so(context, settings):
    pending = make_run(context.store, settings, execute=False)
    shown = refresh_dashboard(context, DashboardCache(), pending, "auto", 1000)
    assert "no saved samples yet" in shown.headline_html
    assert shown.tables_html == shown.figures_html == ""


def test_started_run_finishes_in_the_background_and_shows_its_progress(context):
    launcher = RunLauncher(context.store, context.settings, open_models=scripted_models)
    message, run_id = start_run_from_form(context, launcher, DATASET, 3, "evidence",
                                          ["trivial", "p_true"], "p_true", "given")
    assert run_id is not None and f"Run {run_id} started" in message
    assert launcher.wait(run_id, timeout=30)
    [run] = list_runs(context.store)
    assert (run.id, run.status, run.done, run.total, run.failures) == (run_id, "done", 3, 3, 0)
    progress = run_progress_html(launcher)
    assert f'data-run="{run_id}"' in progress and "done, 3 of 3 samples" in progress
    assert '<progress value="3" max="3">' in progress
    assert run_choices(context.store) == [(f"#{run_id} · {DATASET} · done", run_id)]
    shown = refresh_dashboard(context, DashboardCache(), run_id, "auto", 0)
    assert table_rows(shown.tables_html, RISK)["p_true"][1] == "3"


@SQLITE_ONLY
def test_a_second_run_waits_for_the_first_and_a_failed_start_is_reported(context):
    release = threading.Event()

    def slow(messages):
        release.wait(10)
        return respond(messages)

    launcher = RunLauncher(context.store, context.settings,
                           open_models=lambda config: RunModels(main=ScriptedLLM(respond=slow)))
    _, first = start_run_from_form(context, launcher, DATASET, 2, "evidence", ["trivial"],
                                   "trivial", "given")
    message, second = start_run_from_form(context, launcher, DATASET, 2, "evidence", ["trivial"],
                                          "trivial", "given")
    assert second is None and f"run {first} is still going" in message
    assert f'data-run="{first}"' in run_progress_html(launcher)
    release.set()
    assert launcher.wait(first, timeout=30)

    def broken(config):
        raise RuntimeError("no model file <here>")

    failing = RunLauncher(context.store, context.settings, open_models=broken)
    _, run_id = start_run_from_form(context, failing, DATASET, 2, "evidence", ["trivial"],
                                    "trivial", "given")
    assert failing.wait(run_id, timeout=30)
    progress = run_progress_html(failing)
    assert "failed" in progress and "no model file &lt;here&gt;" in progress


@SQLITE_ONLY
def test_a_bad_configuration_is_a_readable_message_and_starts_nothing(context):
    launcher = RunLauncher(context.store, context.settings, open_models=scripted_models)
    cases = (
        ((DATASET, 2, "evidence", ["trivial"], "p_true", "given"), "rule 'p_true' must be"),
        ((DATASET, 2, "evidence", ["oracle"], "oracle", "given"), "unknown judge(s)"),
        ((DATASET, 2, "poet", ["trivial"], "trivial", "given"), "poet"),
        ((DATASET, 0, "evidence", ["trivial"], "trivial", "given"), "limit"),
        ((DATASET, 2, "evidence", ["trivial"], "trivial", "telepathy"), "retrieval must be"),
        (("nope", 2, "evidence", ["trivial"], "trivial", "given"), "no dataset named 'nope'"),
        ((None, 2, "evidence", ["trivial"], "trivial", "given"), "choose a dataset"),
        ((DATASET, 2, "evidence", [], "trivial", "given"), "choose at least one judge"),
    )
    for form, expected in cases:
        message, run_id = start_run_from_form(context, launcher, *form)
        assert run_id is None and "rs-msg-error" in message
        assert expected in html.unescape(message), message
    assert list_runs(context.store) == [] and launcher.started() == []


def test_the_start_form_chooses_the_rule_as_every_run_does(settings):
    """The form ticks trivial and the configured rule's judge, and selects the rule that
    choose_rule gives those judges: the configured one where it fits, else majority."""
    assert form_defaults(settings) == RunForm(["trivial", *GROUNDED_JUDGES], GROUNDED_RULE)
    pooled = settings.model_copy(update={"decision_rule": "all"})
    assert form_defaults(pooled) == RunForm(["trivial"], "all")
    unknown = settings.model_copy(update={"decision_rule": "oracle"})
    assert form_defaults(unknown) == RunForm(["trivial"], "majority")


@SQLITE_ONLY
def test_named_endpoints(settings, store, run_id, context):
    with dashboard_client(context) as client:
        headline, tables, figures, progress, agreement = client.predict(
            run_id, "auto", 50, api_name="/dashboard_refresh")
        assert 'data-card="shown"' in headline
        assert "p_true" in table_rows(tables, RISK) and set(figures_of(figures)) >= {"pr"}
        assert "No labels yet" in progress and "Agreement among annotators" in agreement
        message, runs_html, *_ = client.predict(
            run_id, DATASET, 2, "evidence", ["trivial"], "p_true", "given", False,
            api_name="/dashboard_start_run")
        assert "rule &#x27;p_true&#x27; must be" in message
        assert "No run is going on" in client.predict(run_id, api_name="/dashboard_progress")[0]
        picker = client.predict(run_id, api_name="/dashboard_runs")
        assert picker["value"] == run_id
        assert picker["choices"] == [[f"#{run_id} · {DATASET} · done", run_id]]
