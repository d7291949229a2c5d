"""`ragshield run` (start, resume or re-judge a run) and `ragshield runs list`."""

from __future__ import annotations

import signal
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator, Optional

import typer

from ragshield.cli.errors import fail, user_errors
from ragshield.cli.llm_options import (Backend, BaseUrl, JudgeModel, Model, NoLLMCache,
                                       settings_with)
from ragshield.cli.output import emit_json, print_table
from ragshield.cli.store import opened_store

runs_app = typer.Typer(no_args_is_help=True, help="Runs: list, export and import them.")


class Terminated(KeyboardInterrupt):
    """SIGTERM (kill, docker stop, systemd), raised where the run is so that it stops as
    Ctrl-C does: the sample in flight is abandoned (its transaction never commits) and the
    run is marked interrupted."""


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    def stop(_signum: int, _frame: object) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stopped(stop: KeyboardInterrupt, run_id: int, rejudging: bool) -> typer.Exit:
    """The message and exit status (130 for Ctrl-C, 143 for SIGTERM) of a stopped command."""
    why, code = ("terminated (SIGTERM)", 143) if isinstance(stop, Terminated) \
        else ("interrupted", 130)
    if rejudging:
        typer.echo(f"\n{why}: the verdicts added so far are saved; re-judge again to add the "
                   "rest", err=True)
    else:
        typer.echo(f"\n{why}: run {run_id} is marked interrupted; resume with "
                   f"`python -m ragshield run --resume {run_id}`", err=True)
    return typer.Exit(code=code)


# What a resume or a re-judge takes besides the run id; every other option shapes a run and
# is the stored run's. --base-url is checked against the run's own endpoint (check_endpoint).
_RESUME_TAKES = {"resume", "concurrency", "base_url", "no_llm_cache", "progress", "as_json"}
_REJUDGE_TAKES = {"rejudge", "judges", "base_url", "no_llm_cache", "progress", "as_json"}


def _refuse_run_options(ctx: typer.Context, resume: int | None, rejudge: int | None) -> None:
    """A one-line error naming the options given (with a value other than their default)
    that a resume or a re-judge does not take: they belong to the stored run."""
    takes = _RESUME_TAKES if resume is not None else _REJUDGE_TAKES
    given = [param.opts[0] for param in ctx.command.params if param.name not in takes
             and param.name in ctx.params and ctx.params[param.name] != param.default]
    if not given:
        return
    if resume is not None:
        fail(f"{', '.join(given)}: run {resume} resumes with its stored options; to add "
             f"judges to its saved answers use `run --rejudge {resume} --judges NAMES`")
    fail(f"{', '.join(given)}: `run --rejudge {rejudge}` judges the saved answers of run "
         f"{rejudge}, with its stored options; it takes --judges only")


def _finish(payload: dict[str, Any], as_json: bool) -> None:
    if as_json:
        emit_json(payload)
    else:
        typer.echo(", ".join(f"{k}={v}" for k, v in payload.items() if k != "failures"))
        for failure in payload.get("failures", []):
            typer.echo(f"  failed {failure['sample_id']}: {failure['error']}")


def run(
    ctx: typer.Context,
    dataset: Optional[str] = typer.Option(None, "--dataset", help="Dataset to run on."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Only the first N samples."),
    answerer: Optional[str] = typer.Option(None, "--answerer",
                                           help="Answerer (default: evidence)."),
    answers: str = typer.Option("generated", "--answers",
                                help="generated (by the answerer) or given (the dataset's own "
                                     "answers, judged as they are)."),
    judges: str = typer.Option("all", "--judges", help="all, or names separated by commas."),
    rule: Optional[str] = typer.Option(None, "--rule",
                                       help="Decision rule: a judge, all, majority, "
                                            "grounded or policy:NAME."),
    retrieval: str = typer.Option("given", "--retrieval",
                                  help="given (the dataset's passages) or "
                                       "bm25|dense|hybrid|rrf|two-stage."),
    corpus: str = typer.Option("demo", "--corpus", help="Corpus to retrieve from."),
    k: int = typer.Option(3, "--k", help="Passages to retrieve."),
    noise: int = typer.Option(0, "--noise",
                              help="Random corpus chunks added to retrieved passages."),
    small_model: bool = typer.Option(False, "--small-model",
                                     help="Answer with the packaged smallest model "
                                          "(SmolLM2-135M)."),
    fallback: bool = typer.Option(False, "--fallback", help="Also store No-RAG answers."),
    switch: bool = typer.Option(False, "--switch",
                                help="Also store the packaged larger model's answers "
                                     "(Qwen2.5-Coder-1.5B; the switch curve)."),
    seed: int = typer.Option(0, "--seed"),
    concurrency: Optional[int] = typer.Option(None, "--concurrency", min=1,
                                              help="Samples at once (OpenAI-compatible servers)."),
    name: Optional[str] = typer.Option(None, "--name", help="A name for the run."),
    resume: Optional[int] = typer.Option(None, "--resume", help="Resume this run id."),
    rejudge: Optional[int] = typer.Option(None, "--rejudge",
                                          help="Add --judges to this run's saved answers."),
    backend: Backend = None, base_url: BaseUrl = None, model: Model = None,
    judge_model: JudgeModel = None, no_llm_cache: NoLLMCache = False,
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Answer and judge a dataset's samples and store everything (resumable)."""
    from ragshield.services.runs.runs import (RunConfig, add_judges, check_endpoint, execute,
                                              record_run, run_answerer)

    if sum(x is not None for x in (dataset, resume, rejudge)) != 1:
        fail("give exactly one of --dataset (a new run), --resume RUN or --rejudge RUN")
    if dataset is None:
        _refuse_run_options(ctx, resume, rejudge)
    with user_errors():
        settings = settings_with(backend, base_url, model, no_llm_cache, judge_model)
    with user_errors(), opened_store(settings) as store, _sigterm_interrupts():
        if dataset is None:
            existing = resume if resume is not None else rejudge
            assert existing is not None  # exactly one of the three was given
            check_endpoint(store, existing, base_url)
        if rejudge is not None:
            try:
                rejudged = add_judges(store, settings, rejudge, judges, progress=progress)
            except KeyboardInterrupt as stop:
                raise _stopped(stop, rejudge, rejudging=True)
            _finish({"run_id": rejudge, "verdicts_added": rejudged.added,
                     "verdicts_failed": rejudged.failed,
                     "failures": [{"sample_id": i, "error": e}
                                  for i, e in rejudged.failures.items()]}, as_json)
            if rejudged.failed:
                raise typer.Exit(code=1)
            return
        run_id = resume
        if dataset is not None:
            new = record_run(store, settings, RunConfig(
                dataset=dataset, limit=limit,
                answerer=run_answerer(answers, answerer, settings.answerer),
                judges=[judges], rule=rule, retrieval=retrieval,
                corpus=corpus, k=k, noise=noise, backend=settings.backend, model=model,
                base_url=base_url, small_model=small_model,
                fallback=fallback, switch=switch,
                seed=seed, concurrency=concurrency or settings.concurrency,
            ), name=name)
            if new.note:
                typer.echo(f"note: {new.note}", err=True)
            run_id = new.run_id
        assert run_id is not None
        try:
            result = execute(store, settings, run_id, progress=progress,
                             concurrency=concurrency if resume is not None else None)
        except KeyboardInterrupt as stop:
            raise _stopped(stop, run_id, rejudging=False)
    outcome = result.outcome
    _finish({"run_id": run_id, "status": outcome.status, "rule": result.rule,
             "done": outcome.done, "total": outcome.total, "failed": outcome.failed,
             "failures": [{"sample_id": i, "error": e} for i, e in result.failures.items()]},
            as_json)
    if outcome.failed:
        raise typer.Exit(code=1)


@runs_app.command("list")
def list_runs(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Runs with their status, samples done of total, and failures."""
    from ragshield.services.runs.runs import list_runs as stored_runs

    with user_errors(), opened_store() as store:
        rows = [
            {"id": r.id, "name": r.name, "dataset": r.dataset, "status": r.status,
             "done": r.done, "total": r.total, "failures": r.failures,
             "created_at": r.created_at.isoformat(),
             "finished_at": r.finished_at.isoformat() if r.finished_at else None}
            for r in stored_runs(store)
        ]
    if as_json:
        emit_json(rows)
    else:
        print_table(rows, ["id", "name", "dataset", "status", "done", "total", "failures",
                           "created_at"], {"name": 30})


@runs_app.command("export")
def export_run(
    run: Optional[int] = typer.Argument(None, help="The run to write out."),
    out: Path = typer.Option(..., "--out", help="The file to write (xz-compressed JSON; "
                                                "JSONL with --decisions)."),
    calls: bool = typer.Option(False, "--with-calls",
                               help="Also every LLM call the database holds, so the run "
                                    "replays where it is imported (for a database made for "
                                    "this run)."),
    decisions: bool = typer.Option(False, "--decisions",
                                   help="Instead of a run, the guard API's decision log: one "
                                        "JSON object a line, each answered call."),
    since: Optional[datetime] = typer.Option(None, "--since", formats=["%Y-%m-%d"],
                                             help="With --decisions: from this day on (UTC)."),
    caller: Optional[str] = typer.Option(None, "--caller",
                                         help="With --decisions: the calls of this API key "
                                              "name only."),
) -> None:
    """Write a run (answers, verdicts, traces) to one file for another database; or, with
    --decisions, every decision of the guard API (time, caller, question hash, decision,
    rule and policy version, verdicts, latency) as JSONL."""
    if decisions == (run is not None):
        fail("give a RUN to export, or --decisions (not both)")
    if not decisions and (since is not None or caller is not None):
        fail("--since and --caller go with --decisions")
    if decisions and calls:
        fail("--with-calls goes with a RUN, not with --decisions")
    with user_errors(), opened_store() as store:
        if decisions:
            from ragshield.services.guarding.decision_log import export_decisions

            count = export_decisions(store, out, since.date() if since else None, caller)
            typer.echo(f"wrote {count} decision(s) to {out}")
            return
        from ragshield.services.data.run_bundles import export_run as write_run

        assert run is not None  # a RUN, or --decisions

        path = write_run(store, run, out, calls=calls)
    typer.echo(f"wrote run {run} to {path} ({path.stat().st_size:,} bytes)")


@runs_app.command("import")
def import_run(path: Path = typer.Argument(..., help="A file written by `runs export`.")) -> None:
    """Add a run from a file written by `runs export`; its dataset must be imported first."""
    from ragshield.services.data.run_bundles import import_run as read_run

    with user_errors(), opened_store() as store:
        run_id = read_run(store, path)
    typer.echo(f"imported {path} as run {run_id}")
