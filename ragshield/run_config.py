"""What a run is made of: its configuration, checked in full before any model is called."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Iterable, get_args

from ragshield.config import Settings
from ragshield.errors import OptionError
from ragshield.fitted_readers import honour_fitted
from ragshield.judges.judge_readers import SELF, JudgeReaders, answer_model_name, judge_readers
from ragshield.judging import choose_rule
from ragshield.policies.policy import Policy
from ragshield.llm.packaged_models import (LARGER_MODEL, SMALLER_MODEL, SMALLEST_MODEL,
                                           default_answer_model, unknown_embedded_model)
from ragshield.types import RetrievalMode

RETRIEVAL_CHOICES = ("given", *get_args(RetrievalMode))
# What answered an embedded run recorded before runs named their answering model: the
# default answering model of then.
LEGACY_MODEL = SMALLER_MODEL


class RunConfigError(OptionError):
    """A run configuration that cannot run; the message names the field at fault."""


@dataclass
class RunConfig:
    """A run: dataset x passages (given or retrieved) x answerer x judges x model."""

    dataset: str
    limit: int | None = None
    answerer: str = "evidence"  # "given": judge the answers the dataset carries
    judges: list[str] = field(default_factory=lambda: ["all"])
    rule: str | None = None  # None: the default rule, or majority where it does not fit
    retrieval: str = "given"  # "given": the dataset's passages; else a retrieval mode
    corpus: str = "demo"
    k: int = 3
    noise: int = 0
    backend: str = "embedded"
    # embedded: a packaged model's name or a GGUF path, settled when the run is recorded;
    # None in runs recorded before that, which the 0.5B answered unless RAGSHIELD_MODEL said
    # otherwise (the default answering model then; LEGACY_MODEL)
    model: str | None = None
    # The model the judges read their probabilities from (Settings.judge_model's forms);
    # None: the answering model. judge_readers: the judges that read from another model
    # (judges/judge_readers.py), settled when the run is recorded; None in runs recorded
    # before it existed, whose judges all read from judge_model.
    judge_model: str | None = None
    judge_readers: dict[str, str] | None = None
    base_url: str | None = None
    small_model: bool = False  # answer with the packaged smallest model, SmolLM2-135M
    fallback: bool = False  # also store the No-RAG answer of every sample (fallback curve)
    switch: bool = False  # also store the packaged larger model's answer (switch curve)
    seed: int = 0
    concurrency: int = 1
    live: bool = False  # collects asked questions (services/questions/live_runs.py); never executed
    policy: dict[str, Any] | None = None  # the policy `rule` names, as it was when the run began

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise RunConfigError(f"run config: unknown field(s) {unknown}; known: {sorted(known)}")
        if "dataset" not in data:
            raise RunConfigError("run config: field 'dataset' is missing")
        return cls(**data)

    def readers(self) -> JudgeReaders:
        every = None if self.judge_model == SELF else self.judge_model
        return JudgeReaders(every=every, by_judge=self.judge_readers or {})

    def answer_model(self, settings: Settings | None = None) -> str:
        """The answering model's name, as readers are recorded (`settings`: the configured
        model where the run names none; else, on the embedded backend, LEGACY_MODEL)."""
        if self.small_model:
            return SMALLEST_MODEL
        return answer_model_name(self.backend,
                                 self._named_model(settings.model if settings else None))

    def _named_model(self, configured: str | None) -> str | None:
        """The run's model, else the `configured` one, else on the embedded backend the one
        that answered runs recorded before runs named their model (LEGACY_MODEL)."""
        named = self.model or configured
        return LEGACY_MODEL if named is None and self.backend == "embedded" else named

    def read_by(self, judges: Iterable[str]) -> dict[str, str]:
        """The model each of `judges` read from in this run, by name."""
        return self.readers().read_by(judges, self.answer_model())

    def settings(self, base: Settings | None = None) -> Settings:
        """`base` (default: the environment) with this run's model choice."""
        base = base or Settings()
        overrides: dict[str, Any] = {"backend": self.backend,
                                     "model": self._named_model(base.model)}
        if self.base_url is not None:
            overrides["openai_base_url"] = self.base_url
        return base.model_copy(update=overrides)


def with_readers(config: RunConfig, settings: Settings) -> RunConfig:
    """`config` with its answering model and its judges' readers settled: on the embedded
    backend the run's model, else the configured one, else the default answering model
    (llm/packaged_models.py), so that a later default does not change what answers it; the
    judges read from the run's judge model, else the configured one, else the measured
    default for what answers (judges/judge_readers.py); the judges of its policy
    (`config.policy`) and its trained judges read by the models they were fitted on
    (fitted_readers.py)."""
    if config.judge_readers is not None:
        return replace(config, judge_model=config.readers().every)
    if config.backend == "embedded" and config.model is None and not config.small_model:
        config = replace(config, model=settings.model or default_answer_model())
    answer_model = config.answer_model(settings)
    readers = judge_readers(config.judge_model or settings.judge_model, backend=config.backend,
                            answer_model=answer_model)
    policy = Policy.from_dict(config.policy, "run config policy") if config.policy else None
    readers = honour_fitted(readers, policy, config.judges, settings, answer_model,
                            config.backend)
    from ragshield.judges.registry import judge_names

    return replace(config, judge_model=readers.every,
                   judge_readers=readers.recorded(judge_names(",".join(config.judges))))


def check_config(config: RunConfig) -> RunConfig:
    """Raise RunConfigError (or OptionError) naming the field at fault; return the config
    with judge names expanded ("all" -> every registered judge) and its rule settled (see
    choose_rule), so that the stored config is explicit."""
    from ragshield.answerers.registry import GIVEN, make_answerer
    from ragshield.judges.registry import judge_names

    judges = judge_names(",".join(config.judges))
    given = make_answerer(config.answerer).name == GIVEN
    problems = []
    if given and config.retrieval != "given":
        problems.append("given answers were written from the dataset's passages: use them "
                        "with retrieval 'given'")
    if given and config.switch:
        problems.append("switch compares two models' answers: given answers come from the "
                        "dataset")
    if config.retrieval not in RETRIEVAL_CHOICES:
        problems.append(f"retrieval must be one of {', '.join(RETRIEVAL_CHOICES)}, "
                        f"got {config.retrieval!r}")
    if config.limit is not None and config.limit < 1:
        problems.append(f"limit must be at least 1, got {config.limit}")
    if config.k < 1:
        problems.append(f"k must be at least 1, got {config.k}")
    if config.noise < 0:
        problems.append(f"noise cannot be negative, got {config.noise}")
    if config.noise and config.retrieval == "given":
        problems.append("noise chunks come from a corpus: use it with a retrieval mode")
    if config.backend not in ("embedded", "openai", "transformers"):
        problems.append(f"backend must be embedded, openai or transformers, got {config.backend!r}")
    if config.small_model and config.backend != "embedded":
        problems.append("small_model is the packaged small model: it needs backend 'embedded'")
    if config.switch and config.backend != "embedded":
        problems.append("switch compares the embedded model with the packaged larger one: it "
                        "needs backend 'embedded'")
    if config.switch and config.answer_model() == LARGER_MODEL:
        problems.append(f"switch hands withheld answers to the larger model {LARGER_MODEL}, "
                        "which already answers this run: answer with a smaller model")
    readers = {config.judge_model, *(config.judge_readers or {}).values()} - {SELF}
    for reader in sorted(name for name in readers if name) if config.backend == "embedded" else ():
        if (unknown := unknown_embedded_model(reader)) is not None:
            problems.append(f"judge_model {unknown}")
    try:
        rule = choose_rule(config.rule, judges).rule
    except OptionError as exc:
        problems.append(str(exc))
    if config.concurrency < 1:
        problems.append(f"concurrency must be at least 1, got {config.concurrency}")
    if problems:
        raise RunConfigError("run config: " + "; ".join(problems))
    return RunConfig(**{**config.to_dict(), "judges": judges, "rule": rule})
