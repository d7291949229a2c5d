"""`ragshield policy ...`: fit a decision policy on a run's labels, show, list, export,
import, and watch it on labels it was not fitted on."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any, Optional

import typer

from ragshield.cli.errors import user_errors
from ragshield.cli.output import emit_json, print_table
from ragshield.cli.store import opened_store
from ragshield.services.defaults import HOLDOUT_SHARE

app = typer.Typer(no_args_is_help=True,
                  help="Decision policies: answer, withhold or ask a person, with a promise.")
JSON = typer.Option(False, "--json", help="Print JSON.")
VERSION = typer.Option(None, "--version", help="The version (default: the newest).")


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _describe(policy) -> list[str]:
    from ragshield.services.learning.policies import interval_text

    c, on = policy.calibration, policy.fitted_on
    withhold = ("never" if policy.withhold_below is None
                else f"score < {policy.withhold_below:.4g}")
    return [
        f"policy {policy.rule}: judge {policy.source}; answer when score >= "
        f"{policy.answer_at:.4g}; withhold when {withhold}; otherwise ask a person",
        f"promise: {policy.promise()}",
        f"fitted on run {on.run_id} (dataset {on.dataset}): {c.labels} labels "
        f"({on.human_labels} by people, {on.automatic_labels - on.unanswerable_flags} from "
        f"reference answers, {on.unanswerable_flags} from the dataset's unanswerable flag; "
        f"{on.unscored} without a score left out), holdout {policy.holdout:g}, "
        f"fingerprint {on.fingerprint[:12]}",
        f"on those labels: coverage {c.coverage:.3f} ({c.answered} answered), "
        f"{c.withheld} withheld, deferral {c.deferral:.3f}; risk {_rate(c.risk)} "
        f"{interval_text(c.risk_interval)}; good among withheld {_rate(c.withheld_good)} "
        f"{interval_text(c.withheld_good_interval)}",
        f"read by: {policy.readers_words()}",
        f"{policy.tested} thresholds tested; code {policy.code_version}; {policy.created_at}",
        *(f"note: {note}" for note in policy.notes),
    ]


def _summary(policy) -> dict[str, Any]:
    c = policy.calibration
    return {"rule": policy.rule, "judge": policy.source, "answer_at": policy.answer_at,
            "withhold_below": policy.withhold_below, "alpha": policy.alpha,
            "delta": policy.delta, "beta": policy.beta, "labels": c.labels,
            "coverage": round(c.coverage, 3), "deferral": round(c.deferral, 3),
            "created_at": policy.created_at}


@app.command("fit")
def fit(name: str = typer.Argument(..., help="The policy's name (a new version if it exists)."),
        run: int = typer.Option(..., "--run", help="The run whose labelled samples to fit on."),
        judge: str = typer.Option(..., "--judge", help="The judge whose score decides."),
        alpha: float = typer.Option(0.2, "--alpha", help="Promised: at most this share of "
                                    "the answers shown are wrong or unsupported ..."),
        delta: float = typer.Option(0.1, "--delta", help="... with probability at least "
                                    "1 - delta over the calibration labels."),
        beta: Optional[float] = typer.Option(None, "--beta", help="Also: at most this share "
                                             "of the withheld answers were good (else "
                                             "everything not answered is withheld)."),
        holdout: float = typer.Option(HOLDOUT_SHARE, "--holdout", help="Share of samples "
                                      "kept apart (never fitted on): the random slice that "
                                      "watches the promise and the value queue labels."),
        as_json: bool = JSON) -> None:
    """Fit a policy: two thresholds on one judge's score, certified on the run's labels."""
    from ragshield.services.learning.policies import fit_run_policy

    with user_errors(), opened_store() as store:
        policy = fit_run_policy(store, run, judge, name, alpha=alpha, delta=delta, beta=beta,
                                holdout=holdout)
    if as_json:
        emit_json(policy.to_dict())
    else:
        typer.echo("\n".join(_describe(policy)))


@app.command("show")
def show(name: str = typer.Argument(...), version: Optional[int] = VERSION,
         as_json: bool = JSON) -> None:
    """A stored policy, its promise and what it did on its calibration labels."""
    from ragshield.services.learning.policies import get_policy

    with user_errors(), opened_store() as store:
        policy = get_policy(store, name, version)
    if as_json:
        emit_json(policy.to_dict())
    else:
        typer.echo("\n".join(_describe(policy)))


@app.command("list")
def list_(as_json: bool = JSON) -> None:
    """Every stored policy version."""
    from ragshield.services.learning.policies import list_policies

    with user_errors(), opened_store() as store:
        rows = [_summary(policy) for policy in list_policies(store)]
    if as_json:
        emit_json(rows)
    elif rows:
        print_table(rows, list(rows[0]))
    else:
        typer.echo("no policy yet: fit one with `python -m ragshield policy fit`")


@app.command("export")
def export(name: str = typer.Argument(...),
           out: Path = typer.Option(..., "--out", help="The JSON file to write."),
           version: Optional[int] = VERSION) -> None:
    """Write a policy to a JSON file."""
    from ragshield.services.learning.policies import export_policy

    with user_errors(), opened_store() as store:
        policy = export_policy(store, name, version, out)
    typer.echo(f"wrote {policy.rule} to {out}")


@app.command("import")
def import_(path: Path = typer.Argument(..., help="A file written by `policy export`.")) -> None:
    """Store a policy file as the next version of its name."""
    from ragshield.services.learning.policies import import_policy

    with user_errors(), opened_store() as store:
        policy = import_policy(store, path)
    typer.echo(f"stored {policy.rule}")


@app.command("watch")
def watch(name: str = typer.Argument(...),
          run: int = typer.Option(..., "--run", help="A run with labels to check it on."),
          version: Optional[int] = VERSION, as_json: bool = JSON) -> None:
    """The policy's observed risk on labels it was not fitted on, against its promise."""
    from ragshield.services.learning.policies import interval_text, watch_stored_policy

    with user_errors(), opened_store() as store:
        rows = watch_stored_policy(store, name, version, run)
    records = [{**asdict(row), "breach": row.breach} for row in rows]
    if as_json:
        emit_json(records)
        return
    print_table([{**r, "risk": _rate(r["risk"]),
                  "risk_interval": interval_text(r["risk_interval"])}
                 for r in records], ["labels", "samples", "answered", "withheld", "deferred",
                                     "bad_answered", "risk", "risk_interval", "promised",
                                     "breach"])
