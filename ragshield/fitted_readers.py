"""The judges that must read from the model they were fitted on: the judges a policy reads,
and each trained judge that reads LLM scores. Their thresholds and weights were fitted on
one model's probabilities; read by another, they would mean something else
(judges/judge_readers.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from ragshield.config import Settings
from ragshield.errors import OptionError
from ragshield.judges.judge_readers import SELF, JudgeReaders
from ragshield.judges.trained import PREFIX, trained_read_by
from ragshield.decision_rule import Rule
from ragshield.llm.packaged_models import unknown_embedded_model
from ragshield.policies.policy import Policy


def fitted_read_by(rule: Rule | None, judges: Sequence[str], cache_dir: Path,
                   backend: str) -> dict[str, str]:
    """Judge -> the model it must read from: the policy's judges (`rule`, when it is one)
    and the trained judges among `judges`. OptionError, naming the policy or the trained
    judge, when such a model cannot be opened on the embedded `backend` here."""
    wanted: dict[str, str] = {}
    if isinstance(rule, Policy):
        wanted.update(_openable(rule.reads_from, f"policy {rule.rule}", backend))
    for name in judges:
        if name.startswith(PREFIX):
            wanted.update(_openable(trained_read_by(name, cache_dir), name, backend))
    return wanted


def _openable(read_by: Mapping[str, str], fitted: str, backend: str) -> Mapping[str, str]:
    for judge, model in read_by.items():
        problem = (unknown_embedded_model(model) if backend == "embedded" and model != SELF
                   else None)
        if problem is not None:
            raise OptionError(f"{fitted} was fitted on {judge} read by {model!r}, which "
                              f"cannot be opened here ({problem}): fit it again on a run "
                              "read by a model this machine has")
    return read_by


def honour_fitted(readers: JudgeReaders, rule: Rule | None, judges: Sequence[str],
                  settings: Settings, answer_model: str, backend: str) -> JudgeReaders:
    """`readers`, with the fitted judges read by the models they were fitted on
    (`answer_model`: the answering model's name here; `backend`: what answers)."""
    return readers.honouring(fitted_read_by(rule, judges, settings.cache_dir, backend),
                             answer_model)
