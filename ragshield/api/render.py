"""The guard API's answers as JSON: a judged call (services/questions/decision_json.py) and, for the
proxy, the upstream's completion with what the user may see."""

from __future__ import annotations

from typing import Any

from ragshield.services.guarding.guard import Guarded
from ragshield.services.questions.decision_json import decision_json, shown_text


# What a withheld answer's completion keeps of the upstream's top level: any other field (an
# `output_text`, a reasoning summary) may spell the answer out.
WITHHELD_KEEPS = ("id", "object", "created", "model", "system_fingerprint", "usage")


def judged_json(guarded: Guarded, *, trace: bool = False,
                passages: bool = False) -> dict[str, Any]:
    return decision_json(guarded.result, guarded.seconds, trace=trace, passages=passages)


def completion_json(guarded: Guarded) -> dict[str, Any]:
    """The upstream's completion as it came, with its first choice only (the one judged: any
    other is an answer nobody judged), whose answer, when withheld, is replaced by what the
    user may see. A withheld choice keeps only what says nothing of the answer (index,
    finish reason), and of the completion's top level only WITHHELD_KEEPS: log-probs, a
    reasoning text, a refusal field or an `output_text` would spell it out.
    ragshield's verdicts ride along in the extra field `ragshield`, less `shown`: the content
    is what is shown, and the answer is sent back at most twice (content,
    `ragshield.answer.text`)."""
    assert guarded.upstream is not None
    body = guarded.upstream.body
    choice = dict(body["choices"][0])
    # Withheld or shortened: only what shows stays (extras would spell out what was cut).
    if guarded.result.fallback is not None or guarded.result.redaction is not None:
        body = {name: body[name] for name in WITHHELD_KEEPS if name in body}
        choice = {"index": choice.get("index", 0),
                  "message": {"role": "assistant", "content": shown_text(guarded.result)},
                  "finish_reason": choice.get("finish_reason")}
    verdicts = judged_json(guarded)
    del verdicts["shown"]
    return {**body, "choices": [choice], "ragshield": verdicts}
