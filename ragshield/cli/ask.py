"""`ragshield ask`: one question through retrieval, an answerer and the judges."""

from __future__ import annotations

from typing import Optional

import typer

from ragshield.cli.errors import user_errors
from ragshield.cli.llm_options import (Backend, BaseUrl, JudgeModel, Model, NoLLMCache,
                                       settings_with)
from ragshield.cli.output import emit_json
from ragshield.cli.store import opened_store
from ragshield.services.questions.ask_types import ASK_DEFAULTS
from ragshield.services.questions.settlement import MAX_K
from ragshield.types import RetrievalMode, outcome


def ask(
    question: Optional[str] = typer.Option(None, "--question", help="Ask this question."),
    sample: Optional[str] = typer.Option(None, "--sample", help="Or judge this sample id."),
    dataset: str = typer.Option(ASK_DEFAULTS.dataset, "--dataset",
                                help="The dataset of --sample."),
    corpus: str = typer.Option(ASK_DEFAULTS.corpus, "--corpus",
                               help="Corpus to retrieve from for --question."),
    retrieval: RetrievalMode = typer.Option(ASK_DEFAULTS.mode, "--retrieval",
                                            help="Retrieval method for --question."),
    k: int = typer.Option(ASK_DEFAULTS.k, "--k", min=1, max=MAX_K,
                          help="Passages to retrieve for --question."),
    noise: int = typer.Option(ASK_DEFAULTS.noise, "--noise",
                              help="Random corpus chunks added to the passages."),
    answerer: Optional[str] = typer.Option(
        None, "--answerer", help="Answerer name (default: RAGSHIELD_ANSWERER, else evidence)."),
    judges: Optional[str] = typer.Option(
        None, "--judges", help="all, or names separated by commas (default: every free or "
                               "cheap judge and the rule's judges)."),
    rule: Optional[str] = typer.Option(None, "--rule",
                                       help="Decision rule: a judge name, all, majority, "
                                            "grounded or policy:NAME."),
    backend: Backend = None, base_url: BaseUrl = None, model: Model = None,
    judge_model: JudgeModel = None, no_llm_cache: NoLLMCache = False,
    on_unsupported: str = typer.Option(
        ASK_DEFAULTS.on_unsupported, "--on-unsupported",
        help="withhold (the rule decides on the whole answer) or redact (show it without the "
             "sentences the passages do not support; the support judge runs)."),
    no_record: bool = typer.Option(False, "--no-record",
                                   help="Do not keep this ask in the live run."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Answer a question (or a stored sample), run the judges, print the decision. The
    question, answer and verdicts are kept in today's live run (see `runs list`)."""
    from ragshield.services.data.datasets import ensure_demo_dataset
    from ragshield.services.questions.ask_types import AskRequest
    from ragshield.services.questions.asking import OpenedModels, ask as ask_question
    from ragshield.services.questions.decision_json import decision_json
    from ragshield.services.questions.redaction import ON_UNSUPPORTED
    from ragshield.services.questions.settlement import one_of, settle

    if (question is None) == (sample is None):
        typer.echo("error: give exactly one of --question or --sample", err=True)
        raise typer.Exit(code=2)
    with user_errors():
        settings = settings_with(backend, base_url, model, no_llm_cache, judge_model)
        request = AskRequest(
            question=question, sample_id=sample, dataset=dataset, corpus=corpus, mode=retrieval,
            k=k, noise=noise, answerer=answerer, judges=(judges,) if judges else None, rule=rule,
            keep_record=not no_record,
            on_unsupported=one_of(ON_UNSUPPORTED, on_unsupported, "on_unsupported"))
    with user_errors(), opened_store(settings) as store:
        if sample is not None:
            ensure_demo_dataset(store)
        settled = settle(store, settings, request)
        result = ask_question(store, settings, OpenedModels(settings, store), settled)
    if result.prepared.rule_note:
        typer.echo(f"note: {result.prepared.rule_note}", err=True)
    payload = decision_json(result, trace=True, passages=True)
    if as_json:
        emit_json(payload)
        return
    typer.echo(f"Q: {payload['question']}")
    typer.echo(f"A: {payload['answer']['text']}  (cited {payload['answer']['cited_passages']})")
    for verdict in payload["verdicts"]:
        badge = outcome(verdict["keep"], available=verdict["available"], error=verdict["error"])
        typer.echo(f"  {verdict['judge']:<17} {badge:<11} {verdict['reason'][:100]}")
    typer.echo(f"decision: {payload['decision'] or 'undecided'} ({payload['reason']})")
    if payload["shortened"]:
        typer.echo(f"shown, shortened: {payload['shown']}")
    typer.echo(f"why this rule: {payload['rule_reason']}")
    if result.record is not None:
        typer.echo(f"kept in live run {result.record.run_id} as {result.record.dataset}/"
                   f"{result.record.sample_id}")
