"""The Data tab: a dataset file uploaded (any format `ragshield datasets import` reads, with a
column mapping for CSV, JSON lines and Parquet, remembered per dataset), checked before it is
imported (what would be added, updated, left unchanged), then imported all or nothing; the
datasets listed, renamed and deleted after a confirmation that names what goes with them;
and, below, the panel that moves labels, runs, reports and policies in and out.

Handlers are plain functions of the UiContext and the form's values (tested without a
browser); the use cases are ragshield.services.data.uploads and ragshield.services.data.datasets.
The file's name comes from whoever uploads it: it is escaped wherever it is shown."""

from __future__ import annotations

import json
from typing import Any, Iterable, Iterator, NamedTuple

import gradio as gr

from ragshield.errors import UserError
from ragshield.services.annotation.people import caller_may_manage, require_admin
from ragshield.services.data.column_mappings import MAPPED_FIELDS
from ragshield.services.data.datasets import (DatasetUsage, dataset_listing, dataset_names,
                                              delete_as_previewed, deletion_preview,
                                              rename_dataset)
from ragshield.services.data.uploads import (DETECT, FORMAT_CHOICES, ImportPlan, Progress, Upload,
                                             UploadLimits, UploadRequest, open_upload, plan_import,
                                             preview, run_import, suggested_dataset,
                                             suggested_mapping, upload_request)
from ragshield.types import Sample
from ragshield.ui import transfer_panel
from ragshield.ui.context import UiContext
from ragshield.ui.html_render import message_html, table_html
from ragshield.ui.picker_refresh import datasets_unless_shown, shown_choices, unless_shown

TITLE = "Data"
CSS = """
.rs-data-preview { max-height: 18em; overflow: auto; }
""" + transfer_panel.CSS
HEAD = ""

FILE_TYPES = [".json", ".jsonl", ".ndjson", ".csv", ".parquet", ".gz", ".bz2"]
CELL_CHARACTERS = 120  # of a preview cell
NOT_SET = ""  # a mapping dropdown left at its default
NO_FILE = "Upload a dataset file to check and import it."
ADMINS_ONLY = "Only an administrator may delete datasets."


def may_manage(context: UiContext, request: Any) -> bool:
    """Whether the person behind `request` may delete datasets: anyone when the app runs
    without logins, else only an admin (services/annotation/people.py)."""
    return caller_may_manage(context.store, context.access, getattr(request, "username", None))


# -- rendering ------------------------------------------------------------------------------

def _cell(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str,
                                                           ensure_ascii=False)
    return text if len(text) <= CELL_CHARACTERS else text[:CELL_CHARACTERS - 1] + "…"


def _n(count: int, noun: str) -> str:
    """`1 sample`, `2 samples`."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def listing_html(context: UiContext) -> str:
    """Every dataset with its counts, source and licence."""
    rows = [[d.summary.name, d.summary.samples, d.summary.answerable, d.summary.unanswerable,
             d.summary.unlabelled, d.source or "", d.license or ""]
            for d in dataset_listing(context.store)]
    return table_html(["dataset", "samples", "answerable", "unanswerable", "not known",
                       "source", "licence"], rows, table_id="data-datasets")


def plan_html(plan: ImportPlan) -> str:
    request, result = plan.request, plan.result
    target = "the new dataset" if result.samples == result.added else "dataset"
    text = (f"Importing {request.upload.name} ({request.upload.format}) into {target} "
            f"{request.dataset!r} would add {_n(result.added, 'sample')}, update "
            f"{result.updated} and leave {result.unchanged} unchanged.")
    if result.missing:
        text += f" Samples of the dataset that the file lacks, kept as they are: {result.missing}."
    if plan.given_answers:
        text += f" Samples with an answer given by another system: {plan.given_answers}."
    return message_html(text + " Nothing is written until you press Import.")


def usage_text(usage: DatasetUsage) -> str:
    """What deleting a dataset takes with it, for a person to confirm."""
    runs = (f"{_n(len(usage.runs), 'run')} ({', '.join(f'#{r}' for r in usage.runs)}) with "
            "their answers and verdicts" if usage.runs else "no runs")
    return (f"Delete dataset {usage.dataset!r} for good? It goes with "
            f"{_n(usage.samples, 'sample')} ({_n(usage.passages, 'passage')}), "
            f"{_n(usage.labels, 'label')} by {_n(usage.annotators, 'annotator')}, and {runs}. "
            "Press \"Yes, delete\" to confirm.")


# -- handlers -------------------------------------------------------------------------------

class FileView(NamedTuple):
    info: str  # HTML: the file and its format, or why it cannot be read
    upload: Upload | None
    dataset: str | None  # the one asked for, else a name made from the file's
    columns: list[str]  # a generic format's columns ([] for the others)
    mapping: dict[str, str]  # the dropdowns' values: the dataset's saved mapping
    preview: str  # HTML: the first rows of a generic format


def file_view(context: UiContext, file: str | None, format_choice: str | None,
              dataset: str | None) -> FileView:
    """The uploaded file: its format and, for a generic one, its columns, first rows and
    the mapping saved for `dataset`."""
    if not file:
        return FileView(message_html(NO_FILE), None, dataset, [], {}, "")
    try:
        upload = open_upload(file, format_choice, UploadLimits.of(context.settings))
        dataset = dataset if dataset and dataset.strip() else suggested_dataset(upload)
        if not upload.takes_mapping:
            return FileView(message_html(f"{upload.name}: format {upload.format}."),
                            upload, dataset, [], {}, "")
        table = preview(upload)
    except UserError as exc:
        return FileView(message_html(str(exc), "error"), None, dataset, [], {}, "")
    rows = [[_cell(row.get(column)) for column in table.columns] for row in table.rows]
    return FileView(
        message_html(f"{upload.name}: format {upload.format}. Choose the columns below; a "
                     "field left at its default reads the column of its own name."),
        upload, dataset, table.columns, suggested_mapping(context.store, dataset, table.columns),
        f'<div class="rs-data-preview">{table_html(table.columns, rows)}</div>')


def _request(context: UiContext, file: str | None, format_choice: str | None,
             dataset: str | None, mapping: list[str | None]) -> UploadRequest:
    if not file:
        raise UserError(NO_FILE)
    upload = open_upload(file, format_choice, UploadLimits.of(context.settings))
    return upload_request(upload, dataset, dict(zip(MAPPED_FIELDS, mapping)))


def check_upload(context: UiContext, file: str | None, format_choice: str | None,
                 dataset: str | None, mapping: list[str | None],
                 progress: Progress | None = None) -> tuple[str, ImportPlan | None]:
    """What importing the form would do (HTML), and the plan that Import then carries out."""
    if not file:
        return message_html(NO_FILE), None
    try:
        request = _request(context, file, format_choice, dataset, mapping)
        plan = plan_import(context.store, request, UploadLimits.of(context.settings), progress)
    except UserError as exc:
        return message_html(str(exc), "error"), None
    return plan_html(plan), plan


def import_upload(context: UiContext, file: str | None, format_choice: str | None,
                  dataset: str | None, mapping: list[str | None], plan: ImportPlan | None,
                  progress: Progress | None = None, login: str | None = None) -> str:
    """Import the form's file as checked by `plan`; refused when the form changed since.
    With logins, an admin's action (it may rewrite samples people have labelled)."""
    try:
        require_admin(context.store, context.access, login, "import datasets")
        request = _request(context, file, format_choice, dataset, mapping)
        if plan is None or plan.request != request:
            return message_html("Check the file first: the form changed since it was "
                                "checked.", "warning")
        result = run_import(context.store, request, UploadLimits.of(context.settings),
                            progress, by=login)
    except UserError as exc:
        return message_html(f"Nothing was imported. {exc}", "error")
    return message_html(f"Imported {request.upload.name} into dataset {result.dataset!r}: "
                        f"{_n(result.added, 'sample')} added, {result.updated} updated, "
                        f"{result.unchanged} unchanged; {result.samples} in all.")


def rename(context: UiContext, old: str | None, new: str | None,
           login: str | None = None) -> tuple[str, str | None]:
    """The outcome (HTML) and the dataset's name after it (with logins, an admin's action)."""
    if not old:
        return message_html("Choose a dataset to rename.", "warning"), None
    try:
        require_admin(context.store, context.access, login, "rename datasets")
        name = rename_dataset(context.store, old, new or "")
    except UserError as exc:
        return message_html(str(exc), "error"), old
    return message_html(f"Dataset {old!r} is now {name!r}; its runs and labels came "
                        "along."), name


def delete_preview(context: UiContext, name: str | None,
                   request: Any) -> tuple[str, DatasetUsage | None]:
    """The confirmation to show (HTML) and what it names, or why there is none."""
    if not may_manage(context, request):
        return message_html(ADMINS_ONLY, "error"), None
    if not name:
        return message_html("Choose a dataset to delete.", "warning"), None
    try:
        usage = deletion_preview(context.store, name, force=True)
    except UserError as exc:
        return message_html(str(exc), "error"), None
    return message_html(usage_text(usage), "warning"), usage


def delete_confirmed(context: UiContext, name: str | None, usage: DatasetUsage | None,
                     request: Any) -> str:
    """Delete the dataset whose deletion `usage` showed."""
    if not may_manage(context, request):
        return message_html(ADMINS_ONLY, "error")
    if not name or usage is None or usage.dataset != name:
        return message_html("Press Delete first to see what goes with the dataset.", "warning")
    try:
        deleted = delete_as_previewed(context.store, name, usage)
    except UserError as exc:
        return message_html(str(exc), "error")
    return message_html(f"Deleted dataset {name!r} with {_n(deleted.samples, 'sample')}, "
                        f"{_n(deleted.labels, 'label')} and {_n(len(deleted.runs), 'run')}.")


# -- the tab --------------------------------------------------------------------------------

def tracked(progress: gr.Progress, desc: str, total: int | None = None) -> Progress:
    """Samples counted on the page's progress bar, through a generator: Gradio's tracker,
    asked for an item once it is done (as the import's batched read does), raises
    IndexError instead of StopIteration."""
    def track(samples: Iterable[Sample]) -> Iterator[Sample]:
        yield from progress.tqdm(samples, desc=desc, total=total, unit="samples")
    return track


def _mapping_boxes(view: FileView) -> list[gr.Dropdown]:
    return [gr.Dropdown(choices=[("(default)", NOT_SET), *view.columns],
                        value=view.mapping.get(field, NOT_SET)) for field in MAPPED_FIELDS]


def build(context: UiContext, page: gr.Blocks, tab: gr.Tab) -> None:
    gr.Markdown("Upload a dataset file, check what importing it would change, and import it "
                "all or nothing. Rows may carry the answer another system gave (`answer`). "
                "With logins, only an admin uploads files (here and below).")
    with gr.Row():
        file_box = gr.File(label="Dataset file", file_types=FILE_TYPES, type="filepath",
                           elem_id="data-file")
        with gr.Column():
            format_box = gr.Dropdown(FORMAT_CHOICES, value=DETECT, label="Format")
            dataset_box = gr.Dropdown([], value=None, allow_custom_value=True,
                                      label="Into dataset (a new name, or an existing one)")
    file_info = gr.HTML(message_html(NO_FILE), elem_id="data-file-info")
    with gr.Group(visible=False) as mapping_group:
        with gr.Row():
            mapping_boxes = [gr.Dropdown([("(default)", NOT_SET)], value=NOT_SET, label=field,
                                         min_width=120) for field in MAPPED_FIELDS]
        preview_out = gr.HTML(elem_id="data-preview")
    with gr.Row():
        check_button = gr.Button("Check the file")
        import_button = gr.Button("Import", variant="primary")
    plan_out = gr.HTML(elem_id="data-plan")
    plan_state = gr.State(None)
    readable_state = gr.State(False)  # whether the file shown could be read

    gr.Markdown("### Datasets")
    listing_out = gr.HTML(elem_id="data-datasets-list")
    with gr.Row():
        manage_box = gr.Dropdown([], value=None, label="Dataset")
        new_name_box = gr.Textbox(label="New name")
        rename_button = gr.Button("Rename")
        delete_button = gr.Button("Delete…", variant="stop")
    manage_out = gr.HTML(elem_id="data-manage")
    with gr.Row(visible=False) as confirm_row:
        confirm_button = gr.Button("Yes, delete", variant="stop")
        cancel_button = gr.Button("Cancel")
    usage_state = gr.State(None)
    shown_datasets = gr.State(shown_choices([], []))  # of dataset_box and manage_box

    with gr.Accordion("Results out", open=True):
        transfer_panel.build(context, page)

    def on_file(file, format_choice, dataset) -> tuple:
        view = file_view(context, file, format_choice, dataset)
        return (view.info, view.dataset, gr.Group(visible=bool(view.columns)),
                *_mapping_boxes(view), view.preview, "", None, view.upload is not None)

    def after_file(readable, file, format_choice, dataset, *mapping,
                   progress=gr.Progress()) -> tuple:
        """The check of a file just read (its error is shown once, above)."""
        if not readable:
            return gr.skip(), gr.skip()
        return on_check(file, format_choice, dataset, *mapping, progress=progress)

    def on_check(file, format_choice, dataset, *mapping, progress=gr.Progress()) -> tuple:
        return check_upload(context, file, format_choice, dataset, list(mapping),
                            tracked(progress, "checking"))

    def on_import(file, format_choice, dataset, plan, request: gr.Request, *mapping,
                  progress=gr.Progress()) -> tuple:  # Gradio puts `request` in its place
        total = None if plan is None else plan.rows
        message = import_upload(
            context, file, format_choice, dataset, list(mapping), plan,
            tracked(progress, "importing", total),
            getattr(request, "username", None))
        return (message, None, *lists())

    def lists(selected: str | None = None) -> tuple:
        names = dataset_names(context.store)
        return (listing_html(context), *unless_shown(
            None, gr.update(choices=names),
            gr.update(choices=names, value=selected if selected in names else None)))

    def on_open(shown: list) -> tuple:
        return (listing_html(context),
                *datasets_unless_shown(context.store, shown, pickers=2))

    def on_rename(old, new, request: gr.Request) -> tuple:
        message, name = rename(context, old, new, getattr(request, "username", None))
        return (message, *lists(name))

    def on_delete(name, request: gr.Request) -> tuple:
        message, usage = delete_preview(context, name, request)
        return message, usage, gr.Row(visible=usage is not None)

    def on_confirm(name, usage, request: gr.Request) -> tuple:
        return (delete_confirmed(context, name, usage, request), None, gr.Row(visible=False),
                *lists())

    file_inputs = [file_box, format_box, dataset_box]
    file_outputs = [file_info, dataset_box, mapping_group, *mapping_boxes, preview_out,
                    plan_out, plan_state, readable_state]
    lists_outputs = [listing_out, dataset_box, manage_box, shown_datasets]
    private: dict[str, Any] = {"api_visibility": "private"}
    gr.on([page.load, tab.select], on_open, shown_datasets, lists_outputs,
          api_name="data_lists", **private)
    gr.on([file_box.change, format_box.input], on_file, file_inputs, file_outputs,
          api_name="data_file", **private).then(
        after_file, [readable_state, *file_inputs, *mapping_boxes], [plan_out, plan_state],
        **private)
    check_button.click(on_check, [*file_inputs, *mapping_boxes],
                       [plan_out, plan_state], api_name="data_check", **private)
    import_button.click(on_import, [*file_inputs, plan_state, *mapping_boxes],
                        [plan_out, plan_state, *lists_outputs], api_name="data_import",
                        concurrency_limit=1, **private)
    rename_button.click(on_rename, [manage_box, new_name_box], [manage_out, *lists_outputs],
                        api_name="data_rename", **private)
    delete_button.click(on_delete, manage_box, [manage_out, usage_state, confirm_row],
                        api_name="data_delete", **private)
    confirm_button.click(on_confirm, [manage_box, usage_state],
                         [manage_out, usage_state, confirm_row, *lists_outputs],
                         api_name="data_delete_confirm", **private)
    cancel_button.click(lambda: ("", None, gr.Row(visible=False)), None,
                        [manage_out, usage_state, confirm_row], **private)
    manage_box.input(lambda: ("", None, gr.Row(visible=False)), None,
                     [manage_out, usage_state, confirm_row], **private)
