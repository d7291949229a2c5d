"""Claims in one pass where the backend allows it (issue 58, item 3): a model server takes the
support judge's claims side by side, up to CLAIMS_AT_ONCE, and the verdict and its trace are
those of the claims read in turn (claim order, every call once); an in-process model reads
them in turn."""

from __future__ import annotations

import time

import pytest

from ragshield.judges.support import CLAIMS_AT_ONCE, SupportJudge
from ragshield.llm.openai_backend import OpenAICompatibleLLM
from ragshield.types import Answer, Passage, Sample
from tests.fakes import ScriptedLLM, ScriptedReply
from tests.reliability.fake_openai import Fault, FakeOpenAIServer, Request

DELAY_S = 0.6
YES = ScriptedReply("Yes", {"Yes": -0.2, "No": -1.6})
SAMPLE = Sample(id="s", question="What is known about the bridge?", passages=[Passage(
    "The bridge opened in 1932. It carries six lanes. It spans the river. It is made of steel. "
    "It was painted red.")])
ANSWER = ("The bridge opened in 1932. It carries six lanes. It spans the river. "
          "It is made of steel. It was painted red. It is busy.")
GIVEN = Answer(answerer="given", text=ANSWER, raw=ANSWER, messages=[])


def slow_claims(request: Request) -> Fault | None:
    return Fault(delay_s=DELAY_S) if request.is_chat and "Statement:" in request.prompt else None


def most_at_once(requests: list[Request]) -> int:
    spans = [(r.at, r.answered_at or r.at) for r in requests]
    return max(sum(1 for start, end in spans if start <= at < end) for at, _ in spans)


@pytest.mark.server
def test_a_server_takes_the_claims_side_by_side_and_the_trace_keeps_their_order():
    with FakeOpenAIServer(slow_claims) as server:
        llm = OpenAICompatibleLLM(server.url, "fake-model")
        assert llm.capabilities  # the probe, once in a backend's life: not timed
        started = time.monotonic()
        verdict = SupportJudge().judge(SAMPLE, GIVEN, llm)
        took = time.monotonic() - started
        claims = [r for r in server.chat_requests() if "Statement:" in r.prompt]
    assert len(verdict.details["claims"]) == len(claims) == 6
    assert most_at_once(claims) == CLAIMS_AT_ONCE
    assert took < 2 * DELAY_S + 1.0 < 6 * DELAY_S  # two rounds of four, not six in turn
    assert [call.purpose for call in verdict.trace] == [
        f"support: claim {n} of 6" for n in range(1, 7)]
    assert [call.messages[-1]["content"].rsplit("Statement: ", 1)[1] for call in verdict.trace] \
        == [claim["text"] for claim in verdict.details["claims"]]
    assert all(claim["p_yes"] == pytest.approx(0.8, abs=0.01)
               for claim in verdict.details["claims"])


def test_an_in_process_model_reads_the_claims_in_turn():
    verdict = SupportJudge().judge(SAMPLE, GIVEN, ScriptedLLM(respond=lambda messages: YES))
    assert [call.purpose for call in verdict.trace] == [
        f"support: claim {n} of 6" for n in range(1, 7)]
