"""`ragshield datasets ...`: import dataset files into the store, list datasets and samples,
delete a dataset."""

from __future__ import annotations

from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Optional

import typer
from tqdm import tqdm

from ragshield.cli.errors import user_errors
from ragshield.cli.output import emit_json, print_table
from ragshield.cli.store import opened_store
from ragshield.services.data.datasets import (FORMATS, all_datasets, dataset_samples,
                                              delete_dataset, deletion_preview, import_file,
                                              parse_mapping)

app = typer.Typer(no_args_is_help=True,
                  help="Datasets: import files, list datasets and samples, delete a dataset.")

JSON_OPTION = typer.Option(False, "--json", help="Print JSON.")


@app.command("import")
def import_(
    name: str = typer.Argument(..., help="The dataset's name in the store."),
    path: Path = typer.Argument(
        ..., help="The file: .json, .jsonl, .csv, .parquet (also .bz2, .gz)."),
    format: Optional[str] = typer.Option(
        None, "--format", "-f", help=f"One of {', '.join(FORMATS)}; default: detected."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Only the first N samples."),
    mapping: Optional[str] = typer.Option(
        None, "--map", help="Columns for csv/jsonl/parquet: question=q,answers=a,passages=p,"
                            "id=i,answerable=y; an outside system's answer: answer=r,"
                            "answer_model=m,answer_logprobs=l,cited_passages=c,"
                            "passage_scores=s"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Import a dataset file, all or nothing. Importing into an existing dataset adds new ids,
    updates changed samples in place (labels and runs stay attached) and keeps samples the
    file lacks."""
    with user_errors(), opened_store() as store:
        result = import_file(
            store, name, path, format=format, limit=limit,
            mapping=parse_mapping(mapping) if mapping is not None else None,
            progress=partial(tqdm, unit=" samples", desc=f"importing {path.name}", leave=False,
                             disable=None),  # None: no bar when stderr is not a terminal
        )
    if as_json:
        emit_json(asdict(result))
    else:
        typer.echo(f"{result.dataset}: {result.added} samples added, {result.updated} updated, "
                   f"{result.unchanged} unchanged, {result.missing} not in the file (kept); "
                   f"{result.samples} in all")


@app.command("list")
def list_(as_json: bool = JSON_OPTION) -> None:
    """The datasets with their sample counts (the bundled `demo` set is added when missing)."""
    with user_errors(), opened_store() as store:
        rows = [asdict(summary) for summary in all_datasets(store)]
    if as_json:
        emit_json(rows)
        return
    print_table(rows, ["name", "samples", "answerable", "unanswerable", "unlabelled"])


@app.command("samples")
def samples(
    name: str = typer.Argument(..., help="The dataset's name."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Only the first N samples."),
    as_json: bool = JSON_OPTION,
) -> None:
    """The samples of a dataset: id, question, answerable, number of passages."""
    with user_errors(), opened_store() as store:
        rows = [asdict(s) for s in dataset_samples(store, name, limit=limit)]
    if as_json:
        emit_json(rows)
        return
    print_table(rows, ["id", "answerable", "passages", "question"], {"id": 40, "question": 80})


@app.command("delete")
def delete(
    name: str = typer.Argument(..., help="The dataset's name."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    force: bool = typer.Option(
        False, "--force", help="Also delete the runs over the dataset and the labels on it."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Delete a dataset with its samples and passages (refused while runs or labels use it,
    unless --force)."""
    with user_errors(), opened_store() as store:
        usage = deletion_preview(store, name, force=force)
        if not yes:
            also = f", and {usage.references()}" if usage.in_use else ""
            typer.confirm(f"Delete dataset {name!r}: {usage.samples} samples, {usage.passages} "
                          f"passages{also}?", abort=True, err=True)
        deleted = delete_dataset(store, name, force=force)
    if as_json:
        emit_json(asdict(deleted))
    else:
        also = f", {deleted.references()}" if deleted.in_use else ""
        typer.echo(f"deleted dataset {name!r}: {deleted.samples} samples, {deleted.passages} "
                   f"passages{also}")


@app.command("formats")
def formats(as_json: bool = JSON_OPTION) -> None:
    """The dataset formats that `import` reads."""
    rows = [{"name": s.name, "description": s.description, "license": s.license}
            for s in FORMATS.values()]
    if as_json:
        emit_json(rows)
        return
    print_table(rows, ["name", "description"])
