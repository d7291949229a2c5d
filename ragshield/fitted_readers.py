"""The judges that must read from the model they were fitted on: the judges a policy reads,
and each trained judge that reads LLM scores. Their thresholds and weights were fitted on
one model's probabilities; read by another, they would mean something else
(judges/judge_readers.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ragshield.config import Settings
from ragshield.judges.judge_readers import JudgeReaders
from ragshield.judges.trained import PREFIX, trained_read_by
from ragshield.judging import Rule
from ragshield.policies.policy import Policy


def fitted_read_by(rule: Rule | None, judges: Sequence[str], cache_dir: Path) -> dict[str, str]:
    """Judge -> the model it must read from: the policy's judges (`rule`, when it is one)
    and the trained judges among `judges`."""
    wanted = dict(rule.reads_from) if isinstance(rule, Policy) else {}
    for name in judges:
        if name.startswith(PREFIX):
            wanted.update(trained_read_by(name, cache_dir))
    return wanted


def honour_fitted(readers: JudgeReaders, rule: Rule | None, judges: Sequence[str],
                  settings: Settings, answer_model: str) -> JudgeReaders:
    """`readers`, with the fitted judges read by the models they were fitted on
    (`answer_model`: the answering model's name here)."""
    return readers.honouring(fitted_read_by(rule, judges, settings.cache_dir), answer_model)
