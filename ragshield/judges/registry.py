"""Judges by name, for run configurations, the CLI and the UI: the shipped ones
(judges/builtin.py's JUDGES) and the trained ones (trained:NAME). What the faces need to know
about a judge (its cost, a run-level rescoring, its case-study view) the judge class says
itself (judges/base.py)."""

from __future__ import annotations

import inspect
from typing import Any, Mapping

from ragshield.config import Settings
from ragshield.construct import construct
from ragshield.errors import OptionError
from ragshield.judges.base import COSTS, Judge, cost_for
from ragshield.judges.builtin import JUDGES
from ragshield.judges.nli import ClassifierNLIJudge
from ragshield.judges.trained import PREFIX as TRAINED
from ragshield.judges.trained import TrainedJudge, judges_dir, valid_name
from ragshield.judges.unavailable import UnavailableJudge
from ragshield.types import GivenAnswer


def quick_judges(reads: tuple[str, ...] = (), settings: Settings | None = None,
                 given: GivenAnswer | None = None) -> list[str]:
    """The judges worth waiting for in a live demo and in front of a live system: every free
    or cheap one (cheapest first) that `settings` can build, plus the registered judges that
    the rule `reads` (decision_rule.named_judges: they decide, whatever they cost). Costs are
    for the answer judged (`given`, base.cost_for): token_prob re-reads a given answer that
    came without log-probs, so it is then no quick judge."""
    order = {cost: rank for rank, cost in enumerate(COSTS)}
    quick = sorted((name for name, cls in JUDGES.items()
                    if cost_for(cls, given) in ("free", "cheap")
                    and (settings is None or unavailable_reason(name, settings) is None)),
                   key=lambda name: order[cost_for(JUDGES[name], given)])
    return quick + [judge for judge in reads if judge in JUDGES and judge not in quick]


def unavailable_reason(name: str, settings: Settings) -> str | None:
    """Why the registered judge `name` cannot be built with `settings`; None when it can. The
    classifier NLI judge needs a model that is not packaged."""
    if name == ClassifierNLIJudge.name and not settings.nli_model:
        return ("no NLI classifier model is configured (set RAGSHIELD_NLI_MODEL to a "
                "sequence-classification NLI model name or path; nli_llm needs none)")
    return None


def run_rescored() -> dict[str, type[Judge]]:
    """The judges whose scores the run rescores (Judge.rescore_run overridden), by name."""
    own = inspect.getattr_static(Judge, "rescore_run")
    return {name: cls for name, cls in JUDGES.items()
            if inspect.getattr_static(cls, "rescore_run") is not own}


def judge_class(name: str) -> type[Judge] | None:
    """The registered class of a judge stored under `name`, None for a name no longer known."""
    return TrainedJudge if name.startswith(TRAINED) else JUDGES.get(name)


def known_judge(name: str) -> bool:
    """A registered name, or trained:NAME (whether it exists is checked when it is made)."""
    return name in JUDGES or (name.startswith(TRAINED) and valid_name(name[len(TRAINED):]))


def judge_names(spec: str) -> list[str]:
    """"all" or a comma-separated list of registered names (and trained:NAME), validated,
    in the given order. "all" is the registered judges; trained ones are named."""
    if spec.strip().lower() == "all":
        return list(JUDGES)
    names = [name.strip().lower() for name in spec.split(",") if name.strip()]
    unknown = [name for name in names if not known_judge(name)]
    if unknown or not names:
        raise OptionError(f"unknown judge(s) {unknown or spec!r}; valid names: all, "
                          f"{', '.join(JUDGES)}, or trained:NAME")
    return list(dict.fromkeys(names))


def make_judge(name: str, settings: Settings, **options: Any) -> Judge:
    """The judge `name`. A judge that `settings` cannot build (unavailable_reason) is
    reported unavailable rather than failing or being skipped.
    trained:NAME is read from the cache directory (TrainedJudgeError when missing or stale)."""
    if name.startswith(TRAINED):
        return TrainedJudge(judges_dir(settings.cache_dir) / name[len(TRAINED):], **options)
    if name == ClassifierNLIJudge.name and "model" not in options:
        reason = unavailable_reason(name, settings)
        if reason is not None:
            return UnavailableJudge(name, reason)
        options = {**options, "model": settings.nli_model}
    return construct("judge", JUDGES, name, options)


def make_judges(spec: str, settings: Settings,
                options: Mapping[str, Mapping[str, Any]] | None = None) -> list[Judge]:
    """Judges for a spec such as "all" or "counterfactual,nli_llm", each with its options."""
    options = options or {}
    return [make_judge(name, settings, **options.get(name, {})) for name in judge_names(spec)]
