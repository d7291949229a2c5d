"""The files the app hands out (the label history, a run bundle, a run's report, a policy)
and takes in (a policy file, a run bundle), each made or read by the service that the
CLI's command calls (`labels export`, `runs export` / `runs import`, `report`, `policy
export` / `policy import`), so that a file from the app and one from the command are alike.

Each download is written into a fresh temporary folder of its own, under a name that says
what it holds; Gradio copies it into its own cache as it answers, so folders of this kind
older than KEEP_SECONDS are removed as new ones are made. An upload is untrusted: one larger
than TRANSFER_MAX_BYTES is refused before it is read, and messages name the file by its own
name, never by the server folder where the upload waits.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Collection

from ragshield.config import Settings
from ragshield.errors import UserError
from ragshield.policies.policy import Policy
from ragshield.services.annotation.labelling import export_labels
from ragshield.services.annotation.sentence_labelling import (export_sentence_labels,
                                                           import_sentence_label_file)
from ragshield.services.data.run_bundles import export_run, import_run
from ragshield.services.data.uploads import UploadTooLargeError, by_own_name
from ragshield.services.defaults import TRANSFER_MAX_BYTES, TRANSFER_MAX_UNPACKED
from ragshield.services.form_values import whole_number
from ragshield.services.learning.policies import (export_policy, import_policy, list_policies,
                                                  named_policy)
from ragshield.services.runs.metric_views import write_run_report
from ragshield.services.runs.run_choices import ALL_DATASETS, newest_runs
from ragshield.store.database import Store

FOLDER_PREFIX = "ragshield-download-"
KEEP_SECONDS = 3600.0  # a download's folder outlives the answer that handed it out by this
PolicyChoice = tuple[str, str]  # (label, policy:NAME@VERSION), as a Gradio dropdown takes them


@dataclass(frozen=True)
class ImportedRun:
    """A run added from a bundle: its id here, its dataset and its answered samples."""

    run_id: int
    dataset: str | None
    samples: int


def fresh_folder() -> Path:
    """A new, empty folder for one request's file, after removing the folders of this kind
    older than KEEP_SECONDS (folders of other users or links are left alone)."""
    cutoff = time.time() - KEEP_SECONDS
    for old in Path(tempfile.gettempdir()).glob(FOLDER_PREFIX + "*"):
        try:
            if not old.is_symlink() and old.is_dir() and old.stat().st_mtime < cutoff:
                shutil.rmtree(old, ignore_errors=True)
        except OSError:
            continue
    return Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX))


def _file_part(name: str) -> str:
    """`name` (any printable text) as a safe part of a file name."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.")[:60] or "unnamed"


def _run_id(value: Any) -> int:
    if value is None or str(value).strip() == "":
        raise UserError("choose a run first")
    return whole_number(value, "run", minimum=1)


def labels_download(store: Store, format: str, dataset: str | None = None,
                    notes_of: Collection[str] | None = None, *,
                    sentences: bool = False) -> tuple[Path, int]:
    """The label history of `dataset` (None or ALL_DATASETS: of every dataset) in `format`
    (csv, jsonl, parquet), the file `ragshield labels export` writes, with the notes of
    `notes_of` only (None: everyone's; people.notes_shown_to); with `sentences`, the
    sentence labels (`labels export --sentences`, which hold no notes); (file, rows)."""
    chosen = _dataset_chosen(dataset)
    if not isinstance(format, str):  # a client of the endpoint sent none (or a number)
        raise UserError(f"format must be csv, jsonl or parquet, got {format!r}")
    kind = "sentence-labels" if sentences else "labels"
    name = f"{kind}-{_file_part(chosen) if chosen else 'all'}.{_file_part(format)}"
    path = fresh_folder() / name
    if sentences:
        return path, export_sentence_labels(store, path, format, chosen)
    return path, export_labels(store, path, format, chosen, notes_of)


def _dataset_chosen(dataset: str | None) -> str | None:
    return None if dataset in (None, "", ALL_DATASETS) else dataset


def upload_sentence_labels(store: Store, path: Path | str | None,
                           dataset: str | None = None) -> tuple[int, int]:
    """Import an uploaded sentence label file (`labels import --sentences`: an export, a
    one-label-a-row mapping or LFQA-Verification rows, rows naming no dataset going to
    `dataset`), all rows or none; (added, already there)."""
    checked = _within_limit(path, "a sentence label file", "labels import --sentences")
    with by_own_name(checked):
        return import_sentence_label_file(store, checked, dataset=_dataset_chosen(dataset))


def run_bundle_download(store: Store, run_id: Any, *, calls: bool = False) -> Path:
    """The run as a bundle (xz-compressed JSON, `ragshield runs export`); with `calls`,
    every LLM call the store holds goes too (services.data.run_bundles.export_run)."""
    number = _run_id(run_id)
    return export_run(store, number, fresh_folder() / f"run-{number}.json.xz", calls=calls)


def report_download(store: Store, settings: Settings, run_id: Any, *, truth: str = "auto",
                    n_resamples: int = 1000) -> Path:
    """The run's report as one zip file of its folder (report.html, report.md, metrics.json
    and the PNG figures, as `ragshield report` writes them): report.html links its figures
    as files beside it rather than embedding them, so the HTML alone would show none."""
    number = _run_id(run_id)
    folder = fresh_folder()
    report = folder / f"run-{number}-report"
    write_run_report(store, settings, number, report, truth=truth, n_resamples=n_resamples)
    return Path(shutil.make_archive(str(report), "zip", root_dir=folder, base_dir=report.name))


def policy_choices(store: Store) -> list[PolicyChoice]:
    """(label, rule) of every stored policy version, by name, the newest version first."""
    policies = sorted(list_policies(store), key=lambda p: (p.name, -(p.version or 0)))
    return [(f"{p.name} · version {p.version} · {p.source} · fitted on "
             f"{p.fitted_on.dataset or 'no dataset'}", p.rule) for p in policies]


def policy_download(store: Store, rule: str | None) -> tuple[Path, Policy]:
    """The policy version a `policy:NAME@VERSION` rule names as JSON, the file `ragshield
    policy export` writes; (file, policy)."""
    policy = named_policy(store, rule) if rule else None
    if policy is None:
        raise UserError("choose a policy first")
    path = fresh_folder() / f"policy-{_file_part(policy.name)}-v{policy.version}.json"
    return path, export_policy(store, policy.name, policy.version, path)


def _within_limit(path: Path | str | None, what: str, command: str) -> Path:
    """The uploaded file at `path`, refused when there is none or it is larger than
    TRANSFER_MAX_BYTES."""
    if not path:
        raise UserError(f"choose {what} to upload first")
    path = Path(path)
    size = path.stat().st_size if path.is_file() else 0
    if size > TRANSFER_MAX_BYTES:
        raise UploadTooLargeError(
            f"{path.name} is {size / 1e6:.1f} MB; the app takes files up to "
            f"{TRANSFER_MAX_BYTES / 1e6:.0f} MB: import it with `python -m ragshield "
            f"{command}`, which has no such bound")
    return path


def upload_policy(store: Store, path: Path | str | None) -> Policy:
    """Store an uploaded policy file (`policy export`) as the next version of its name;
    a bad file stores nothing."""
    checked = _within_limit(path, "a policy file", "policy import")
    with by_own_name(checked):
        return import_policy(store, checked)


def upload_run(store: Store, path: Path | str | None) -> ImportedRun:
    """Add the run of an uploaded bundle (`runs export`), in one transaction; its dataset
    must be in the store (the demo set is put in on the way)."""
    checked = _within_limit(path, "a run bundle", "runs import")
    with by_own_name(checked):
        run_id = import_run(store, checked, TRANSFER_MAX_UNPACKED)
    run = next(run for run in newest_runs(store) if run.id == run_id)
    return ImportedRun(run_id, run.dataset, run.done)


__all__ = ["ALL_DATASETS", "KEEP_SECONDS", "ImportedRun", "PolicyChoice",
           "fresh_folder", "labels_download", "policy_choices", "policy_download",
           "report_download", "run_bundle_download", "upload_policy", "upload_run",
           "upload_sentence_labels"]
