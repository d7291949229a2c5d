"""A scripted LLM test double for pinning down decision logic (never used outside tests)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from ragshield.llm.base import CHAT, LOGPROBS, LLM, SCORE, BackendBase, CapabilityError
from ragshield.types import Completion, ContinuationScore, Message, TokenLogprob

Reply = str | Callable[[Sequence[Message]], str]


@dataclass
class ScriptedReply:
    """One reply; `top` is the next-token distribution of its first token (log-probs)."""

    text: str
    top: dict[str, float] = field(default_factory=dict)


class ScriptedLLM(BackendBase):
    """Answers each chat call with the next scripted reply (or a function of the messages).

    `scores` maps a continuation to the per-token log-probs that score() returns.
    Every call is recorded in `seen` so tests can check prompts.
    """

    backend = "scripted"
    model = "test-double"

    def __init__(
        self,
        replies: Sequence[Reply | ScriptedReply] = (),
        *,
        respond: Callable[[Sequence[Message]], Reply | ScriptedReply] | None = None,
        scores: dict[str, list[float]] | None = None,
        capabilities: frozenset[str] = frozenset({CHAT, LOGPROBS, SCORE}),
    ) -> None:
        self.replies = list(replies)
        self.respond = respond
        self.scores = scores or {}
        self.capabilities = capabilities
        self.seen: list[list[Message]] = []
        self.params: list[dict] = []  # each chat call's sampling parameters

    def chat(self, messages, *, max_tokens=256, temperature=0.0, seed=0, logprobs=False,
             top_logprobs=0, stop=None) -> Completion:
        self.seen.append([dict(m) for m in messages])
        self.params.append({"max_tokens": max_tokens, "temperature": temperature, "seed": seed,
                            "logprobs": logprobs, "top_logprobs": top_logprobs, "stop": stop})
        if logprobs and LOGPROBS not in self.capabilities:
            raise CapabilityError("scripted LLM has no log-probs")
        if self.respond is not None:
            reply = self.respond(messages)
        elif self.replies:
            reply = self.replies.pop(0)
        else:
            raise AssertionError(
                f"unscripted call #{len(self.seen)}: {messages[-1]['content'][:200]}")
        if callable(reply):
            reply = reply(messages)
        if isinstance(reply, str):
            reply = ScriptedReply(reply)
        tokens = None
        if logprobs:
            words = reply.text.split() or [""]
            first_lp = reply.top.get(words[0], -0.1)
            tokens = [TokenLogprob(words[0], first_lp, dict(reply.top))]
            tokens += [TokenLogprob(" " + w, -0.1, {}) for w in words[1:]]
        return Completion(
            text=reply.text, backend=self.backend, model=self.model,
            prompt_tokens=sum(len(m["content"].split()) for m in messages),
            completion_tokens=len(reply.text.split()), seconds=0.001, finish_reason="stop",
            tokens=tokens,
        )

    def score(self, prompt_messages, continuation) -> ContinuationScore:
        self.require(SCORE)
        self.seen.append([dict(m) for m in prompt_messages])
        logprobs = self.scores.get(continuation, [-1.0])
        return ContinuationScore(
            tokens=[TokenLogprob(continuation, lp) for lp in logprobs],
            backend=self.backend, model=self.model, seconds=0.001,
        )


class FakeModels:
    """Every ask gets the same model (services.questions.asking.Models), whatever packaged model it
    names: the in-process model of a real server."""

    def __init__(self, llm: LLM) -> None:
        self.llm_ = llm

    def llm(self, packaged: str | None = None) -> LLM:
        return self.llm_
