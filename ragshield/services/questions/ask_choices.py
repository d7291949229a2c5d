"""What the ask form offers: the samples of a dataset, corpora, and the decision rules that
fit the chosen judges (the datasets come from ragshield.services.data.datasets)."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from ragshield.answerers.registry import ANSWERERS, GIVEN
from ragshield.config import Settings
from ragshield.datasets.validation import MAX_MODEL_LENGTH
from ragshield.judges.builtin import JUDGES
from ragshield.decision_rule import POOLED_RULES
from ragshield.judging import fitting_rules
from ragshield.judges.judge_readers import SELF
from ragshield.llm.packaged_models import SMALLER_MODEL, LARGER_MODEL, PACKAGED_MODELS
from ragshield.policies.rules import policy_rule
from ragshield.policies.stacked_score import STACKED
from ragshield.retrieval.corpus_store import list_corpora
from ragshield.retrieval.demo_corpus import DEMO_CORPUS_NAME
from ragshield.run_config import RETRIEVAL_CHOICES
from ragshield.store.database import Store
from ragshield.store.samples import list_samples

# What the forms offer by name (the answerers, the given-answer answerer, the packaged models
# and the retrieval choices of a run), so that the faces need not read the registries.
__all__ = ["ANSWERERS", "SMALLER_MODEL", "GIVEN", "JUDGE_MODEL_CHOICES", "LARGER_MODEL",
           "MAX_MODEL_LENGTH", "MODEL_CHOICES", "SELF",
           "PACKAGED_MODELS", "RETRIEVAL_CHOICES", "corpus_names", "judge_choices",
           "packaged_choice", "rule_choices", "sample_choices"]

SAMPLE_LABEL_CHARS = 120
CONFIGURED_MODEL = "configured"  # the model choice that means the configured model
MODEL_CHOICES = (CONFIGURED_MODEL, *PACKAGED_MODELS)
MODEL_NOTE = (f"{CONFIGURED_MODEL}: the model ragshield is set up with (the embedded "
              f"{LARGER_MODEL} where installed, else the {SMALLER_MODEL}, unless "
              "RAGSHIELD_MODEL or the backend say otherwise); or a packaged model by name.")


JUDGE_MODEL_CHOICES = (CONFIGURED_MODEL, SELF, *PACKAGED_MODELS)
JUDGE_MODEL_NOTE = (f"the model every judge reads its probabilities from; {CONFIGURED_MODEL}: "
                    f"RAGSHIELD_JUDGE_MODEL, else the answer model, except where the "
                    f"{SMALLER_MODEL} answers: pre_answer, p_true and support then read from "
                    f"the {LARGER_MODEL}; {SELF}: the answer model. A larger reader judges "
                    "better and costs more (docs/DEPLOYMENT.md, Models).")


def judge_choices(settings: Settings) -> list[str]:
    """The judges a form offers: the registered ones, then every trained judge that can be
    used (trained:NAME; one whose card is missing or stale is left out)."""
    from ragshield.services.learning.judge_training import TrainedJudgeInfo, trained_judges

    return list(JUDGES) + [found.judge for found in trained_judges(settings)
                           if isinstance(found, TrainedJudgeInfo)]


def packaged_choice(choice: str | None) -> str | None:
    """The packaged model a model choice names; None for the configured model."""
    return None if choice in (None, "", CONFIGURED_MODEL) else choice


def rule_choices(judges: list[str], rule: str | None,
                 policies: Mapping[str, str] | None = None) -> tuple[list[str], str]:
    """The decision rules that fit the chosen judges (with the stored policies, name ->
    the judge each reads, whose judge is chosen; a stacked policy is offered always and
    names the judges it still needs when chosen; `rule`, a version of one of them such as
    the pinned default, beside it), and the rule to select."""
    fitting = [policy_rule(name, None) for name, source in (policies or {}).items()
               if source in judges or source == STACKED]
    named, _, version = (rule or "").partition("@")
    if version.isdecimal() and named in fitting:
        fitting.append(str(rule))
    choices = [*fitting_rules(judges), *fitting]
    return choices, rule if rule in choices else POOLED_RULES[0]


def corpus_names(corpora_dir: Path) -> list[str]:
    """The packaged demo corpus first, then every corpus ingested into `corpora_dir`."""
    names = [manifest.name for manifest in list_corpora(corpora_dir)]
    return list(dict.fromkeys([DEMO_CORPUS_NAME, *names]))


def sample_choices(store: Store, dataset: str) -> list[tuple[str, str]]:
    """(`id: question`, id) for each sample of the dataset; UnknownDatasetError if none."""
    return [(f"{s.id}: {s.question[:SAMPLE_LABEL_CHARS]}", s.id)
            for s in list_samples(store, dataset)]
