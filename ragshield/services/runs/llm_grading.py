"""The LLM grader on the configured model (docs/METHODS.md 2), for the services that grade a
run's answers: metrics, reports and a judge trained on answers."""

from __future__ import annotations

from ragshield.config import Settings
from ragshield.grading import LLMGrader
from ragshield.store.database import Store


def configured_grader(settings: Settings, store: Store) -> LLMGrader:
    """A grader that asks the configured model through the store's call cache (the model
    stack is imported only here, when a grader is asked for)."""
    from ragshield.llm.factory import make_llm

    return LLMGrader(make_llm(settings, store=store))
