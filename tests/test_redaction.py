"""Partial answers (services/questions/redaction.py): with on_unsupported="redact", an answer is
shown without the sentences the passages do not support, when its first sentence is left and the
rule keeps what remains; in the service, `/v1/judge`, an API key's setting, `Shield` and the proxy
(plain and hold-mode streaming). Scripted judge model: the support judge's statements that mention
"Lusignan" or "Evidence" are answered no, everything else yes."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import pytest

import ragshield

from ragshield.api.keys import ApiKeyError, read_keys
from ragshield.config import Settings
from ragshield.judging import JudgedSample, rule_of
from ragshield.services.questions.redaction import REDACT, WITHHOLD, redaction
from ragshield.store.database import Store
from ragshield.types import Answer, Message, Sample, Verdict
from tests.fakes import FakeModels, ScriptedLLM, ScriptedReply
from tests.reliability.fake_openai import ANSWER, FakeOpenAIServer
from tests.api_support import chat_body, client_for, proxy_settings

YES = ScriptedReply("Yes", top={"Yes": -0.05, "No": -3.0})
NO = ScriptedReply("No", top={"Yes": -3.0, "No": -0.05})
UNSUPPORTED = ("Lusignan", "Evidence")
ANSWER_TEXT = ("The Normans gave their name to Normandy [1]. They were led by Guy de Lusignan. "
               "Normandy is in France.")


def reply(messages: Sequence[Message]) -> ScriptedReply:
    last = messages[-1]["content"]
    statement = last.rpartition("Statement: ")[2] if "Statement: " in last else ""
    return NO if any(word in statement for word in UNSUPPORTED) else YES


def body(**extra: object) -> dict:
    return {"question": "Who gave their name to Normandy?", "answer": ANSWER_TEXT,
            "passages": [{"text": "The Normans gave their name to Normandy, in France."}],
            "judges": ["support"], "rule": "support", **extra}


def judged(claims: list[tuple[int, int, bool]], keep: bool, rule_keeps: bool = True,
           text: str = "First. Second. Third.") -> JudgedSample:
    support = Verdict("support", keep, 0.1 if not keep else 0.9, details={"claims": [
        {"start": s, "end": e, "score": 0.9 if ok else 0.1, "supported": ok, "passage": 0}
        for s, e, ok in claims]})
    other = Verdict("p_true", rule_keeps, 0.8 if rule_keeps else 0.2)
    return JudgedSample(Sample("s", "q?"), Answer("given", text, text, []), [support, other])


CLAIMS = [(0, 6, True), (7, 14, False), (15, 21, True)]


def test_redact_shows_the_supported_sentences_when_the_rule_keeps_what_remains() -> None:
    done = redaction(judged(CLAIMS, keep=False), rule_of("support"), REDACT)
    assert done is not None and done.text == "First. Third." and done.removed == [(7, 14)]
    assert done.decision.keep is True and "without 1 unsupported sentence" in done.decision.reason
    assert redaction(judged(CLAIMS, keep=False), rule_of("support"), WITHHOLD) is None


@pytest.mark.parametrize("claims, rule, rule_keeps", [
    ([(0, 6, False), (7, 14, True)], "support", True),  # the first sentence goes: no answer
    ([(0, 6, False), (7, 14, False)], "support", True),  # nothing supported
    ([(0, 6, True), (7, 14, True)], "support", True),  # nothing to cut
    (CLAIMS, "p_true", False),  # the rule withholds for another reason
    (CLAIMS, "all", False),
])
def test_redact_leaves_the_decision_alone(claims, rule: str, rule_keeps: bool) -> None:
    assert redaction(judged(claims, keep=False, rule_keeps=rule_keeps), rule_of(rule),
                     REDACT) is None


def test_a_kept_answer_with_an_unsupported_sentence_is_shown_shortened() -> None:
    done = redaction(judged(CLAIMS, keep=False, rule_keeps=True), rule_of("p_true"), REDACT)
    assert done is not None and done.text == "First. Third." and done.decision.keep


def test_judge_redacts_on_request_and_says_what_it_took_out(
        settings: Settings, sqlite_store: Store) -> None:
    client = client_for(settings, sqlite_store, ScriptedLLM(respond=reply))
    whole = client.post("/v1/judge", json=body()).json()
    assert whole["decision"] == "abstain" and whole["shortened"] is None
    claims = whole["verdicts"][0]["claims"]
    assert [c["supported"] for c in claims] == [True, False, True]
    assert ANSWER_TEXT[claims[1]["start"]:claims[1]["end"]] == "They were led by Guy de Lusignan."
    assert "text" not in claims[1]  # spans only: the answer is in answer.text
    short = client.post("/v1/judge", json=body(on_unsupported="redact")).json()
    assert short["decision"] == "keep" and short["kept"]
    assert short["shown"] == "The Normans gave their name to Normandy [1]. Normandy is in France."
    assert short["shortened"] == {"removed": [[claims[1]["start"], claims[1]["end"]]]}
    assert "shown shortened" in short["reason"]
    bad = client.post("/v1/judge", json=body(on_unsupported="trim"))
    assert bad.status_code == 422 and "on_unsupported" in bad.text


def test_redact_runs_the_support_judge_when_the_body_names_other_judges(
        settings: Settings, sqlite_store: Store) -> None:
    client = client_for(settings, sqlite_store, ScriptedLLM(respond=reply))
    result = client.post("/v1/judge", json=body(judges=["trivial"], rule="trivial",
                                                on_unsupported="redact")).json()
    assert [v["judge"] for v in result["verdicts"]] == ["trivial", "support"]
    assert result["kept"] and "Lusignan" not in result["shown"]


def test_an_api_key_may_redact_by_default(settings: Settings, sqlite_store: Store,
                                          tmp_path: Path) -> None:
    keys_file = tmp_path / "keys.txt"
    keys_file.write_text(f"{'r' * 24} name=team on_unsupported=redact\n{'w' * 24}\n")
    settings.api_keys_file = keys_file
    client = client_for(settings, sqlite_store, ScriptedLLM(respond=reply),
                        keys=read_keys(settings))
    redacting, plain = ({"Authorization": f"Bearer {letter * 24}"} for letter in "rw")
    assert client.post("/v1/judge", json=body(), headers=redacting).json()["shortened"]
    asked = client.post("/v1/judge", json=body(on_unsupported="withhold"), headers=redacting)
    assert asked.json()["shortened"] is None  # the body's choice wins
    plain = client.post("/v1/judge", json=body(), headers=plain)
    assert plain.json()["shortened"] is None
    keys_file.write_text(f"{'r' * 24} on_unsupported=cut\n")
    with pytest.raises(ApiKeyError, match=f"{keys_file}:1: field 'on_unsupported' must be"):
        read_keys(settings)


@pytest.mark.parametrize("stream", [False, True])
def test_the_proxy_shows_a_redacted_answer_and_nothing_of_what_it_cut(
        settings: Settings, sqlite_store: Store, stream: bool) -> None:
    with FakeOpenAIServer() as upstream:
        client = client_for(proxy_settings(settings, upstream), sqlite_store,
                            ScriptedLLM(respond=reply))
        request = chat_body(stream=stream, logprobs=True)
        request["ragshield"] = {**request["ragshield"], "judges": ["support"],
                                "rule": "support", "on_unsupported": "redact"}
        response = client.post("/v1/chat/completions", json=request)
    assert response.status_code == 200, response.text
    if stream:
        events = [json.loads(line[6:]) for line in response.text.splitlines()
                  if line.startswith("data: {")]
        content = "".join(e["choices"][0]["delta"].get("content") or ""
                          for e in events if e["choices"])
        verdicts = events[-1]["ragshield"]
    else:
        completion = response.json()
        content = completion["choices"][0]["message"]["content"]
        assert "logprobs" not in completion["choices"][0]  # they would spell out the cut part
        verdicts = completion["ragshield"]
    assert ANSWER.startswith(content) and "Evidence" not in content and content
    assert verdicts["kept"] and verdicts["shortened"]["removed"]


def test_shield_redacts_on_request() -> None:
    with ragshield.Shield.open() as shield:
        shield.models = FakeModels(ScriptedLLM(respond=reply))
        decision = shield.judge(body()["question"], ["The Normans gave their name to Normandy."],
                                ANSWER_TEXT, judges=["support"], rule="support",
                                on_unsupported="redact")
    assert decision.kept and decision.shortened and "Lusignan" not in decision.shown
    assert decision.verdicts[0].details["claims"][1]["supported"] is False


def test_redact_cuts_a_heading_the_passages_do_not_support() -> None:
    """A heading was no claim: it went unread, and a shortened answer kept it."""
    answer = "The Normans gave their name to Normandy.\n## Guy de Lusignan led them\n"
    with ragshield.Shield.open() as shield:
        shield.models = FakeModels(ScriptedLLM(respond=reply))
        decision = shield.judge(body()["question"], ["The Normans gave their name to Normandy."],
                                answer, judges=["support"], rule="support",
                                on_unsupported="redact")
    assert decision.shortened and decision.shown == "The Normans gave their name to Normandy."
