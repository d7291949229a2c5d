"""Which model each judge reads its probabilities from, and the thresholds measured for it.

Nobody named a judge model, every judge reads from the answering model, with one exception. The
packaged 1.5B answers by default where it is installed (requirements.txt has it; the wheel, as
its extra `larger-model`), and so reads for every judge, the passages read once for the answer
and the judges. Where the 0.5B answers (named) and the 1.5B is installed, pre_answer and p_true
read from the packaged 1.5B, the two judges the quality benchmark shows reading far better from
it (QPP PR-AUC of pre_answer 0.78 against 0.66 on SQuAD 2.0; docs/QUALITY.md), and so does support
(claim by claim), whose prompt was chosen and measured on the 1.5B alone (docs/QUALITY.md,
"Support judge"); it shares the 1.5B's cached passages with pre_answer. The other judges read
from the answering model: the 1.5B was not shown better for them, and it costs about three
times as much a call (calibration, which writes its confidence out, 6 s a question).

A named judge model (RAGSHIELD_JUDGE_MODEL, --judge-model, the Demo's "Judge model", the API's
judge_model) reads for every judge; SELF names the answering model.

A yes/no judge's own threshold (0.5) was set for the 0.5B. The 1.5B says "yes" more readily,
so at 0.5 it keeps most answers (pre_answer 84% of them on SQuAD 2.0). Its thresholds were
tuned on four public labelled sets together (the threshold that shows 60% of the right
answers), and each set left out in turn was decided by thresholds tuned on the other three
alone: docs/QUALITY.md, "Where we stand". support's (0.60) is the median of the thresholds
tuned on AttributionBench with each of its seven sources held out in turn (0.50 to 0.60, for
its scores with the words the passages hold; docs/QUALITY.md, "Support judge"). A policy
fitted on a team's own labels overrides them.

Scores read by one model mean nothing at thresholds fitted on another's: a policy and a trained
judge record the model each of their judges read from when they were fitted (`read_by`), and
are read by those models wherever they decide (`JudgeReaders.honouring`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from ragshield.llm.packaged_models import (LARGER_MODEL, SMALLER_MODEL, default_answer_model,
                                           larger_installed)

SELF = "self"  # as a judge model: the answering model reads for every judge
READ_BY_LARGER = ("pre_answer", "p_true", "support")
THRESHOLDS: dict[str, dict[str, float]] = {
    LARGER_MODEL: {"pre_answer": 0.76, "p_true": 0.71, "support": 0.60}}


@dataclass(frozen=True)
class JudgeReaders:
    """The model each judge reads from: `by_judge[judge]`, else `every` (None: the answering
    model)."""

    every: str | None = None
    by_judge: Mapping[str, str] = field(default_factory=dict)  # SELF: the answering model

    def reader(self, judge: str) -> str | None:
        name = self.by_judge.get(judge, self.every)
        return None if name == SELF else name

    def recorded(self, judges: Iterable[str]) -> dict[str, str]:
        """What a run of `judges` records of `by_judge`: its own judges' readers only."""
        ran = set(judges)
        return {judge: model for judge, model in self.by_judge.items() if judge in ran}

    def read_by(self, judges: Iterable[str], answer_model: str) -> dict[str, str]:
        """The model each of `judges` reads from, by name (`answer_model` for the answering
        one): what a policy or a trained judge records when it is fitted."""
        return {judge: self.reader(judge) or answer_model for judge in judges}

    def honouring(self, read_by: Mapping[str, str], answer_model: str) -> JudgeReaders:
        """These readers, with each judge of `read_by` read by the model it names (as
        `read_by` gives it; `answer_model` is the answering model's name here)."""
        if all(self.reader(judge) == _own(name, answer_model) for judge, name in read_by.items()):
            return self
        pinned = {judge: _own(name, answer_model) or SELF for judge, name in read_by.items()}
        return JudgeReaders(self.every, {**self.by_judge, **pinned})

    def models(self, judges: Iterable[str]) -> set[str]:
        """The models other than the answering one that `judges` read from, to open once."""
        return {name for judge in judges if (name := self.reader(judge))}

    def options(self, answer_model: str | None = None) -> dict[str, dict[str, Any]]:
        """`make_judges` options: the thresholds measured for each judge's reader (the
        answering model's, named `answer_model`, where a judge reads from it), none for a
        reader nobody measured."""
        return {judge: {"threshold": threshold}
                for reader, thresholds in THRESHOLDS.items()
                for judge, threshold in thresholds.items()
                if (self.reader(judge) or answer_model) == reader}

    def describe(self) -> str:
        """In words, for pages and run summaries."""
        parts = [f"{judge}: {_words(model)}" for judge, model in self.by_judge.items()]
        others = "the other judges" if parts else "every judge"
        return "; ".join([*parts, f"{others}: {_words(self.every)}"])


def _own(name: str, answer_model: str) -> str | None:
    """A reader's name as JudgeReaders keeps it: None for the answering model."""
    return None if name in (answer_model, SELF) else name


def _words(model: str | None) -> str:
    return "the answering model" if model in (None, SELF) else str(model)


def answer_model_name(backend: str, model: str | None) -> str:
    """The answering model's name, as readers are recorded: a packaged name or GGUF path
    (embedded; None: the default packaged model), else the configured name or the backend."""
    if backend == "embedded":
        return model or default_answer_model()
    return model or f"the {backend} model"


def judge_readers(named: str | None, *, backend: str, answer_model: str | None) -> JudgeReaders:
    """Who reads for which judge, given the judge model `named` (None: nobody named one) and
    what answers (`backend` and the answer model's name, None for the configured default)."""
    if named == SELF:
        return JudgeReaders()
    if named:
        return JudgeReaders(every=named)
    if (backend == "embedded" and answer_model_name(backend, answer_model) == SMALLER_MODEL
            and larger_installed()):
        return JudgeReaders(by_judge={judge: LARGER_MODEL for judge in READ_BY_LARGER})
    return JudgeReaders()
