"""Answerers by name, for run configurations, the CLI and the UI."""

from __future__ import annotations

from typing import Any

from ragshield.answerers.base import Answerer
from ragshield.answerers.crag import CragAnswerer
from ragshield.answerers.evidence import EvidenceAnswerer
from ragshield.answerers.given import GivenAnswerer
from ragshield.answerers.instructrag import InstructRagAnswerer
from ragshield.answerers.norag import NoRagAnswerer
from ragshield.answerers.vanilla import VanillaAnswerer
from ragshield.construct import construct

# The answerers that ask the model: what the ask form and the run form offer.
ANSWERERS: dict[str, type[Answerer]] = {
    cls.name: cls
    for cls in (VanillaAnswerer, EvidenceAnswerer, InstructRagAnswerer, NoRagAnswerer,
                CragAnswerer)
}
# `given` reads the answer a sample carries instead (runs of given answers).
GIVEN = GivenAnswerer.name


def make_answerer(name: str, **options: Any) -> Answerer:
    """The answerer registered as `name` (one of ANSWERERS, or GIVEN), built with `options`
    (its constructor arguments, e.g. options=PromptOptions(...), cot=True). Unknown names or
    options raise OptionError."""
    registry: dict[str, type[Answerer]] = {**ANSWERERS, GIVEN: GivenAnswerer}
    return construct("answerer", registry, name, options)
