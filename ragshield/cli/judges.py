"""`ragshield judges ...`: the judges there are, and training one on a dataset's labels."""

from __future__ import annotations

from typing import Optional

import typer

from ragshield.cli.errors import user_errors
from ragshield.cli.output import emit_json, print_table
from ragshield.cli.store import opened_store
from ragshield.judges.training import EPOCHS

app = typer.Typer(no_args_is_help=True, help="Judges: list them, train one on labels.")


@app.command("train")
def train(name: str = typer.Argument(..., help="Its name: the judge becomes trained:NAME."),
          dataset: str = typer.Option(..., "--dataset", help="The dataset whose labels teach it."),
          target: str = typer.Option("answerable", "--target",
                                     help="answerable (do the passages answer the question) | "
                                          "answer_ok (is a run's answer right and supported)"),
          run: Optional[int] = typer.Option(None, "--run", help="--target answer_ok: the run "
                                            "whose answers it learns to judge."),
          epochs: int = typer.Option(EPOCHS, "--epochs", help="Passes over the training labels."),
          as_json: bool = typer.Option(False, "--json", help="Print the model card as JSON.")
          ) -> None:
    """Fine-tune the packaged MiniLM as a cross-encoder on the dataset's labels (people's
    first, then the dataset's flags), on the CPU, measured on held-out articles."""
    from tqdm import tqdm

    from ragshield.config import Settings
    from ragshield.services.judge_training import train_judge

    bar = tqdm(desc=f"training {name}", unit="batch", disable=as_json)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)

    with user_errors(), opened_store() as store:
        info = train_judge(store, Settings(), name, dataset, target=target, run_id=run,
                           epochs=epochs, progress=progress)
    bar.close()
    if as_json:
        emit_json(info.card.to_dict())
        return
    held = info.card.metrics
    low, high = held["pr_auc_interval"]
    typer.echo(f"{info.judge}: trained on {info.card.split['training']} labels in "
               f"{info.card.train_seconds:.0f} s; on {held['n']} held-out samples PR-AUC "
               f"{held['pr_auc']:.3f} [{low:.3f}, {high:.3f}] (keep-all "
               f"{held['positive_rate']:.3f}); saved in {info.directory}")


@app.command("list")
def list_(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """The registered judges and the trained ones (with their held-out PR-AUC)."""
    from ragshield.config import Settings
    from ragshield.judges.registry import JUDGES
    from ragshield.services.judge_training import trained_judges

    rows = [{"judge": name, "cost": cls.cost, "trained on": "-", "held-out PR-AUC": "-"}
            for name, cls in JUDGES.items()]
    for found in trained_judges(Settings()):
        if isinstance(found, Exception):
            rows.append({"judge": "?", "cost": "-", "trained on": str(found),
                         "held-out PR-AUC": "-"})
            continue
        card = found.card
        rows.append({"judge": found.judge, "cost": "free",
                     "trained on": f"{card.dataset} ({card.target}, {card.labels['total']})",
                     "held-out PR-AUC": f"{card.metrics['pr_auc']:.3f}"})
    if as_json:
        emit_json(rows)
    else:
        print_table(rows, list(rows[0]), {"trained on": 70})
