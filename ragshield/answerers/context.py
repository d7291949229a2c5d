"""The shared prompt prefix of a sample: system text, passages, question.

Every answerer and judge puts its own instructions *after* this prefix, and multi-turn
judges continue the base conversation, so llama.cpp reads the passages once per sample and
reuses the cached prefix for every later call (see DESIGN, "cost of a judge").
"""

from __future__ import annotations

from dataclasses import dataclass

from ragshield.types import Message, Passage, Sample

SYSTEM_TEXT = (
    "You answer questions about a set of numbered passages. Read them carefully, rely on "
    "them rather than on memory, and keep answers short."
)
# Roughly 3.5 characters per token for English text; the window keeps room for the
# instructions, the question and the reply.
CHARS_PER_TOKEN = 3.5
RESERVED_TOKENS = 900
TRUNCATION_MARK = " [...]"


@dataclass(frozen=True)
class PromptOptions:
    n_ctx: int = 4096
    query_first: bool = False  # METHODS 6: query after the references (default) or before


def passage_label(index: int) -> str:
    return f"Passage-{index}"


def fit_passages(passages: list[Passage], budget_chars: int) -> list[str]:
    """Passage texts cut to fit the budget: long ones are trimmed first, short ones kept whole.

    The question is never cut; only passages are.
    """
    texts = [p.text if not p.title else f"({p.title}) {p.text}" for p in passages]
    if sum(len(t) for t in texts) <= budget_chars:
        return texts
    # Water-filling: find the per-passage cap that uses the budget exactly.
    remaining, cap = budget_chars, 0
    for count, length in enumerate(sorted(len(t) for t in texts)):
        share = remaining // (len(texts) - count)
        if length > share:
            cap = share
            break
        remaining -= length
    return [t if len(t) <= cap else t[: max(cap - len(TRUNCATION_MARK), 0)] + TRUNCATION_MARK
            for t in texts]


def context_block(question: str, passages: list[Passage], options: PromptOptions) -> str:
    budget = int((options.n_ctx - RESERVED_TOKENS) * CHARS_PER_TOKEN) - len(question)
    if passages:
        texts = fit_passages(passages, max(budget, 200))
        block = "\n\n".join(f"{passage_label(i)}: {t}" for i, t in enumerate(texts))
    else:
        block = "(no passages were retrieved)"
    parts = [f"Passages:\n{block}", f"Question: {question}"]
    return "\n\n".join(reversed(parts) if options.query_first else parts)


def shared_messages(
    sample: Sample, instructions: str, options: PromptOptions = PromptOptions()
) -> list[Message]:
    """System text, then one user turn: passages and question (the shared prefix), then the
    caller's own instructions."""
    context = context_block(sample.question, sample.passages, options)
    return [
        {"role": "system", "content": SYSTEM_TEXT},
        {"role": "user", "content": f"{context}\n\n{instructions}"},
    ]
