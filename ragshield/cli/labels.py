"""`ragshield labels ...`: annotators, labels, the queue, undo and skip, progress,
guidelines, agreement, and import / export of the label history."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Optional

import typer

from ragshield.cli.errors import fail, user_errors
from ragshield.cli.output import emit_json, plain, print_table
from ragshield.cli.store import opened_store
from ragshield.types import keep_word

app = typer.Typer(no_args_is_help=True, help="Answerability labels by people.")

DATASET = typer.Option("demo", "--dataset", help="The dataset.")
ANNOTATOR = typer.Option(..., "--annotator", help="The annotator's name.")
JSON = typer.Option(False, "--json", help="Print JSON.")


def _record_dict(record) -> dict:
    data = asdict(record)
    data["created_at"] = record.created_at.isoformat()
    return data


@app.command("annotator")
def annotator(name: str = typer.Argument(..., help="The annotator's name."),
              role: Optional[str] = typer.Option(None, "--role",
                                                 help="e.g. expert, student.")) -> None:
    """Add an annotator (or change their role)."""
    from ragshield.services.annotation.labelling import add_annotator

    with user_errors(), opened_store() as store:
        add_annotator(store, name, role)
    typer.echo(f"annotator {name} ready")


@app.command("add")
def add(
    sample: str = typer.Option(..., "--sample", help="The sample id."),
    annotator: str = ANNOTATOR,
    label: str = typer.Option(..., "--label", help="answerable | unanswerable | unsure"),
    answer_correct: Optional[bool] = typer.Option(None, "--answer-correct/--answer-wrong",
                                                  help="Judge the shown answer too."),
    note: Optional[str] = typer.Option(None, "--note"),
    request_id: Optional[str] = typer.Option(None, "--request-id",
                                             help="Makes a repeated submission a no-op."),
    dataset: str = DATASET, as_json: bool = JSON,
) -> None:
    """Label a sample (a new version when the annotator labelled it before)."""
    from ragshield.services.annotation.labelling import label_sample

    with user_errors(), opened_store() as store:
        record = label_sample(store, dataset, sample, annotator, label,
                              answer_correct=answer_correct, note=note, request_id=request_id)
    if as_json:
        emit_json(_record_dict(record))
    else:
        typer.echo(f"{'stored' if record.stored else 'already there'}: {sample} -> {record.label}")


@app.command("history")
def history(sample: str = typer.Option(..., "--sample"), dataset: str = DATASET,
            as_json: bool = JSON) -> None:
    """Every label version of a sample, oldest first."""
    from ragshield.services.annotation.labelling import label_history

    with user_errors(), opened_store() as store:
        rows = [_record_dict(r) for r in label_history(store, dataset, sample)]
    if as_json:
        emit_json(rows)
    else:
        print_table(rows, ["created_at", "annotator", "label", "answer_correct", "retracted",
                           "note"], {"note": 60})


@app.command("next")
def next_(annotator: str = ANNOTATOR, dataset: str = DATASET,
          strategy: str = typer.Option("unlabelled", "--strategy",
                                       help="unlabelled | disagreement | random | value"),
          overlap: int = typer.Option(1, "--overlap", min=1, help="Annotators per sample."),
          seed: int = typer.Option(0, "--seed"),
          run: Optional[int] = typer.Option(None, "--run", help="Run for --strategy "
                                            "disagreement or value (default: the newest)."),
          policy: Optional[str] = typer.Option(None, "--policy", help="--strategy value: the "
                                               "policy whose defer band to label (default: the "
                                               "newest fitted on the dataset)."),
          mix: Optional[str] = typer.Option(None, "--mix", help="--strategy value: shares, "
                                            "e.g. band=0.4,disagreement=0.4,random=0.2 (the "
                                            "default)."),
          ) -> None:
    """Print the id of the sample to label next (nothing when done)."""
    from ragshield.services.annotation.labelling import Queue, next_to_label, parse_mix

    with user_errors(), opened_store() as store:
        queue = Queue(dataset, strategy, overlap, seed=seed, run_id=run, policy=policy,
                      shares=parse_mix(mix) if mix is not None else None)
        found = next_to_label(store, annotator, queue)
    if found is not None:
        typer.echo(found)


@app.command("show")
def show(sample: str = typer.Option(..., "--sample"), annotator: str = ANNOTATOR,
         dataset: str = DATASET,
         blind: bool = typer.Option(False, "--blind", help="Hide verdicts and others' labels."),
         run: Optional[int] = typer.Option(None, "--run", help="Default: the newest run."),
         as_json: bool = JSON) -> None:
    """What the annotator sees for a sample: the question, the passages, the answer, the
    judges' verdicts and the labels so far."""
    from ragshield.services.annotation.labelling import annotation_item

    with user_errors(), opened_store() as store:
        item = annotation_item(store, dataset, sample, annotator, blind=blind, run_id=run)
    if as_json:
        emit_json(asdict(item))
        return
    typer.echo(f"Q: {plain(item.question)}")
    for number, passage in enumerate(item.passages):
        typer.echo(f"  [{number}] {plain(passage['text'])[:160]}")
    typer.echo(f"A: {plain(item.answer)}")
    for verdict in item.verdicts:
        typer.echo(f"  {verdict['judge']:<17} {keep_word(verdict['keep'], 'undecided'):<10} "
                   f"{plain(verdict['rationale'])[:100]}")
    for entry in item.others:
        typer.echo(f"  label by {plain(entry['annotator'])}: {entry['label']}")
    typer.echo(f"your label: {item.mine['label'] if item.mine else '-'}")


@app.command("skip")
def skip_(sample: str = typer.Option(..., "--sample"), annotator: str = ANNOTATOR,
          dataset: str = DATASET) -> None:
    """Pass over a sample in the queue."""
    from ragshield.services.annotation.labelling import skip

    with user_errors(), opened_store() as store:
        skip(store, dataset, sample, annotator)


@app.command("undo")
def undo_(annotator: str = ANNOTATOR, dataset: str = DATASET) -> None:
    """Take back the annotator's newest label change or skip."""
    from ragshield.services.annotation.labelling import undo

    with user_errors(), opened_store() as store:
        sample = undo(store, dataset, annotator)
    typer.echo(f"undone on {sample}" if sample else "nothing to undo")


@app.command("progress")
def progress_(dataset: str = DATASET, as_json: bool = JSON) -> None:
    """Samples labelled and skipped per annotator."""
    from ragshield.services.annotation.labelling import progress

    with user_errors(), opened_store() as store:
        rows = [asdict(p) for p in progress(store, dataset)]
    if as_json:
        emit_json(rows)
    else:
        print_table(rows, ["annotator", "labelled", "skipped", "total"])


@app.command("guidelines")
def guidelines(dataset: str = DATASET,
               set_from: Optional[Path] = typer.Option(None, "--set",
                                                       help="A Markdown file.")) -> None:
    """Show the dataset's labelling guidelines, or replace them with a Markdown file."""
    from ragshield.services.annotation.labelling import get_guidelines, set_guidelines

    with user_errors(), opened_store() as store:
        if set_from is not None:
            try:
                text = set_from.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                fail(f"cannot read {set_from}: {exc}")
            set_guidelines(store, dataset, text)
        typer.echo(get_guidelines(store, dataset) or "(no guidelines yet)")


@app.command("agreement")
def agreement(dataset: Optional[str] = typer.Option(None, "--dataset",
                                                    help="One dataset (default: all)."),
              as_json: bool = JSON) -> None:
    """Percent agreement, Cohen's kappa per pair, Fleiss' kappa, Krippendorff's alpha,
    Gwet's AC1, and each judge's and the automatic label's agreement with the human majority
    (with the sample ids of its false keeps and false withholds)."""
    from ragshield.services.annotation.agreement import newest_run_agreement

    with user_errors(), opened_store() as store:
        agreed = newest_run_agreement(store, dataset)
    if as_json:
        emit_json({**agreed.among, "automatic": agreed.automatic, "judges": agreed.judges})
        return
    for key in ("n_items", "percent", "fleiss", "krippendorff_alpha", "gwet_ac1"):
        typer.echo(f"{key}: {agreed.among[key]}")
    for pair, kappa in agreed.among["cohen"].items():
        typer.echo(f"cohen {pair}: {kappa}")
    for judge, values in {"automatic": agreed.automatic, **agreed.judges}.items():
        scores = ", ".join(f"{key}: {values[key]}" for key in ("n", "percent", "kappa", "ac1"))
        typer.echo(f"{judge} vs majority: {scores}")
        for key in ("false_keeps", "false_withholds"):
            ids = values[key]
            typer.echo(f"  {key.replace('_', ' ')}: {len(ids)}"
                       + (f" ({', '.join(ids)})" if ids else ""))


@app.command("export")
def export(format: str = typer.Option(..., "--format", help="csv | jsonl | parquet"),
           out: Path = typer.Option(..., "--out"),
           dataset: Optional[str] = typer.Option(None, "--dataset", help="Default: all.")) -> None:
    """Write every label version (the whole history) to a file."""
    from ragshield.services.annotation.labelling import export_labels

    with user_errors(), opened_store() as store:
        count = export_labels(store, out, format, dataset)
    typer.echo(f"wrote {count} label rows to {out}")


@app.command("import")
def import_(path: Path = typer.Argument(...),
            format: Optional[str] = typer.Option(None, "--format",
                                                 help="Default: from the extension.")
            ) -> None:
    """Import a label file made by `labels export` (all rows or none)."""
    from ragshield.services.annotation.labelling import import_label_file

    with user_errors(), opened_store() as store:
        added, present = import_label_file(store, path, format)
    typer.echo(f"{added} label rows added, {present} already there")
