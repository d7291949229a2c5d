"""`ragshield labels ...`: annotators, labels and sentence labels, the queue, undo and skip,
progress, guidelines, agreement, and import / export of the label history."""

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
              sentences: bool = typer.Option(False, "--sentences",
                                             help="Agreement on sentence labels instead."),
              as_json: bool = JSON) -> None:
    """Percent agreement, Cohen's kappa per pair, Fleiss' kappa, Krippendorff's alpha,
    Gwet's AC1, and each judge's and the automatic label's agreement with the human majority
    (with the sample ids of its false keeps and false withholds). With --sentences: the same
    among people on sentence labels, and the support judge against their majority."""
    from ragshield.services.annotation.agreement import newest_run_agreement

    if sentences:
        _sentence_agreement(dataset, as_json)
        return

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


@app.command("sentences")
def sentences(sample: str = typer.Option(..., "--sample"), annotator: str = ANNOTATOR,
              dataset: str = DATASET,
              blind: bool = typer.Option(False, "--blind",
                                         help="Hide the judge's marks and others' labels."),
              as_json: bool = JSON) -> None:
    """The sentences of the sample's answer (of the newest run), numbered, with the support
    judge's marks and the current sentence labels."""
    from ragshield.services.annotation.sentence_labelling import sentence_view

    with user_errors(), opened_store() as store:
        view = sentence_view(store, dataset, sample, annotator, blind=blind)
    if as_json:
        emit_json({"sample": sample, "answer": view.item.answer,
                   "answer_id": view.item.answer_id,
                   "sentences": [asdict(s) for s in view.sentences]})
        return
    if not view.sentences:
        typer.echo(f"{sample} has no answer to label sentences of")
        return
    columns = ["#", "span", "sentence", "judge", "yours", "others"]
    print_table([dict(zip(columns, [
        s.index, f"{s.start}:{s.end}", s.text,
        "" if s.score is None else f"{s.score:.2f} {'supported' if s.supported else 'not'}",
        s.mine or "", ", ".join(f"{who}: {value}" for who, value in s.others.items())]))
        for s in view.sentences], columns, {"sentence": 80})


def _span(text: str) -> tuple[int, int]:
    start, _, end = text.partition(":")
    try:
        return int(start), int(end)
    except ValueError:
        fail(f"--span must be START:END (character offsets in the answer), got {text!r}")


@app.command("sentence")
def sentence(sample: str = typer.Option(..., "--sample"), annotator: str = ANNOTATOR,
             label: str = typer.Option(..., "--label", help="supported | unsupported | unsure"),
             index: Optional[int] = typer.Option(None, "--index",
                                                 help="The sentence's number (`sentences`)."),
             span: Optional[str] = typer.Option(None, "--span",
                                                help="START:END in the answer, instead."),
             request_id: Optional[str] = typer.Option(None, "--request-id",
                                                      help="Makes a repeated submission a no-op."),
             dataset: str = DATASET, as_json: bool = JSON) -> None:
    """Label one sentence of the sample's answer (of the newest run)."""
    from ragshield.services.annotation.sentence_labelling import label_sentence

    with user_errors(), opened_store() as store:
        record = label_sentence(store, dataset, sample, annotator, label, index=index,
                                span=_span(span) if span is not None else None,
                                request_id=request_id)
    if as_json:
        emit_json(_record_dict(record))
    else:
        typer.echo(f"{'stored' if record.stored else 'already there'}: {sample} "
                   f"{record.start}:{record.end} -> {record.label}")


def _sentence_agreement(dataset: Optional[str], as_json: bool) -> None:
    from ragshield.services.annotation.sentence_agreement import sentence_agreement

    if dataset is None:
        fail("--sentences needs --dataset: sentence agreement is measured per dataset")
    with user_errors(), opened_store() as store:
        agreed = sentence_agreement(store, dataset)
    pairs = [{"annotators": list(pair), **asdict(value)} for pair, value in agreed.pairs.items()]
    if as_json:
        emit_json({"sentences": agreed.sentences, "people": agreed.people, **agreed.among,
                   "pairs": pairs, "judge": agreed.judge})
        return
    typer.echo(f"{agreed.sentences} sentences labelled by {agreed.people} people")
    for key in ("n_items", "percent", "fleiss", "gwet_ac1", "gwet_ac1_interval"):
        typer.echo(f"{key}: {agreed.among[key]}")
    for pair in pairs:
        typer.echo(f"{' & '.join(pair['annotators'])}: kappa {pair['kappa']}, "
                   f"AC1 {pair['ac1']} on {pair['shared']} sentences")
    judge = agreed.judge
    typer.echo(f"{judge['judge']} vs the majority on {judge['n']} sentences "
               f"({judge['supported']} supported): AUROC {judge['auroc']} "
               f"{judge['auroc_interval']}, balanced accuracy {judge['balanced_accuracy']} "
               f"{judge['balanced_accuracy_interval']}")


@app.command("export")
def export(format: str = typer.Option(..., "--format", help="csv | jsonl | parquet"),
           out: Path = typer.Option(..., "--out"),
           dataset: Optional[str] = typer.Option(None, "--dataset", help="Default: all."),
           sentences: bool = typer.Option(False, "--sentences",
                                          help="The sentence labels instead.")) -> None:
    """Write every label version (the whole history) to a file."""
    from ragshield.services.annotation.labelling import export_labels
    from ragshield.services.annotation.sentence_labelling import export_sentence_labels

    with user_errors(), opened_store() as store:
        count = (export_sentence_labels if sentences else export_labels)(
            store, out, format, dataset)
    typer.echo(f"wrote {count} {'sentence ' if sentences else ''}label rows to {out}")


@app.command("import")
def import_(path: Path = typer.Argument(...),
            format: Optional[str] = typer.Option(None, "--format",
                                                 help="Default: from the extension."),
            sentences: bool = typer.Option(
                False, "--sentences", help="Sentence labels: a file of `export --sentences`, "
                "one label a row (sample_id, annotator, label, and start/end, sentence_index "
                "or sentence), or LFQA-Verification rows."),
            dataset: Optional[str] = typer.Option(
                None, "--dataset", help="With --sentences: the dataset of rows that name none.")
            ) -> None:
    """Import a label file made by `labels export` (all rows or none)."""
    from ragshield.services.annotation.labelling import import_label_file
    from ragshield.services.annotation.sentence_labelling import import_sentence_label_file

    with user_errors(), opened_store() as store:
        if sentences:
            added, present = import_sentence_label_file(store, path, format, dataset=dataset)
        else:
            added, present = import_label_file(store, path, format)
    kind = "sentence label" if sentences else "label"
    typer.echo(f"{added} {kind} rows added, {present} already there")
