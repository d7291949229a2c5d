"""The Dashboard tab. It opens on what the shield does: headline cards (answers shown, wrong
among shown, right answers shown, each beside showing everything, with its interval), one
large picture of the trade-off and a small one per judge. Below them, behind their titles:
the research tables with 95% bootstrap intervals and the curves (PR, risk-coverage, No-RAG
fallback, switch to a larger model); then the annotation progress and the agreement of
annotators and judges. All refreshed live while runs and labels arrive; and runs started
from the page, with a progress bar per run. What it shows is computed by
ragshield.services.runs.run_views and ragshield.services.runs.runs; this module renders it."""

from __future__ import annotations

import base64
from functools import partial
from typing import Any, NamedTuple

import gradio as gr

from ragshield.errors import UserError
from ragshield.services.annotation.people import require_admin
from ragshield.services.data.datasets import dataset_names
from ragshield.services.learning.judge_examples import readiness
from ragshield.services.learning.judge_training import JudgeTrainer, held_out_sentence
from ragshield.services.questions.ask_choices import (ANSWERERS, CONFIGURED_MODEL, GIVEN,
                                                      MODEL_CHOICES, MODEL_NOTE, RETRIEVAL_CHOICES,
                                                      judge_choices)
from ragshield.services.rendering import shown_percent, table_html, table_section_html
from ragshield.services.runs.decision_view import Headline, Share
from ragshield.services.runs.run_choices import pick_run, run_choices
from ragshield.services.runs.run_tables import TRUTHS
from ragshield.services.runs.run_views import (MAX_RESAMPLES, Dashboard, DashboardCache, Figure,
                                               RunView, dashboard)
from ragshield.services.runs.runs import (RunForm, RunLauncher, form_config, form_defaults,
                                          given_answers, rule_names)
from ragshield.types import Table
from ragshield.ui.context import UiContext
from ragshield.ui.html_render import esc, message_html
from ragshield.ui.picker_refresh import shown_choices, unless_shown
from ragshield.ui.policy_panel import build_policy_panel

TITLE = "Dashboard"
CSS = """
.rs-dashboard h2 { font-size: 1.1em; margin: 1em 0 0.2em; }
.rs-dashboard .note { color: #555; font-size: 0.85em; margin: 0 0 0.3em; }
.rs-dashboard table { border-collapse: collapse; margin-bottom: 0.8em; font-size: 0.9em; }
.rs-dashboard th, .rs-dashboard td { border: 1px solid #ddd; padding: 3px 6px; text-align: left; }
.rs-figures { display: flex; flex-wrap: wrap; gap: 0.5em; }
.rs-figures img { width: 440px; max-width: 100%; }
.rs-run-progress { margin: 0.3em 0; }
.rs-run-progress progress { width: 100%; height: 1em; }
.rs-headline-words { font-size: 1.15em; margin: 0.2em 0 0.5em; }
.rs-cards { display: flex; flex-wrap: wrap; gap: 0.8em; margin-bottom: 0.6em; }
.rs-card { flex: 1 1 220px; border: 1px solid #ccc; border-radius: 8px; padding: 0.5em 0.8em;
  background: var(--background-fill-secondary, #f7f7f7); }
.rs-card-label { font-size: 0.9em; color: #444; }
.rs-card-value { font-size: 2em; font-weight: 700; line-height: 1.2; }
.rs-card-detail { font-size: 0.85em; color: #444; }
.rs-card-reference { font-size: 0.9em; margin-top: 0.2em; }
.rs-picture img { max-width: 100%; }
.rs-picture .rs-tradeoff { width: 920px; }
.rs-picture .rs-judges { width: 912px; }
.rs-section > summary { cursor: pointer; }
.rs-section > summary h2 { display: inline; }
"""
HEAD = ""

DEFAULT_RESAMPLES = 1000
LIVE_SECONDS = 5.0
MISSING_CURVES = {
    "fallback": "No-RAG fallback: this run stored no No-RAG answers (start a run with "
                "\"also store No-RAG answers\", or \"python -m ragshield run --fallback\").",
    "switch": "Switch to a larger model: this run stored no larger model's answers "
              "(\"python -m ragshield run --switch\").",
}
# Where a run's answers come from (services.runs.runs.ANSWER_SOURCES, as `run --answers`).
ANSWER_CHOICES = [("generate them with the answerer", "generated"),
                  ("judge the answers given in the dataset", "given")]
ANSWERER_INFO = "writes each answer from the question and passages"
RETRIEVAL_INFO = "given: the dataset's own; else retrieved from the demo corpus"


# -- rendering ------------------------------------------------------------------------------

def _tables_html(tables: list[Table]) -> str:
    return '<div class="rs-dashboard">' + "".join(table_html(t) for t in tables) + "</div>"


def _sections_html(tables: list[Table]) -> str:
    """The tables, each behind its title; the first (what people see, every judge beside
    the rule: the cards' numbers in full) open, the research tables closed."""
    return ('<div class="rs-dashboard">' + "".join(
        table_section_html(t, opened=index == 0) for index, t in enumerate(tables)) + "</div>")


def _image_html(figure: Figure, css_class: str = "") -> str:
    data = base64.b64encode(figure.png).decode("ascii")
    return (f'<img class="{esc(css_class)}" alt="{esc(figure.alt)}" '
            f'data-figure="{esc(figure.name)}" src="data:image/png;base64,{data}">')


def _figures_html(view: RunView) -> str:
    images = "".join(_image_html(figure) for figure in view.figures)
    notes = "".join(message_html(MISSING_CURVES[name]) for name in view.missing_curves)
    return ('<details class="rs-section rs-dashboard"><summary><h2>Research curves (PR, '
            'risk-coverage, No-RAG fallback, switch to a larger model)</h2></summary>'
            f'<div class="rs-figures">{images}</div>{notes}</details>')


def _card(key: str, label: str, share: Share, counted: str, reference: str) -> str:
    low, high = share.interval
    interval = ("" if share.of == 0 else
                f"95% interval {shown_percent(low)} to {shown_percent(high)}; ")
    return (f'<div class="rs-card" data-card="{esc(key)}"><div class="rs-card-label">'
            f'{esc(label)}</div><div class="rs-card-value">{esc(shown_percent(share.value))}</div>'
            f'<div class="rs-card-detail">{esc(interval)}{share.count} of {share.of} '
            f'{esc(counted)}</div><div class="rs-card-reference">{esc(reference)}</div></div>')


def headline_html(headline: Headline, picture: list[Figure]) -> str:
    """The cards, in plain words first, and the pictures under them."""
    words = f"{headline.words[0].upper()}{headline.words[1:]}."
    about = (f"Decided by the run's rule, {headline.rule or '-'}, on {headline.questions} "
             "questions; a wrong answer is one that is not right or not supported by its "
             "passages.")
    cards = "".join([
        _card("shown", "Answers shown", headline.shown, "questions",
              f"showing everything: {shown_percent(headline.all_shown.value)}"),
        _card("wrong", "Wrong among the answers shown", headline.wrong_shown, "shown",
              f"showing everything: {shown_percent(headline.all_wrong.value)} wrong"),
        _card("right", "Right answers shown", headline.right_shown, "right answers",
              "showing everything: all of them")])
    figures = {figure.name: figure for figure in picture}
    parts = [f'<p class="rs-headline-words">{esc(words)}</p>',
             f'<p class="note">{esc(about)}</p><div class="rs-cards">{cards}</div>']
    if "tradeoff" in figures:
        figure = figures["tradeoff"]
        parts.append(f'<div class="rs-picture">{_image_html(figure, "rs-tradeoff")}'
                     f'<p class="note">{esc(figure.alt)}</p></div>')
    if "judges" in figures:
        parts.append('<details class="rs-section" open><summary><h2>Each judge alone</h2>'
                     f'</summary><div class="rs-picture">'
                     f'{_image_html(figures["judges"], "rs-judges")}</div></details>')
    return f'<div class="rs-dashboard rs-headline">{"".join(parts)}</div>'


def annotation_html(table: Table) -> str:
    """Labelled and skipped samples per annotator on the run's dataset."""
    if table.rows:
        return _tables_html([table])
    return (f'<div class="rs-dashboard"><h2>{esc(table.title)}</h2>'
            + message_html("No labels yet: the Annotate tab adds them.") + "</div>")


class Refresh(NamedTuple):
    headline_html: str
    tables_html: str
    figures_html: str
    progress_html: str
    agreement_html: str
    view_serial: int | None  # None: a message, not a view


def _rendered(shown: Dashboard) -> Refresh:
    view = shown.view
    if view.empty or view.headline is None:
        headline = message_html(f"Run {shown.run_id} has no saved samples yet: the dashboard "
                                "fills in as they arrive.")
        tables = figures = ""
    else:
        headline = headline_html(view.headline, view.picture)
        tables, figures = _sections_html(view.tables), _figures_html(view)
    return Refresh(headline, tables, figures, annotation_html(shown.annotation),
                   _tables_html([*view.agreement, shown.policy_watch]), view.serial)


def _dashboard(context: UiContext, cache: DashboardCache, run_id: Any, truth: str,
               resamples: Any) -> Dashboard | Refresh:
    """The dashboard's data, or the message shown instead."""
    if run_id in (None, ""):
        return Refresh(message_html("No run yet: start one below, or with "
                                    "\"python -m ragshield run\"."), "", "", "", "", None)
    try:
        return dashboard(context.store, context.tables, cache, run_id, truth, resamples)
    except UserError as error:
        return Refresh(message_html(str(error), "error"), "", "", "", "", None)


def refresh_dashboard(context: UiContext, cache: DashboardCache, run_id: Any, truth: str,
                      resamples: Any) -> Refresh:
    """Everything the dashboard shows of a run; a UserError becomes a message."""
    shown = _dashboard(context, cache, run_id, truth, resamples)
    return shown if isinstance(shown, Refresh) else _rendered(shown)


def training_html(context: UiContext, trainer: JudgeTrainer, dataset: str | None) -> str:
    """Whether the dataset can teach a judge, and each training started here."""
    parts = []
    for training in trainer.trainings():
        if training.error:
            parts.append(message_html(f"trained:{training.key}: {training.error_text}",
                                      "error"))
        elif training.result is not None:
            parts.append(message_html(
                f"trained:{training.key} is ready: {held_out_sentence(training.result.card)}; "
                "choose it as a judge in a run, the Demo or the API."))
        else:
            text = (f"training {training.key} on {training.about}: {training.done} of "
                    f"{training.total or '?'} steps")
            parts.append(f'<div class="rs-run-progress"><div>{esc(text)}</div><progress '
                         f'value="{training.done}" max="{max(training.total, 1)}"></progress>'
                         "</div>")
    if dataset:
        try:
            parts.append(message_html(readiness(context.store, dataset).message()))
        except UserError as error:
            parts.append(message_html(str(error), "error"))
    return "".join(parts)


def start_training(context: UiContext, trainer: JudgeTrainer, dataset: str | None,
                   name: str | None, negatives: bool = False, by: str | None = None) -> str:
    """Start a training from the form (`by`, the login: with logins, an admin's; a trained
    judge a policy reads decides what the guard lets through); its progress shows with the
    next refresh."""
    try:
        require_admin(context.store, context.access, by, "train judges")
        if not dataset:
            raise UserError("choose a dataset")
        trainer.start((name or "").strip(), dataset, hard_negatives=bool(negatives))
    except UserError as error:
        return message_html(str(error), "error")
    return training_html(context, trainer, dataset)


def run_progress_html(launcher: RunLauncher) -> str:
    """A progress bar for each run going on (from the CLI too) and each run started here."""
    parts = []
    for progress in launcher.progress():
        run = progress.run
        failed = f", {run.failures} failed" if run.failures else ""
        text = (f"Run {run.id} ({run.dataset or 'dataset removed'}): {run.status}, {run.done} of "
                f"{run.total} samples{failed}")
        error = message_html(progress.error, "error") if progress.error else ""
        parts.append(f'<div class="rs-run-progress" data-run="{run.id}"><div>{esc(text)}</div>'
                     f'<progress value="{run.done}" max="{max(run.total, 1)}"></progress>'
                     f'{error}</div>')
    return "".join(parts) or message_html("No run is going on.")


def start_run_from_form(context: UiContext, launcher: RunLauncher, dataset: str | None,
                        limit: Any, answerer: str | None, judges: list[str] | None, rule: str,
                        retrieval: str, fallback: bool = False,
                        answers: str | None = "generated", model: str | None = None,
                        switch: bool = False) -> tuple[str, int | None]:
    """(message, new run id or None): the run is recorded and started in the background;
    a bad configuration is a readable message and starts nothing. `answers` "given" judges
    the dataset's own answers (the answerer is not used then)."""
    try:
        config = form_config(context.settings, dataset, limit, answerer, judges, rule,
                             retrieval, fallback, answers, model, switch)
        run_id = launcher.start(config)
    except UserError as error:
        return message_html(str(error), "error"), None
    judging = ", judging its given answers" if config.answerer == GIVEN else ""
    return message_html(f"Run {run_id} started on {dataset}{judging}: its progress shows below "
                        "and the dashboard follows it."), run_id


def answers_note(context: UiContext, dataset: str | None) -> tuple[bool, str]:
    """(whether the dataset carries given answers, the note under the Answers choice)."""
    if not dataset:
        return False, "given answers: choose a dataset that carries them"
    try:
        counted = given_answers(context.store, dataset)
    except UserError:  # a name typed in: the start checks it
        return False, "given answers: choose a dataset that carries them"
    if not counted.given:
        return False, (f"{dataset} carries no given answers (a dataset imported with an "
                       "answer per sample does)")
    return True, (f"{dataset} carries given answers for {counted.given} of {counted.samples} "
                  "samples")


def answers_update(context: UiContext, dataset: str | None, answers: str | None) -> gr.Radio:
    """The Answers choice for the dataset: "given" falls back to generated where the dataset
    carries no given answers."""
    has_given, note = answers_note(context, dataset)
    return gr.Radio(value=answers if has_given else "generated", info=note)


def answer_source_form(answers: str | None) -> tuple[gr.Dropdown, gr.Dropdown]:
    """The answerer and passages boxes for the source of the answers: given answers need no
    answerer and were written from the dataset's own passages."""
    if answers == "given":
        return (gr.Dropdown(interactive=False,
                            info="not used: the dataset's answers are judged as they are"),
                gr.Dropdown(list(RETRIEVAL_CHOICES), value="given", interactive=False,
                            info="given: the passages the given answers were written from"))
    return (gr.Dropdown(interactive=True, info=ANSWERER_INFO),
            gr.Dropdown(interactive=True, info=RETRIEVAL_INFO))


# -- wiring -----------------------------------------------------------------------------------

def followed_form(context: UiContext, shown: RunForm) -> tuple:
    """The start form's rules (policies saved since), and its judges and rule when the
    default changed since the form showed `shown` (a pin or an unpin); what the person
    chose is left alone otherwise."""
    now = form_defaults(context.settings, context.store)
    rules = rule_names(context.store)
    rules += [now.rule] if now.rule not in rules else []  # a pinned version
    if now == shown:
        return gr.skip(), gr.update(choices=rules), gr.skip()
    return gr.CheckboxGroup(value=now.judges), gr.update(choices=rules, value=now.rule), now


def build(context: UiContext, page: gr.Blocks, tab: gr.Tab) -> None:
    """Components and events of the tab (called inside its gr.Tab of `page`, the app's
    Blocks, whose load event fills the tab)."""
    cache = DashboardCache()
    launcher = RunLauncher(context.store, context.settings, jobs=context.jobs)
    trainer = JudgeTrainer(context.store, context.settings, context.jobs)
    settings = context.settings
    defaults = form_defaults(settings, context.store)
    choices = run_choices(context.store)
    with gr.Row():
        # Custom values: runs and datasets made after start-up; the handlers check them.
        run_picker = gr.Dropdown(choices=choices, value=choices[0][1] if choices else None,
                                 allow_custom_value=True,
                                 label="Run", scale=3)
        truth_radio = gr.Radio(list(TRUTHS), value="auto", label="Ground truth",
                               info="human: annotators' majority labels win where there are some")
        resamples_box = gr.Number(value=DEFAULT_RESAMPLES, precision=0, minimum=0,
                                  maximum=MAX_RESAMPLES,
                                  label="Bootstrap resamples (0: no intervals)")
        live_box = gr.Checkbox(value=True, label=f"Live (every {LIVE_SECONDS:g} s)")
        refresh_button = gr.Button("Refresh", scale=0)
    headline_out = gr.HTML(elem_id="dashboard-headline")
    tables_out = gr.HTML(elem_id="dashboard-tables")
    figures_out = gr.HTML(elem_id="dashboard-figures")
    with gr.Row():
        annotation_out = gr.HTML(elem_id="dashboard-annotation")
        agreement_out = gr.HTML(elem_id="dashboard-agreement")
    run_progress = gr.HTML(elem_id="dashboard-runs")
    build_policy_panel(context, run_picker)
    with gr.Accordion("Start a run", open=False):
        with gr.Row():
            names = dataset_names(context.store)
            dataset_box = gr.Dropdown(names, value=names[0] if names else None, label="Dataset",
                                      allow_custom_value=True)
            limit_box = gr.Number(value=20, precision=0, minimum=1, label="Samples (empty: all)")
            answerer_box = gr.Dropdown(list(ANSWERERS), value=settings.answerer, label="Answerer",
                                       info=ANSWERER_INFO)
            retrieval_box = gr.Dropdown(list(RETRIEVAL_CHOICES), value="given", label="Passages",
                                        info=RETRIEVAL_INFO)
        answers_radio = gr.Radio(ANSWER_CHOICES, value="generated", label="Answers",
                                 info=answers_note(context, names[0] if names else None)[1])
        judges_box = gr.CheckboxGroup(judge_choices(context.settings), value=defaults.judges,
                                       label="Judges")
        with gr.Row():
            rule_box = gr.Dropdown(rule_names(context.store), value=defaults.rule,
                                   label="Decision rule", allow_custom_value=True)
            fallback_box = gr.Checkbox(False, label="Also store No-RAG answers (fallback curve)")
            switch_box = gr.Checkbox(False, label="Also store the larger model's answers "
                                                  "(switch curve)")
        with gr.Row():
            model_box = gr.Dropdown(list(MODEL_CHOICES), value=CONFIGURED_MODEL,
                                    label="Answer model", info=MODEL_NOTE)
            start_button = gr.Button("Start run", variant="primary")
        start_message = gr.HTML()
    with gr.Accordion("Train a judge on these labels", open=False):
        gr.Markdown("Learns from the dataset's answerability labels (people's first, then its "
                    "flags) how much to trust cheap signals: the question's names and numbers "
                    "the passages lack, word overlap, a negation, and the packaged MiniLM's "
                    "similarity. It becomes the judge `trained:NAME`, measured on articles it "
                    "did not see (grouped cross-validation); a minute or two on the CPU.")
        with gr.Row():
            train_dataset = gr.Dropdown(names, value=names[0] if names else None,
                                        label="Dataset", allow_custom_value=True)
            train_name = gr.Textbox(label="Judge name (lower case)", placeholder="e.g. my-qpp")
            train_negatives = gr.Checkbox(False, label="Also learn from unanswerable questions "
                                                       "made from the answerable ones")
            train_button = gr.Button("Train judge")
        train_status = gr.HTML(elem_id="dashboard-training")
    timer = gr.Timer(LIVE_SECONDS)
    shown = gr.State(None)  # serial of the view this page shows
    known_runs = gr.State(shown_choices(choices))  # the picker's choices in this page
    known_datasets = gr.State(shown_choices(names))  # the start form's datasets

    def refresh(run_id: Any, truth: str, resamples: Any) -> tuple:
        return tuple(refresh_dashboard(context, cache, run_id, truth, resamples))

    def live_refresh(run_id: Any, truth: str, resamples: Any, shown_serial: int | None) -> tuple:
        """As refresh, leaving alone the parts this page already shows."""
        shown = _dashboard(context, cache, run_id, truth, resamples)
        if isinstance(shown, Refresh):
            return tuple(shown)
        if shown.view.serial == shown_serial:
            return (gr.skip(), gr.skip(), gr.skip(), annotation_html(shown.annotation),
                    gr.skip(), gr.skip())
        return tuple(_rendered(shown))

    def runs_update(run_id: Any, known: list, select: int | None = None, *,
                    force: bool = False) -> tuple:
        """The picker with the store's runs (skipped when this page has them already),
        keeping the chosen run, or selecting `select`."""
        fresh = run_choices(context.store)
        update = gr.update(choices=fresh, value=select if select is not None else
                           pick_run(fresh, run_id))
        return unless_shown(None if force or select is not None else known, update)

    def runs(run_id: Any, known: list) -> tuple:
        return runs_update(run_id, known, force=True)

    def datasets(dataset: str | None, known: list, *, force: bool = True) -> tuple:
        names = dataset_names(context.store)
        update = gr.update(choices=names, value=dataset if dataset in names else (
            names[0] if names else None))
        return unless_shown(None if force else known, update)

    def progress(run_id: Any, known: list) -> tuple:
        return (run_progress_html(launcher), *runs_update(run_id, known))

    def start(run_id: Any, known: list, dataset: str | None, limit: Any, answerer: str,
              judges: list[str] | None, rule: str, retrieval: str, fallback: bool,
              answers: str | None = "generated", model: str | None = None,
              switch: bool = False) -> tuple:
        message, new_run = start_run_from_form(context, launcher, dataset, limit, answerer,
                                               judges, rule, retrieval, fallback, answers,
                                               model, switch)
        return (message, run_progress_html(launcher),
                *runs_update(run_id, known, select=new_run))

    def training_view(dataset: str | None) -> str:
        return training_html(context, trainer, dataset)

    def train(dataset: str | None, name: str | None, negatives: bool,
              request: gr.Request) -> str:
        return start_training(context, trainer, dataset, name, negatives,
                              getattr(request, "username", None))

    view_inputs = [run_picker, truth_radio, resamples_box]
    view_outputs = [headline_out, tables_out, figures_out, annotation_out, agreement_out, shown]
    picker = [run_picker, known_runs]
    gr.on([page.load, refresh_button.click, run_picker.change, truth_radio.change,
           resamples_box.submit], refresh, view_inputs, view_outputs,
          api_name="dashboard_refresh", trigger_mode="always_last")
    refresh_button.click(runs, picker, picker, api_name="dashboard_runs")
    gr.on([page.load, tab.select], runs_update, picker, picker, api_visibility="private")
    timer.tick(live_refresh, [*view_inputs, shown], view_outputs,
               api_name="dashboard_live_refresh", trigger_mode="always_last",
               show_progress="hidden")
    gr.on([page.load, timer.tick], progress, picker, [run_progress, *picker],
          api_name="dashboard_progress", trigger_mode="always_last", show_progress="hidden")
    datasets_picker = [dataset_box, known_datasets]
    refresh_button.click(datasets, datasets_picker, datasets_picker,
                         api_name="dashboard_datasets")
    gr.on([page.load, tab.select], partial(datasets, force=False), datasets_picker,
          datasets_picker, api_visibility="private").then(
        lambda dataset, answers: answers_update(context, dataset, answers),
        [dataset_box, answers_radio], answers_radio, api_visibility="private")
    dataset_box.change(lambda dataset, answers: answers_update(context, dataset, answers),
                       [dataset_box, answers_radio], answers_radio,
                       api_name="dashboard_answers", api_visibility="private",
                       trigger_mode="always_last", show_progress="hidden")
    answers_radio.change(answer_source_form, answers_radio, [answerer_box, retrieval_box],
                         api_name="dashboard_answer_source", api_visibility="private")
    live_box.change(lambda on: gr.Timer(active=on), live_box, timer, api_name="dashboard_live")
    gr.on([page.load, train_dataset.change, timer.tick], training_view, train_dataset,
          train_status, api_name="dashboard_training", api_visibility="private",
          trigger_mode="always_last", show_progress="hidden")
    train_button.click(train, [train_dataset, train_name, train_negatives], train_status,
                       api_name="dashboard_train_judge", api_visibility="private")
    # Newer choices come last, so that callers of the API from before them still work (a
    # missing argument is the form's default).
    start_button.click(start, [*picker, dataset_box, limit_box, answerer_box, judges_box, rule_box,
                               retrieval_box, fallback_box, answers_radio, model_box,
                               switch_box],
                       [start_message, run_progress, *picker], api_name="dashboard_start_run")
    form_shown = gr.State(defaults)  # the defaults the start form shows
    gr.on([page.load, tab.select], lambda shown: followed_form(context, shown), form_shown,
          [judges_box, rule_box, form_shown], api_visibility="private")
