"""The guard API's answers as JSON: a judged call (services/decision_json.py) and, for the
proxy, the upstream's completion with what the user may see."""

from __future__ import annotations

import copy
from typing import Any

from ragshield.services.decision_json import decision_json, shown_text
from ragshield.services.guard import Guarded


def judged_json(guarded: Guarded, *, trace: bool = False,
                passages: bool = False) -> dict[str, Any]:
    return decision_json(guarded.result, guarded.seconds, trace=trace, passages=passages)


def completion_json(guarded: Guarded) -> dict[str, Any]:
    """The upstream's completion as it came, except that a withheld answer is replaced by
    what the user may see (and its token log-probs, which would spell it out, removed);
    ragshield's verdicts ride along in the extra field `ragshield`."""
    assert guarded.upstream is not None
    body = copy.deepcopy(guarded.upstream.body)
    choice = body["choices"][0]
    if guarded.result.fallback is not None:
        choice["message"]["content"] = shown_text(guarded.result)
        choice.pop("logprobs", None)
    body["ragshield"] = judged_json(guarded)
    return body
