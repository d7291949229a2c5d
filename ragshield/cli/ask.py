"""`ragshield ask`: one question through retrieval, an answerer and the judges."""

from __future__ import annotations

from typing import Optional

import typer

from ragshield.cli.errors import user_errors
from ragshield.cli.llm_options import Backend, BaseUrl, Model, NoLLMCache, settings_with
from ragshield.cli.output import emit_json
from ragshield.cli.store import opened_store
from ragshield.retrieval.factory import RetrievalMode
from ragshield.types import Sample, outcome


def ask(
    question: Optional[str] = typer.Option(None, "--question", help="Ask this question."),
    sample: Optional[str] = typer.Option(None, "--sample", help="Or judge this sample id."),
    dataset: str = typer.Option("demo", "--dataset", help="The dataset of --sample."),
    corpus: str = typer.Option("demo", "--corpus", help="Corpus to retrieve from for --question."),
    mode: RetrievalMode = typer.Option("hybrid", "--mode", help="Retrieval method for --question."),
    k: int = typer.Option(3, "--k", help="Passages to retrieve for --question."),
    noise: int = typer.Option(0, "--noise", help="Random corpus chunks added to the passages."),
    answerer: Optional[str] = typer.Option(None, "--answerer",
                                           help="Answerer name (default: evidence)."),
    judges: str = typer.Option("all", "--judges", help="all, or names separated by commas."),
    rule: Optional[str] = typer.Option(None, "--rule",
                                       help="Decision rule: a judge name, all or majority."),
    backend: Backend = None, base_url: BaseUrl = None, model: Model = None,
    no_llm_cache: NoLLMCache = False,
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Answer a question (or a stored sample), run the judges, print the decision."""
    from ragshield.answerers.registry import make_answerer
    from ragshield.datasets.demo import ensure_demo_dataset
    from ragshield.judges.registry import make_judges
    from ragshield.judging import choose_rule, judge_sample, judged_sample_dict
    from ragshield.llm.factory import make_llm
    from ragshield.retrieval.passage_finder import PassageFinder
    from ragshield.store.samples import load_sample

    if (question is None) == (sample is None):
        typer.echo("error: give exactly one of --question or --sample", err=True)
        raise typer.Exit(code=2)
    settings = settings_with(backend, base_url, model, no_llm_cache)
    with user_errors():
        chosen_answerer = make_answerer(answerer or settings.answerer)
        chosen_judges = make_judges(judges, settings)
        choice = choose_rule(rule, [judge.name for judge in chosen_judges],
                             settings.decision_rule)
        if choice.note:
            typer.echo(f"note: {choice.note}", err=True)
        with opened_store(settings) as store:
            if sample is not None:
                ensure_demo_dataset(store)
                target = load_sample(store, dataset, sample)
            else:
                finder = PassageFinder(corpus, mode, k, noise=noise, settings=settings)
                target = Sample(id="ad-hoc", question=question or "",
                                passages=finder.find(question or ""))
            llm = make_llm(settings, store=store)
            result = judge_sample(target, llm, chosen_answerer, chosen_judges, choice.rule)
    payload = judged_sample_dict(result)
    if as_json:
        emit_json(payload)
        return
    typer.echo(f"Q: {payload['question']}")
    typer.echo(f"A: {payload['answer']['text']}  (evidence {payload['answer']['evidence']})")
    for verdict in payload["verdicts"]:
        badge = outcome(verdict["keep"], available=verdict["available"], error=verdict["error"])
        typer.echo(f"  {verdict['judge']:<17} {badge:<11} {verdict['rationale'][:100]}")
    typer.echo(f"decision: {payload['decision'] or 'undecided'} ({payload['decision_reason']})")
