"""Evidence RAG (docs/METHODS.md 4.1, RC-RAG's base prompt): a short answer, then the labels of the
passages it relied on, or "internal knowledge" when none helped. Counterfactual prompting
continues this conversation and compares the cited passages."""

from __future__ import annotations

from ragshield.answerers.prompted import PromptedAnswerer
from ragshield.types import Sample

INSTRUCTIONS = (
    "Answer the question using the passages above, in as few words as you can, and say which "
    "passages contain the answer. If none does and you answered from what you already know, "
    "cite \"internal knowledge\" instead of passages. Reply in exactly two lines, in this "
    "form:\n"
    "Answer: <short answer>\n"
    "Evidence: ## <passage labels, e.g. Passage-3> ##"
)


class EvidenceAnswerer(PromptedAnswerer):
    name = "evidence"
    wants_evidence = True

    def instructions(self, sample: Sample) -> str:
        return INSTRUCTIONS
