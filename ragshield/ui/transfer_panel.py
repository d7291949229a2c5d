"""The Data tab's "Results out" panel: download the label history, a run as a bundle, a
run's report or a policy, and upload a policy file or a run bundle made elsewhere. The files
are made and read by ragshield.services.data.downloads (through the services the CLI's export
and import commands call); this module wires them to Gradio components and says what
happened. The Data tab calls `build` inside its accordion."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, NamedTuple

import gradio as gr

from ragshield.errors import UserError
from ragshield.services.annotation.people import notes_shown_to, require_admin
from ragshield.services.data.datasets import dataset_names
from ragshield.services.data.downloads import (ALL_DATASETS, PolicyChoice, labels_download,
                                               policy_choices, policy_download, report_download,
                                               run_bundle_download, upload_policy, upload_run,
                                               upload_sentence_labels)
from ragshield.services.runs.run_choices import RunChoice, pick_run, run_choices
from ragshield.services.runs.run_tables import TRUTHS
from ragshield.ui.context import UiContext
from ragshield.ui.html_render import message_html
from ragshield.ui.picker_refresh import shown_choices, unless_shown

TITLE = "Results out"
CSS = """
.rs-transfer h3 { font-size: 1em; margin: 0.8em 0 0.2em; }
"""
HEAD = ""

FORMAT_CHOICES = [("CSV", "csv"), ("JSONL", "jsonl"), ("Parquet", "parquet")]
NO_RUNS = "No run yet: start one in the Dashboard tab, or upload a run bundle below."
NO_POLICIES = "No policy yet: fit one with \"python -m ragshield policy fit\", or upload one."
Offered = tuple[str | None, str]  # (file for the download box or None, message HTML)


class Choices(NamedTuple):
    """What the panel's pickers offer, read from the store when the page loads or is
    refreshed."""

    runs: list[RunChoice]
    datasets: list[str]
    policies: list[PolicyChoice]


def choices(context: UiContext) -> Choices:
    return Choices(run_choices(context.store), [ALL_DATASETS, *dataset_names(context.store)],
                   policy_choices(context.store))


def _offered(make: Callable[[], tuple[Path, str]]) -> Offered:
    """(the file made, a line saying what it holds), or no file and the error."""
    try:
        path, text = make()
    except UserError as error:
        return None, message_html(str(error), "error")
    return str(path), message_html(text)


def download_labels(context: UiContext, dataset: str | None, format: str,
                    by: str | None = None, sentences: bool = False) -> Offered:
    """Every label version of the dataset (or of all), as `ragshield labels export`; with
    logins, an annotator gets their own notes only. `sentences`: the sentence labels."""
    notes_of = notes_shown_to(context.store, context.access, by)

    def make() -> tuple[Path, str]:
        path, rows = labels_download(context.store, format, dataset, notes_of,
                                     sentences=bool(sentences))
        if sentences:
            return path, f"{path.name}: {rows} sentence label rows (every version)."
        notes = "" if notes_of is None else "; the notes are your own only"
        return path, f"{path.name}: {rows} label rows (every version, oldest first{notes})."
    return _offered(make)


def import_sentence_label_file(context: UiContext, path: str | None, dataset: str | None,
                               by: str | None = None) -> str:
    """Import an uploaded sentence label file (with logins, an admin's action)."""
    try:
        require_admin(context.store, context.access, by, "upload labels")
        added, present = upload_sentence_labels(context.store, path, dataset)
    except UserError as error:
        return message_html(str(error), "error")
    return message_html(f"{_upload_name(path)}: {added} sentence label rows added, {present} "
                        "already there.")


def download_run(context: UiContext, run_id: Any, calls: bool) -> Offered:
    """The run as a bundle to import elsewhere, with the LLM calls if asked."""
    def make() -> tuple[Path, str]:
        path = run_bundle_download(context.store, run_id, calls=bool(calls))
        held = " with every LLM call this database holds" if calls else ""
        return path, (f"{path.name}{held}: {path.stat().st_size:,} bytes; import it with the "
                      "upload below or \"python -m ragshield runs import\".")
    return _offered(make)


def download_report(context: UiContext, run_id: Any, truth: str) -> Offered:
    """The run's report: a zip of report.html with its figures, report.md and metrics."""
    def make() -> tuple[Path, str]:
        path = report_download(context.store, context.settings, run_id, truth=truth)
        return path, (f"{path.name}: open report.html inside; its figures are the PNG files "
                      "beside it.")
    return _offered(make)


def download_policy(context: UiContext, rule: str | None) -> Offered:
    """The chosen policy version as JSON, as `ragshield policy export`."""
    def make() -> tuple[Path, str]:
        path, policy = policy_download(context.store, rule)
        return path, f"{path.name}: {policy.rule}, judge {policy.source}."
    return _offered(make)


def _upload_name(path: str | None) -> str:
    return Path(path).name if path else ""


def import_policy_file(context: UiContext, path: str | None, by: str | None = None) -> str:
    """Store an uploaded policy file as the next version of its name (with logins, an
    admin's action)."""
    try:
        require_admin(context.store, context.access, by, "upload policies")
        policy = upload_policy(context.store, path)
    except UserError as error:
        return message_html(str(error), "error")
    return message_html(f"{_upload_name(path)}: stored as policy {policy.name}, version "
                        f"{policy.version} ({policy.rule}).")


def import_run_file(context: UiContext, path: str | None, by: str | None = None) -> str:
    """Add the run of an uploaded bundle (with logins, an admin's action)."""
    try:
        require_admin(context.store, context.access, by, "upload runs")
        imported = upload_run(context.store, path)
    except UserError as error:
        return message_html(str(error), "error")
    return message_html(f"{_upload_name(path)}: imported as run {imported.run_id} on dataset "
                        f"{imported.dataset or '(none)'} with {imported.samples} answered "
                        "samples; the Browse and Dashboard tabs show it.")


# -- wiring -----------------------------------------------------------------------------------

def pickers_update(context: UiContext, bundle_run: Any, report_run: Any,
                   dataset: str | None, rule: str | None, shown: list | None = None) -> tuple:
    """The four pickers (bundle's run, report's run, labels' dataset, policy) with the
    store's choices, each keeping its choice where it is still there (skipped where the
    page `shown` them already); a note when there is no run or policy; the choices shown."""
    fresh = choices(context)
    rules = [value for _, value in fresh.policies]
    notes = ([NO_RUNS] if not fresh.runs else []) + ([NO_POLICIES] if not rules else [])
    *updates, now = unless_shown(
        shown,
        gr.update(choices=fresh.runs, value=pick_run(fresh.runs, bundle_run)),
        gr.update(choices=fresh.runs, value=pick_run(fresh.runs, report_run)),
        gr.update(choices=fresh.datasets,
                  value=dataset if dataset in fresh.datasets else ALL_DATASETS),
        gr.update(choices=fresh.policies,
                  value=rule if rule in rules else (rules[0] if rules else None)))
    return (*updates, "".join(message_html(note) for note in notes), now)


def build(context: UiContext, page: gr.Blocks) -> None:
    """Components and events of the panel (called inside the Data tab's accordion; the
    page's load event and the Refresh button fill the pickers)."""
    with gr.Column(elem_classes="rs-transfer"):
        with gr.Row():
            gr.Markdown("Download labels, runs, reports and policies, or upload a policy or "
                        "a run made in another database. The files are the same as the "
                        "command line's `export` commands write.")
            refresh_button = gr.Button("Refresh", scale=0)
        notes = gr.HTML()
        gr.HTML("<h3>Labels</h3>")
        with gr.Row():
            labels_dataset = gr.Dropdown([ALL_DATASETS], value=ALL_DATASETS, label="Dataset")
            labels_format = gr.Radio(FORMAT_CHOICES, value="csv", label="Format",
                                     info="CSV cells that a spreadsheet would run as formulas "
                                          "start with an apostrophe")
            labels_sentences = gr.Checkbox(False, label="Sentence labels",
                                           info="what people said of each sentence")
            labels_button = gr.Button("Prepare labels", scale=0)
        labels_file = gr.File(label="Labels file", interactive=False)
        labels_message = gr.HTML()
        with gr.Row():
            sentences_upload = gr.File(
                label="A sentence label file (labels export --sentences, one label a row, or "
                      "LFQA-Verification rows; rows naming no dataset go to the one picked "
                      "above)", file_types=[".csv", ".jsonl", ".parquet"], type="filepath")
            sentences_import = gr.Button("Import sentence labels", scale=0)
        sentences_message = gr.HTML()
        gr.HTML("<h3>A run</h3>")
        with gr.Row():
            bundle_run = gr.Dropdown([], label="Run", allow_custom_value=True, scale=3)
            bundle_calls = gr.Checkbox(False, label="Include the LLM calls",
                                       info="every call this database holds, so that the run "
                                            "replays where it is imported")
            bundle_button = gr.Button("Prepare bundle", scale=0)
        bundle_file = gr.File(label="Run bundle (.json.xz)", interactive=False)
        bundle_message = gr.HTML()
        gr.HTML("<h3>A run's report</h3>")
        with gr.Row():
            report_run = gr.Dropdown([], label="Run", allow_custom_value=True, scale=3)
            report_truth = gr.Radio(list(TRUTHS), value="auto", label="Ground truth",
                                    info="human: annotators' majority labels win where there "
                                         "are some")
            report_button = gr.Button("Prepare report", scale=0)
        report_file = gr.File(label="Report (.zip: report.html and its figures)",
                              interactive=False)
        report_message = gr.HTML()
        gr.HTML("<h3>A policy</h3>")
        with gr.Row():
            policy_rule = gr.Dropdown([], label="Policy and version", scale=3)
            policy_button = gr.Button("Prepare policy", scale=0)
        policy_file = gr.File(label="Policy (.json)", interactive=False)
        policy_message = gr.HTML()
        gr.HTML("<h3>Upload</h3>")
        with gr.Row():
            with gr.Column():
                policy_upload = gr.File(label="A policy file (policy export)",
                                        file_types=[".json"], type="filepath")
                policy_import = gr.Button("Import policy")
                policy_upload_message = gr.HTML()
            with gr.Column():
                run_upload = gr.File(label="A run bundle (runs export)", file_types=[".xz"],
                                     type="filepath")
                run_import = gr.Button("Import run")
                run_upload_message = gr.HTML()

    shown = gr.State(shown_choices([], [], [ALL_DATASETS], []))  # the pickers' choices
    pickers = [bundle_run, report_run, labels_dataset, policy_rule, notes, shown]
    picker_inputs = pickers[:4]

    def refresh(*chosen: Any) -> tuple:  # with the choices shown last: skipped if the same
        return pickers_update(context, *chosen)

    def with_pickers(handler: Callable[[UiContext, str | None, str | None], str]
                     ) -> Callable[..., tuple]:
        """An upload's handler (told who uploads), followed by the pickers (a new run or
        policy version)."""
        def handle(path: str | None, request: gr.Request, *chosen: Any) -> tuple:
            return (handler(context, path, getattr(request, "username", None)),
                    *pickers_update(context, *chosen))
        return handle

    refresh_button.click(refresh, picker_inputs, pickers, api_name="transfer_choices",
                         api_visibility="private")
    page.load(refresh, [*picker_inputs, shown], pickers, api_visibility="private")
    def labels(dataset: str | None, format: str, sentences: bool,
               request: gr.Request) -> Offered:
        return download_labels(context, dataset, format, getattr(request, "username", None),
                               sentences)

    def sentence_labels(path: str | None, dataset: str | None, request: gr.Request) -> str:
        return import_sentence_label_file(context, path, dataset,
                                          getattr(request, "username", None))

    labels_button.click(labels, [labels_dataset, labels_format, labels_sentences],
                        [labels_file, labels_message], api_name="transfer_labels",
                        api_visibility="private")
    sentences_import.click(sentence_labels, [sentences_upload, labels_dataset],
                           sentences_message, api_name="transfer_import_sentence_labels",
                           api_visibility="private")
    bundle_button.click(lambda run_id, calls: download_run(context, run_id, calls),
                        [bundle_run, bundle_calls], [bundle_file, bundle_message],
                        api_name="transfer_run", api_visibility="private")
    report_button.click(lambda run_id, truth: download_report(context, run_id, truth),
                        [report_run, report_truth], [report_file, report_message],
                        api_name="transfer_report", api_visibility="private")
    policy_button.click(lambda rule: download_policy(context, rule), policy_rule,
                        [policy_file, policy_message], api_name="transfer_policy",
                        api_visibility="private")
    policy_import.click(with_pickers(import_policy_file), [policy_upload, *picker_inputs],
                        [policy_upload_message, *pickers], api_name="transfer_import_policy",
                        api_visibility="private")
    run_import.click(with_pickers(import_run_file), [run_upload, *picker_inputs],
                     [run_upload_message, *pickers], api_name="transfer_import_run",
                     api_visibility="private")
