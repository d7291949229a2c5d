"""Answerers by name, for run configurations, the CLI and the UI."""

from __future__ import annotations

from typing import Any

from ragshield.answerers.base import Answerer
from ragshield.answerers.crag import CragAnswerer
from ragshield.answerers.evidence import EvidenceAnswerer
from ragshield.answerers.instructrag import InstructRagAnswerer
from ragshield.answerers.norag import NoRagAnswerer
from ragshield.answerers.vanilla import VanillaAnswerer
from ragshield.construct import construct

ANSWERERS: dict[str, type[Answerer]] = {
    cls.name: cls
    for cls in (VanillaAnswerer, EvidenceAnswerer, InstructRagAnswerer, NoRagAnswerer,
                CragAnswerer)
}


def make_answerer(name: str, **options: Any) -> Answerer:
    """The answerer registered as `name`, built with `options` (its constructor arguments,
    e.g. options=PromptOptions(...), cot=True). Unknown names or options raise OptionError."""
    return construct("answerer", ANSWERERS, name, options)
