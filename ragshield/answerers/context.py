"""The shared prompt prefix of a sample: system text, passages, question.

Every answerer and judge puts its own instructions *after* this prefix, and multi-turn
judges continue the base conversation, so llama.cpp reads the passages once per sample and
reuses the cached prefix for every later call (see DESIGN, "cost of a judge").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragshield.types import Message, Passage, Sample, passage_label

SYSTEM_TEXT = (
    "You answer questions about a set of numbered passages. Read them carefully, rely on "
    "them rather than on memory, and keep answers short."
)
# Roughly 3.5 characters per token for English words; the window keeps room for the
# instructions, the question and the reply.
CHARS_PER_TOKEN = 3.5
RESERVED_TOKENS = 900
TRUNCATION_MARK = " [...]"
# Runs of ASCII letters, runs of whitespace, and any other single character.
_PIECE = re.compile(r"[A-Za-z]+|\s+|[^A-Za-z\s]")


@dataclass(frozen=True)
class PromptOptions:
    n_ctx: int = 4096
    query_first: bool = False  # docs/METHODS.md 6: query after the references (default) or before


def _piece_tokens(piece: str) -> float:
    """A word of ASCII letters costs one token per CHARS_PER_TOKEN characters (at least
    one), whitespace as much per character; any other character (a digit, a symbol, a
    letter outside ASCII such as Chinese or an emoji) about one token of its own."""
    if piece[0].isspace():
        return len(piece) / CHARS_PER_TOKEN
    if piece[0].isascii() and piece[0].isalpha():
        return max(1.0, len(piece) / CHARS_PER_TOKEN)
    return 1.0


def estimated_tokens(text: str) -> float:
    """The tokens `text` takes, estimated without a tokenizer (prompts are built before a
    backend is chosen). Never below len(text) / CHARS_PER_TOKEN; digits, symbols and
    non-English scripts, which take far more tokens per character, count more."""
    return sum(_piece_tokens(m.group()) for m in _PIECE.finditer(text))


def cut_to_tokens(text: str, budget: float) -> str:
    """The longest prefix of `text` ending at a piece boundary whose estimate fits `budget`."""
    # Every character costs at least 1 / CHARS_PER_TOKEN, so a longer prefix cannot fit:
    # a 5 MB passage is never scanned whole.
    text = text[: int(max(budget, 0) * CHARS_PER_TOKEN) + 1]
    used = 0.0
    for match in _PIECE.finditer(text):
        used += _piece_tokens(match.group())
        if used > budget:
            return text[: match.start()]
    return text


def fits_tokens(text: str, budget: float) -> bool:
    """Whether the estimate of `text` fits `budget` (without reading past the budget)."""
    return len(cut_to_tokens(text, budget)) == len(text)


def fit_passages(passages: list[Passage], budget_tokens: float) -> list[str]:
    """Passage texts cut to fit the budget (estimated tokens): long ones are trimmed first,
    short ones kept whole. The question is never cut; only passages are."""
    texts = [p.text if not p.title else f"({p.title}) {p.text}" for p in passages]
    # A text longer than the whole budget allows is cut first, so no estimate reads megabytes.
    sizes = [estimated_tokens(cut_to_tokens(t, budget_tokens + 1)) for t in texts]
    if sum(sizes) <= budget_tokens:
        return texts
    # Water-filling: find the per-passage cap that uses the budget exactly.
    remaining, cap = budget_tokens, 0.0
    for count, size in enumerate(sorted(sizes)):
        share = remaining / (len(texts) - count)
        if size > share:
            cap = share
            break
        remaining -= size
    mark = estimated_tokens(TRUNCATION_MARK)
    return [t if size <= cap else cut_to_tokens(t, cap - mark) + TRUNCATION_MARK
            for t, size in zip(texts, sizes)]


def passage_budget(n_ctx: int, question: str) -> float:
    """Estimated tokens left for passages once the question and the reserve are counted
    (at least a few dozen, so that some of every passage is shown)."""
    return max(n_ctx - RESERVED_TOKENS - estimated_tokens(question), 60.0)


def context_block(question: str, passages: list[Passage], options: PromptOptions) -> str:
    if passages:
        texts = fit_passages(passages, passage_budget(options.n_ctx, question))
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
