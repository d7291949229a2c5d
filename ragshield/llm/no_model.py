"""The model of an ask that calls none: a given answer judged only by judges that read no
model (the trivial judge, a classifier of their own). Opening the configured model for it
would load gigabytes, or fail on a server whose model is missing, for nothing."""

from __future__ import annotations

from typing import Any, Unpack

from ragshield.llm.base import BackendBase, CapabilityError, ChatOptions
from ragshield.types import Completion, ContinuationScore


class NoModel(BackendBase):
    """Offers no capability: a judge that requires one is reported unavailable, and a call
    is a CapabilityError (the ask was wrongly thought to need no model)."""

    backend = "none"
    model = "no model"

    @property
    def name(self) -> str:
        return "no model"

    def chat(self, messages: Any, **options: Unpack[ChatOptions]) -> Completion:
        raise CapabilityError("no model was opened for this ask")

    def score(self, prompt_messages: Any, continuation: str) -> ContinuationScore:
        raise CapabilityError("no model was opened for this ask")
