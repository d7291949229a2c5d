"""Post-answering NLI (docs/METHODS.md 4.6): does some passage entail the answer?

Hypothesis: `The answer to the question "<q>" is: <a>`. Each passage is a premise on its own;
a passage that does not fit the model's window together with the hypothesis is split into
word windows overlapping by 20 words (the hypothesis is never cut). score = the highest
entailment probability over all windows of all passages; keep = score >= threshold.
No passage -> score 0.0 (nothing supports the answer).

Two engines, two judges (they need different things from the backend):
- `ClassifierNLIJudge` ("nli"): any Hugging Face sequence-classification NLI model; needs no
  LLM (requires nothing; the LLM handed to `judge` is unused). Its window is the tokenizer's
  model_max_length capped at 512 tokens, checked by tokenizing each (window, hypothesis)
  pair. Each pair is recorded in the trace as an LLMCall of kind "classify". A hypothesis
  that alone fills the window gives an error verdict for that sample.
- `LLMNLIJudge` ("nli_llm"): asks the LLM whether the passage supports the statement;
  entailment = P(yes) (yes_no module). A passage shown whole in the sample's shared prefix is
  named by its label after that prefix (cheap: the prefix is cached); one the prefix had to
  cut is asked about window by window in prompts of its own (windows measured in characters,
  as the shared prefix does: the LLM protocol has no tokenizer). Unreadable windows are skipped
  and flagged; when none can be read the answer is discarded (score None).
"""

from __future__ import annotations

import time
from abc import abstractmethod
from dataclasses import dataclass
from typing import Any, Callable

from ragshield.answerers.context import (
    SYSTEM_TEXT,
    PromptOptions,
    fits_tokens,
    passage_budget,
    passage_label,
    shared_messages,
)
from ragshield.errors import UserError
from ragshield.judges.base import Judge
from ragshield.judges.yes_no import REPLY_YES_OR_NO, ask_yes_no
from ragshield.llm.base import CHAT, LOGPROBS, LLMError
from ragshield.llm.traced import TracedLLM
from ragshield.types import Answer, LLMCall, Message, Passage, Sample, Verdict

OVERLAP_WORDS = 20
MAX_CLASSIFIER_TOKENS = 512


class NLIModelError(UserError, ValueError):
    """The NLI model cannot be used (e.g. its config names no entailment label)."""


def hypothesis(question: str, answer: str) -> str:
    return f'The answer to the question "{question}" is: {answer}'


@dataclass(frozen=True)
class Window:
    passage: int
    start: int  # word span [start, end) of the passage's whitespace-split words
    end: int
    text: str
    split: bool  # False: the whole passage, its text untouched


def word_windows(passage: int, text: str, fits: Callable[[str], bool],
                 overlap: int = OVERLAP_WORDS) -> list[Window]:
    """The passage whole if it fits, else the longest word windows that fit, each starting
    `overlap` words before the previous one ended (less when a window holds fewer words)."""
    words = text.split()
    if fits(text):
        return [Window(passage, 0, len(words), text, split=False)]
    windows: list[Window] = []
    start = 0
    while True:
        low, high = start + 1, len(words)  # find the largest end in [low, high] that fits
        while low < high:
            middle = (low + high + 1) // 2
            if fits(" ".join(words[start:middle])):
                low = middle
            else:
                high = middle - 1
        end = low
        windows.append(Window(passage, start, end, " ".join(words[start:end]), split=True))
        if end >= len(words):
            return windows
        start = max(end - overlap, start + 1)


def window_purpose(judge: str, window: Window) -> str:
    return f"{judge}: {passage_label(window.passage)} words {window.start}-{window.end}"


class NLIJudge(Judge):
    def __init__(self, threshold: float = 0.5, options: PromptOptions = PromptOptions()) -> None:
        super().__init__(options)
        self.threshold = threshold

    @abstractmethod
    def entailments(self, sample: Sample, hypothesis: str,
                    llm: TracedLLM) -> list[tuple[Window, float | None]]:
        """Each window with its entailment probability (None when it could not be read)."""

    def decide(self, sample: Sample, answer: Answer, llm: TracedLLM) -> Verdict:
        claim = hypothesis(sample.question, answer.text)
        scored = self.entailments(sample, claim, llm)
        details: dict[str, Any] = {
            "hypothesis": claim, "threshold": self.threshold,
            "windows": [{"passage": w.passage, "words": [w.start, w.end], "split": w.split,
                         "entailment": p} for w, p in scored],
        }
        if not scored:
            return Verdict(judge=self.name, keep=0.0 >= self.threshold, score=0.0,
                           details=details, rationale="no passage to support the answer")
        readable = [(w, p) for w, p in scored if p is not None]
        unread = len(scored) - len(readable)
        error = f"{unread} of {len(scored)} windows could not be read" if unread else None
        if not readable:
            return Verdict(judge=self.name, keep=False, score=None, parse_error=error,
                           details=details, rationale="no window could be read; withheld")
        best, score = max(readable, key=lambda pair: pair[1])
        details["best"] = {"passage": best.passage, "words": [best.start, best.end],
                           "text": best.text}
        keep = score >= self.threshold
        where = passage_label(best.passage)
        if best.split:
            where = f"words {best.start}-{best.end} of {where}"
        return Verdict(
            judge=self.name, keep=keep, score=score, parse_error=error, details=details,
            rationale=(f"{where} entails the answer with probability {score:.2f} "
                       f"({'>=' if keep else '<'} threshold {self.threshold:g}; "
                       f"{len(scored)} windows over {len(sample.passages)} passages)"),
        )


def _premises(passages: list[Passage]) -> list[tuple[int, str]]:
    return [(i, p.text) for i, p in enumerate(passages) if p.text.strip()]


class ClassifierNLIJudge(NLIJudge):
    name = "nli"
    requires = frozenset()
    cost = "free"  # no LLM call: its own classifier

    def __init__(
        self, model: str = "cross-encoder/nli-deberta-v3-xsmall", *, threshold: float = 0.5,
        batch_size: int = 16, device: str | None = None,
        options: PromptOptions = PromptOptions(),
    ) -> None:
        """Loads the model now, so a wrong name or a model without an entailment label fails
        at configuration time, not mid-run."""
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        from ragshield.llm.transformers_backend import default_device

        super().__init__(threshold, options)
        self.model_name = model
        self.batch_size = batch_size
        self.device = device or default_device()
        self.tokenizer = AutoTokenizer.from_pretrained(model)
        self.model = AutoModelForSequenceClassification.from_pretrained(model).to(self.device)
        self.model.eval()
        labels = {int(k): str(v) for k, v in (self.model.config.id2label or {}).items()}
        matches = [i for i, label in labels.items() if label.lower().startswith("entail")]
        if len(matches) != 1:
            raise NLIModelError(
                f"NLI model {model}: cannot find one entailment label in config.id2label {labels}"
            )
        self.entailment_index = matches[0]
        self.max_length = min(int(self.tokenizer.model_max_length), MAX_CLASSIFIER_TOKENS)

    def _length(self, premise: str, claim: str) -> int:
        return len(self.tokenizer(premise, claim, verbose=False)["input_ids"])

    def entailments(self, sample: Sample, hypothesis: str,
                    llm: TracedLLM) -> list[tuple[Window, float | None]]:
        if self._length("", hypothesis) >= self.max_length:
            # Not a backend failure, but the same outcome: this sample gets an error verdict.
            raise LLMError(f"NLI model {self.model_name}: the hypothesis alone fills its "
                           f"{self.max_length}-token window")

        def fits(text: str) -> bool:
            return self._length(text, hypothesis) <= self.max_length

        windows = [window for i, text in _premises(sample.passages)
                   for window in word_windows(i, text, fits)]
        probabilities: list[float] = []
        for first in range(0, len(windows), self.batch_size):
            batch = windows[first:first + self.batch_size]
            probabilities += self._classify(batch, hypothesis, llm)
        return list(zip(windows, probabilities))

    def _classify(self, batch: list[Window], hypothesis: str, llm: TracedLLM) -> list[float]:
        import torch

        started = time.perf_counter()
        encoded = self.tokenizer(
            [w.text for w in batch], [hypothesis] * len(batch), padding=True,
            truncation="only_first", max_length=self.max_length, return_tensors="pt",
        ).to(self.device)
        with torch.no_grad():
            probabilities = torch.softmax(self.model(**encoded).logits.float(), dim=-1)
        seconds = (time.perf_counter() - started) / len(batch)
        labels = self.model.config.id2label
        entailment = []
        for window, row, mask in zip(batch, probabilities.tolist(), encoded["attention_mask"]):
            entailment.append(row[self.entailment_index])
            pair = f"Premise: {window.text}\nHypothesis: {hypothesis}"
            llm.calls.append(LLMCall(
                purpose=window_purpose(self.name, window),
                messages=[{"role": "user", "content": pair}],
                output=", ".join(f"{labels[i]} {p:.3f}" for i, p in enumerate(row)),
                parsed=row[self.entailment_index], prompt_tokens=int(mask.sum()),
                seconds=seconds, kind="classify",
            ))
        return entailment


class LLMNLIJudge(NLIJudge):
    name = "nli_llm"
    requires = frozenset({CHAT, LOGPROBS})
    cost = "moderate"  # one call per passage (per window of a long one)

    def entailments(self, sample: Sample, hypothesis: str,
                    llm: TracedLLM) -> list[tuple[Window, float | None]]:
        prefix = shared_messages(sample, "", self.options)[-1]["content"]
        question = f"Statement: {hypothesis}\n\n"
        budget = passage_budget(self.options.n_ctx, hypothesis)
        whole = [(i, text) for i, text in _premises(sample.passages) if text in prefix]
        cut = [(i, text) for i, text in _premises(sample.passages) if text not in prefix]
        scored: list[tuple[Window, float | None]] = []
        for i, text in whole:  # first, while the cached prefix is still the sample's
            window = Window(i, 0, len(text.split()), text, split=False)
            label = passage_label(i)
            messages = shared_messages(
                sample, f"{question}Consider {label} alone. Does {label} support the "
                f"statement? {REPLY_YES_OR_NO}", self.options)
            scored.append((window, self._ask(llm, messages, window)))
        for i, text in cut:
            for window in word_windows(i, text, lambda t: fits_tokens(t, budget)):
                messages = [
                    {"role": "system", "content": SYSTEM_TEXT},
                    {"role": "user", "content": f"Passage: {window.text}\n\n{question}Does the "
                     f"passage support the statement? {REPLY_YES_OR_NO}"},
                ]
                scored.append((window, self._ask(llm, messages, window)))
        return sorted(scored, key=lambda pair: (pair[0].passage, pair[0].start))

    def _ask(self, llm: TracedLLM, messages: list[Message], window: Window) -> float | None:
        return ask_yes_no(llm, messages, purpose=window_purpose(self.name, window)).p_yes
