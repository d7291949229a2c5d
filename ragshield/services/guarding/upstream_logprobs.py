"""The proxy asks its upstream for the answer's token log-probs when a judge reads them.

token_prob (a default judge: it costs nothing when the answer comes with its log-probs)
otherwise re-scores the upstream's answer with the local model, a prompt read that takes
seconds on a CPU, and measures the local model's confidence rather than the answering
model's. An OpenAI-compatible upstream gives them when asked (`"logprobs": true`), so the
proxy asks, and its caller gets the answer without them unless the caller asked too.
Some upstreams refuse the option (reasoning models answer 400): the call is made again
without it, and this process does not ask that upstream again."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ragshield.judges.base import Judge
from ragshield.llm.upstream import StopHook, UpstreamChat, UpstreamRefused, UpstreamReply

Relay = Callable[[dict[str, Any]], None]


class UpstreamLogprobs:
    """Whether to ask one upstream for log-probs, learnt from its refusals."""

    def __init__(self) -> None:
        self.refused = False  # the upstream refused the option once: never asked again

    def complete(self, upstream: UpstreamChat, body: dict[str, Any], judges: Sequence[Judge],
                 timeout_s: Callable[[], float], relay: Relay,
                 on_give_up: StopHook | None = None) -> UpstreamReply:
        """The upstream's reply to `body`, with the answer's log-probs for the judges where
        one of `judges` reads them; the caller sees them only where `body` asked for them.
        `timeout_s` gives the seconds left at each call; `on_give_up` gets what stops each
        (UpstreamChat.complete)."""
        if self.refused or body.get("logprobs") or not any(
                judge.reads_answer_logprobs for judge in judges):
            return upstream.complete(body, timeout_s(), relay, on_give_up)

        def relay_without(chunk: dict[str, Any]) -> None:
            _drop_logprobs(chunk)
            relay(chunk)

        try:
            reply = upstream.complete({**body, "logprobs": True}, timeout_s(), relay_without,
                                      on_give_up)
        except UpstreamRefused as error:
            if error.status != 400 or "logprob" not in str(error).lower():
                raise
            self.refused = True
            return upstream.complete(body, timeout_s(), relay, on_give_up)
        _drop_logprobs(reply.body)
        return reply


def _drop_logprobs(completion: dict[str, Any]) -> None:
    """The log-probs out of a completion's (or a chunk's) choices, as if not asked for."""
    for choice in completion.get("choices") or ():
        if isinstance(choice, dict) and "logprobs" in choice:
            choice["logprobs"] = None
