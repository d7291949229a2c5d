"""The guard API's decision log (services/guarding/decision_log.py): one row for each answered call
(none for a 401, a 422 or a call past its deadline), with the caller's key name, the rule and
policy version, every verdict and the latency; and `ragshield runs export --decisions`, which
writes it as strict JSONL, filtered by day and caller."""

from __future__ import annotations

import hashlib
import json
import time
from datetime import date, datetime, timezone
from pathlib import Path

import pytest

from ragshield import strict_json
from ragshield.api.keys import ApiKey, KeyEntry
from ragshield.config import Settings
from ragshield.policies.policy import Policy
from ragshield.services.learning.policies import save_policy
from ragshield.store.database import Store
from ragshield.store.guard_decisions import LoggedDecision, add_decision, read_decisions
from tests.api_support import (API_GUARD_POLICY, SURE, SlowLLM, bearer, guarded_client, judge_body)
from tests.cli_support import invoke

SUPPORT_KEY, LEGAL_KEY = "s" * 24, "l" * 24
KEYS = [KeyEntry(SUPPORT_KEY, ApiKey("support")), KeyEntry(LEGAL_KEY, ApiKey("legal"))]


def logged(store: Store, **filters: object) -> list[LoggedDecision]:
    return list(read_decisions(store, **filters))  # type: ignore[arg-type]


def test_each_answered_call_is_one_row_with_caller_verdicts_and_latency(
        settings: Settings, sqlite_store: Store) -> None:
    client = guarded_client(settings, sqlite_store, KEYS)
    body = judge_body(answer_logprobs=[{"token": "The", "logprob": SURE}], rule="token_prob")
    assert client.post("/v1/judge", json=body).status_code == 401
    assert client.post("/v1/judge", json={**body, "judges": []},
                       headers=bearer(SUPPORT_KEY)).status_code == 422
    assert logged(sqlite_store) == []
    answered = client.post("/v1/judge", json=body, headers=bearer(SUPPORT_KEY))
    assert answered.status_code == 200, answered.text
    [row] = logged(sqlite_store)
    result = answered.json()
    assert (row.caller, row.endpoint, row.decision, row.kept) == ("support", "judge", "keep", True)
    assert row.question_sha256 == hashlib.sha256(body["question"].encode()).hexdigest()
    assert row.question is None  # the setting's default keeps the hash alone
    assert (row.run_id, row.dataset, row.sample_id) == (
        result["record"]["run_id"], result["record"]["dataset"], result["record"]["sample_id"])
    assert row.rule == "token_prob" and row.policy_name is None and row.policy_version is None
    assert [(v["judge"], v["keep"]) for v in row.verdicts] == [
        ("trivial", True), ("token_prob", True), ("p_true", True)]
    assert row.verdicts[1]["score"] == pytest.approx(0.99, abs=0.01)
    assert set(row.phases_ms) == {"queued", "judging", "storing", "total"}
    assert row.latency_ms == row.phases_ms["total"]  # the whole call, preparing included
    assert row.latency_ms >= row.phases_ms["judging"] + row.phases_ms["storing"]
    assert row.latency_ms > 0
    assert row.created_at.tzinfo is not None
    assert abs((datetime.now(timezone.utc) - row.created_at).total_seconds()) < 60
    client.post("/v1/judge", json=body, headers=bearer(LEGAL_KEY))  # stored once, logged twice
    assert [r.caller for r in logged(sqlite_store)] == ["support", "legal"]
    assert [r.caller for r in logged(sqlite_store, caller="legal")] == ["legal"]


def test_an_open_server_logs_no_caller_and_keys_of_the_setting_are_numbered(
        settings: Settings, sqlite_store: Store) -> None:
    open_client = guarded_client(settings, sqlite_store)
    assert open_client.post("/v1/judge", json=judge_body(judges=["trivial"])).status_code == 200
    keyed = guarded_client(settings, sqlite_store, ["a" * 20, "b" * 20])
    assert keyed.post("/v1/judge", json=judge_body(judges=["trivial"]),
                      headers=bearer("b" * 20)).status_code == 200
    assert [row.caller for row in logged(sqlite_store)] == [None, "key-2"]


def test_the_policy_version_is_logged_and_the_question_text_only_where_set(
        settings: Settings, sqlite_store: Store) -> None:
    save_policy(sqlite_store, Policy.from_dict(API_GUARD_POLICY))
    settings.decision_log_questions = "text"
    client = guarded_client(settings, sqlite_store)
    body = judge_body(answer_logprobs=[{"token": "The", "logprob": SURE}],
                      rule="policy:api-guard")
    assert client.post("/v1/judge", json=body).status_code == 200
    assert client.post("/v1/judge", json={**body, "store": False}).status_code == 200
    kept, unstored = logged(sqlite_store)
    assert kept.rule == "policy:api-guard@1"
    assert (kept.policy_name, kept.policy_version, kept.decision) == ("api-guard", 1, "keep")
    assert kept.question == body["question"] and kept.run_id is not None
    # "store": false: the hash alone, and no run or sample
    assert unstored.question is None and unstored.question_sha256 == kept.question_sha256
    assert (unstored.run_id, unstored.dataset, unstored.sample_id) == (None, None, None)
    assert unstored.policy_version == 1


def test_a_call_past_its_deadline_is_not_logged(settings: Settings,
                                                sqlite_store: Store) -> None:
    settings.api_timeout_s = 0.5
    client = guarded_client(settings, sqlite_store, llm=SlowLLM(seconds=1.0))
    assert client.post("/v1/judge", json=judge_body(judges=["p_true"])).status_code == 504
    time.sleep(1.3)  # the worker finishes its model call after the caller gave up
    assert logged(sqlite_store) == []


def test_a_log_that_cannot_write_fails_no_call(settings: Settings, sqlite_store: Store,
                                               monkeypatch: pytest.MonkeyPatch,
                                               caplog: pytest.LogCaptureFixture) -> None:
    def broken(*_: object) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr("ragshield.services.guarding.decision_log.add_decision", broken)
    client = guarded_client(settings, sqlite_store)
    response = client.post("/v1/judge", json=judge_body(judges=["trivial"]))
    assert response.status_code == 200 and response.json()["record"]["stored"]
    assert "decision log could not keep a judge call" in caplog.text


def old_decision(caller: str, day: date) -> LoggedDecision:
    return LoggedDecision(
        caller=caller, endpoint="chat", question_sha256="0" * 64, question=None, run_id=None,
        dataset=None, sample_id=None, decision=None, kept=False, rule="majority",
        policy_name=None, policy_version=None,
        verdicts=[{"judge": "p_true", "keep": None, "outcome": "error", "score": float("nan")}],
        latency_ms=12.5, phases_ms={"upstream": 12.5},
        created_at=datetime(day.year, day.month, day.day, 23, 59, tzinfo=timezone.utc))


def read_jsonl(path: Path) -> list[dict]:
    """Each line parsed strictly: NaN or Infinity anywhere fails."""
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n") or not text
    return [strict_json.loads(line) for line in text.splitlines()]


def test_runs_export_decisions_writes_strict_jsonl_filtered_by_day_and_caller(
        settings: Settings, sqlite_store: Store, tmp_path: Path) -> None:
    add_decision(sqlite_store, old_decision("support", date(2026, 1, 1)))
    add_decision(sqlite_store, old_decision("legal", date(2026, 1, 2)))
    client = guarded_client(settings, sqlite_store, KEYS)
    for key in (SUPPORT_KEY, LEGAL_KEY):
        assert client.post("/v1/judge", json=judge_body(judges=["trivial"]),
                           headers=bearer(key)).status_code == 200
    env = {"RAGSHIELD_DATABASE_URL": sqlite_store.url}
    out = tmp_path / "decisions.jsonl"

    def export(*options: str) -> list[dict]:
        result = invoke("runs", "export", "--decisions", "--out", str(out), *options, env=env)
        assert result.exit_code == 0, result.stderr
        return read_jsonl(out)

    every = export()
    assert [line["caller"] for line in every] == ["support", "legal", "support", "legal"]
    assert every[0]["verdicts"][0]["score"] is None  # NaN is written as null
    assert every[0]["time"] == "2026-01-01T23:59:00+00:00"
    newest = every[-1]
    assert list(newest)[:3] == ["time", "caller", "endpoint"]
    assert newest["decision"] == "keep" and newest["rule"] == "majority"
    assert newest["verdicts"] == [{"judge": "trivial", "keep": True, "outcome": "keep",
                                   "score": None}]
    assert newest["latency_ms"] > 0 and newest["run_id"] is not None
    assert [line["caller"] for line in export("--since", "2026-01-02")] == [
        "legal", "support", "legal"]
    today = datetime.now(timezone.utc).date().isoformat()
    assert [line["caller"] for line in export("--since", today, "--caller", "support")] == [
        "support"]
    assert export("--caller", "nobody") == [] and out.read_text() == ""
    json.loads(json.dumps(every))  # plain JSON values throughout


def test_runs_export_takes_a_run_or_decisions(tmp_path: Path, sqlite_store: Store) -> None:
    env = {"RAGSHIELD_DATABASE_URL": sqlite_store.url}
    out = str(tmp_path / "x.jsonl")
    both = invoke("runs", "export", "1", "--decisions", "--out", out, env=env)
    assert both.exit_code == 1 and "not both" in both.stderr
    neither = invoke("runs", "export", "--out", out, env=env)
    assert neither.exit_code == 1 and "--decisions" in neither.stderr
    stray = invoke("runs", "export", "1", "--caller", "x", "--out", out, env=env)
    assert stray.exit_code == 1 and "go with --decisions" in stray.stderr
    folder = invoke("runs", "export", "--decisions", "--out", str(tmp_path), env=env)
    assert folder.exit_code == 1 and folder.stderr.startswith(f"error: cannot write {tmp_path}")
