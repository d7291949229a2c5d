"""`ragshield judges ...`: the judges there are, and training one on a dataset's labels."""

from __future__ import annotations

from typing import Optional

import typer

from ragshield.cli.errors import user_errors
from ragshield.cli.llm_options import Backend, BaseUrl, Model, NoLLMCache, settings_with
from ragshield.cli.output import emit_json, print_table
from ragshield.cli.store import opened_store
from ragshield.services.defaults import TRAINING_EPOCHS

app = typer.Typer(no_args_is_help=True, help="Judges: list them, train one on labels.")


@app.command("train")
def train(name: str = typer.Argument(..., help="Its name: the judge becomes trained:NAME."),
          dataset: str = typer.Option(..., "--dataset", help="The dataset whose labels teach it."),
          target: str = typer.Option("answerable", "--target",
                                     help="answerable (do the passages answer the question) | "
                                          "answer_ok (is a run's answer right and supported)"),
          run: Optional[int] = typer.Option(None, "--run", help="The run whose answers it "
                                            "learns to judge (--target answer_ok) and whose "
                                            "judges' scores it reads (--reads)."),
          kind: str = typer.Option("signals", "--kind", help="signals (a logistic regression "
                                   "over cheap signals and the LLM reads: holds on unseen "
                                   "articles) | cross-encoder (fine-tuned MiniLM)"),
          reads: str = typer.Option("", "--reads", help="Comma-separated judges of --run whose "
                                    "scores it reads, e.g. pre_answer,p_true (kind signals)."),
          negatives: bool = typer.Option(False, "--hard-negatives", help="Also learn from "
                                         "unanswerable questions made from the answerable ones "
                                         "(target answerable, no --reads)."),
          llm_grader: bool = typer.Option(False, "--llm-grader", help="target answer_ok: an "
                                          "answer is also right when the configured model "
                                          "grades it accurate (long reference answers defeat "
                                          "the matching rules)."),
          epochs: int = typer.Option(TRAINING_EPOCHS, "--epochs", help="kind cross-encoder: "
                                     "passes over the training labels."),
          as_json: bool = typer.Option(False, "--json", help="Print the model card as JSON."),
          backend: Backend = None, base_url: BaseUrl = None, model: Model = None,
          no_llm_cache: NoLLMCache = False,
          ) -> None:
    """Train a judge on the dataset's labels (people's first, then the dataset's flags), on
    the CPU, measured on articles it did not see (grouped cross-validation). The model
    options choose the LLM grader's model (--llm-grader)."""
    from tqdm import tqdm

    from ragshield.services.learning.judge_training import held_out_sentence, train_judge

    bar = tqdm(desc=f"training {name}", disable=as_json)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)

    with user_errors():
        settings = settings_with(backend, base_url, model, no_llm_cache)
        with opened_store(settings) as store:
            info = train_judge(store, settings, name, dataset, target=target, run_id=run,
                               kind=kind,
                               reads=[r.strip() for r in reads.split(",") if r.strip()],
                               hard_negatives=negatives, epochs=epochs,
                               llm_grader=llm_grader, progress=progress)
    bar.close()
    if as_json:
        emit_json(info.card.to_dict())
        return
    typer.echo(f"{info.judge}: trained on {info.card.split['training']} labels in "
               f"{info.card.train_seconds:.0f} s; {held_out_sentence(info.card)}; saved in "
               f"{info.directory}")


@app.command("list")
def list_(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """The registered judges and the trained ones (with their held-out PR-AUC)."""
    from ragshield.config import Settings
    from ragshield.services.guarding.guard import judge_catalogue
    from ragshield.services.learning.judge_training import trained_judges

    rows = [{"judge": judge["name"], "cost": judge["cost"], "trained on": "-",
             "held-out PR-AUC": "-"} for judge in judge_catalogue(Settings())]
    for found in trained_judges(Settings()):
        if isinstance(found, Exception):
            rows.append({"judge": "?", "cost": "-", "trained on": str(found),
                         "held-out PR-AUC": "-"})
            continue
        card = found.card
        how = card.kind + "".join(f" + {read}" for read in card.reads)
        how += f", read by {card.reader or 'the answering model'}" if card.reads else ""
        rows.append({"judge": found.judge, "cost": card.cost,
                     "trained on": f"{card.dataset} ({card.target}, {card.labels['total']}; "
                                   f"{how})",
                     "held-out PR-AUC": f"{card.metrics['pr_auc']:.3f}"})
    if as_json:
        emit_json(rows)
    else:
        print_table(rows, list(rows[0]), {"trained on": 70})
