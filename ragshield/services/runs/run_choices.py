"""The runs a picker offers, labelled the same way in every tab and command.

A label names the run, its dataset and its status, and leaves the sample counts out: the
pickers are refreshed while runs go on, and a label that changed with every answer would
redraw an open dropdown each time (the progress has its own view)."""

from __future__ import annotations

from ragshield.store.database import Store
from ragshield.store.runs import RunSummary, list_runs

ALL_DATASETS = "all datasets"
RunChoice = tuple[str, int]  # (label, run id), as a Gradio dropdown takes them


def run_label(run: RunSummary) -> str:
    name = f" {run.name}" if run.name else ""
    return f"#{run.id}{name} · {run.dataset or '(dataset removed)'} · {run.status}"


def newest_runs(store: Store, dataset: str | None = None) -> list[RunSummary]:
    """The runs (of `dataset`, or of every dataset for None or ALL_DATASETS), newest
    first."""
    runs = sorted(list_runs(store), key=lambda run: run.id, reverse=True)
    if dataset in (None, ALL_DATASETS):
        return runs
    return [run for run in runs if run.dataset == dataset]


def run_choices(store: Store, dataset: str | None = None) -> list[RunChoice]:
    """(label, id) of the runs of `dataset` (None or ALL_DATASETS: of every dataset),
    newest first."""
    return [(run_label(run), run.id) for run in newest_runs(store, dataset)]


def datasets_with_runs(store: Store) -> list[str]:
    """The datasets that have at least one run, sorted by name."""
    return sorted({run.dataset for run in list_runs(store) if run.dataset})


def pick_run(choices: list[RunChoice], current: int | str | None) -> int | None:
    """`current` (a run id, or its digits as text) while it is among `choices`, else the
    first (newest) choice, else None."""
    ids = [run_id for _, run_id in choices]
    text = str(current if current is not None else "").strip()
    chosen = int(text) if text.isdigit() else None
    return chosen if chosen in ids else (ids[0] if ids else None)
