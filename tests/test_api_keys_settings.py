"""Per-key settings of the guard API (api/keys.py): a line of the keys file may give the key
a name, default judges and a rule (a pinned policy version too); the calls the key makes get
them where the body names none, a body's own judges and rule win, and the name goes into the
decision log. A bad field is an error naming the file, the line and the field."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from pydantic import SecretStr
from starlette.requests import Request
from typer.testing import CliRunner

from ragshield.api.app import _keyed
from ragshield.api.keys import ApiKey, ApiKeyError, KeyEntry, read_keys
from ragshield.api.schemas import ProxyField
from ragshield.cli.app import app as cli_app
from ragshield.config import Settings
from ragshield.policies.policy import Policy
from ragshield.services.learning.policies import save_policy
from ragshield.store.database import Store
from ragshield.store.guard_decisions import read_decisions
from tests.fakes import ScriptedLLM, ScriptedReply
from tests.api_support import (API_GUARD_POLICY, SURE, bearer, guarded_client, judge_body,
                               p_true_reply)

SUPPORT, LEGAL, PLAIN = "s" * 24, "l" * 24, "p" * 24


def test_the_keys_file_gives_names_judges_and_rules(settings: Settings, tmp_path: Path) -> None:
    keys_file = tmp_path / "keys.txt"
    keys_file.write_text(f"# two applications on one server\n"
                         f"{SUPPORT} name=support judges=trivial,Token_Prob rule=token_prob\n"
                         f"{LEGAL}   rule=policy:api-guard@1   name=legal\n"
                         f"{PLAIN}\n")
    settings.api_keys_file = keys_file
    settings.api_keys = SecretStr(f"{'e' * 20}, {'f' * 20}")
    entries = read_keys(settings)
    assert [entry.secret for entry in entries] == ["e" * 20, "f" * 20, SUPPORT, LEGAL, PLAIN]
    assert [entry.key for entry in entries] == [
        ApiKey("key-1"), ApiKey("key-2"),
        ApiKey("support", ("trivial", "token_prob"), "token_prob"),
        ApiKey("legal", None, "policy:api-guard@1"), ApiKey("key-5")]
    assert SUPPORT not in repr(entries)  # a key's secret stays out of logs and tracebacks


@pytest.mark.parametrize("fields, problem", [
    ("team=a", "unknown field 'team' after the key"),
    ("name", "field 'name' has no value"),
    ("judges=", "field 'judges' has no value"),
    ("name=a name=b", "field 'name' is given twice"),
    ("name=a/b", "field 'name': 'a/b' must be 1 to 100 letters"),
    ("judges=trivial,nosuch", "field 'judges': unknown judge(s) ['nosuch']"),
    ("rule=policy:", "field 'rule': rule 'policy:' names no policy"),
    ("rule=policy:p@x", "field 'rule': rule 'policy:p@x': the version after @"),
    ("rule=policy:p@", "field 'rule': rule 'policy:p@': the version after @"),
    ("judges=trivial rule=p_true", "field 'rule': rule 'p_true' must be all, majority"),
    ("rule=nosuch", "field 'rule': rule 'nosuch' must be all, majority"),
    ("name=first", "field 'name': 'first' is the name of the key at"),
    ("rule=all fixed=maybe", "field 'fixed' must be yes or no"),
    ("name=x fixed=yes", "field 'fixed': the key gives no judges or rule to fix"),
    # Issue 45: each was accepted, then failed every call the key made.
    ("rule=policy:p@2147483648", "field 'rule': rule 'policy:p@2147483648': the version after "
                                 "@ must be from 1 to 2,147,483,647"),
    ("rule=policy:p@9223372036854775808", "the version after @ must be from 1 to"),
    ("judges=trained:nosuch", "field 'judges': no trained judge 'trained:nosuch'"),
    ("judges=trivial,,p_true", "field 'judges': 'trivial,,p_true' has an empty name"),
])
def test_a_bad_field_names_the_file_line_and_field(settings: Settings, tmp_path: Path,
                                                   fields: str, problem: str) -> None:
    keys_file = tmp_path / "keys.txt"
    keys_file.write_text(f"{SUPPORT} name=first\n\n{LEGAL} {fields}\n")
    settings.api_keys_file = keys_file
    with pytest.raises(ApiKeyError) as raised:
        read_keys(settings)
    message = str(raised.value)
    assert message.startswith(f"{keys_file}:3: ") and problem in message, message
    assert "\n" not in message and LEGAL not in message


def test_a_key_name_may_not_take_the_number_of_another(settings: Settings,
                                                       tmp_path: Path) -> None:
    keys_file = tmp_path / "keys.txt"
    keys_file.write_text(f"{SUPPORT} name=key-1\n")
    settings.api_keys, settings.api_keys_file = SecretStr("e" * 20), keys_file
    with pytest.raises(ApiKeyError, match=f"^{keys_file}:1: field 'name': 'key-1' is the name "
                                          "of the key at RAGSHIELD_API_KEYS too"):
        read_keys(settings)


def test_keys_asked_for_but_none_given_and_one_key_twice_are_refused(
        settings: Settings, tmp_path: Path) -> None:
    """Both used to start a server: an open one, or one whose second caller was logged and
    limited as the first."""
    keys_file = tmp_path / "keys.txt"
    keys_file.write_text("# our keys\n\n")
    settings.api_keys_file = keys_file
    with pytest.raises(ApiKeyError, match=f"^{keys_file}: no API key"):
        read_keys(settings)
    settings.api_keys_file, settings.api_keys = None, SecretStr(" , ")
    with pytest.raises(ApiKeyError, match="^RAGSHIELD_API_KEYS: no API key"):
        read_keys(settings)
    keys_file.write_text(f"{SUPPORT} name=billing\n{SUPPORT} name=support\n")
    settings.api_keys, settings.api_keys_file = None, keys_file
    with pytest.raises(ApiKeyError) as raised:
        read_keys(settings)
    assert str(raised.value) == (f"{keys_file}:2: the same key as at {keys_file}:1; each "
                                 "caller needs a key of its own")


def keyed_client(settings: Settings, store: Store, **options: object):
    keys = [KeyEntry(SUPPORT, ApiKey("support", ("trivial", "token_prob"), "token_prob")),
            KeyEntry(LEGAL, ApiKey("legal", None, "policy:api-guard@1")),
            KeyEntry(PLAIN, ApiKey("plain"))]
    return guarded_client(settings, store, keys, **options)  # type: ignore[arg-type]


def test_a_keys_judges_and_rule_apply_where_the_body_names_none(
        settings: Settings, sqlite_store: Store) -> None:
    save_policy(sqlite_store, Policy.from_dict(API_GUARD_POLICY))
    client = keyed_client(settings, sqlite_store)
    body = judge_body(answer_logprobs=[{"token": "The", "logprob": SURE}])
    del body["judges"]

    def judged(key: str, **fields: object) -> dict:
        response = client.post("/v1/judge", json={**body, **fields}, headers=bearer(key))
        assert response.status_code == 200, response.text
        return response.json()

    def judges(result: dict) -> list[str]:
        return [verdict["judge"] for verdict in result["verdicts"]]

    support = judged(SUPPORT)
    assert judges(support) == ["trivial", "token_prob"] and support["rule"] == "token_prob"
    own = judged(SUPPORT, judges=["trivial"], rule="trivial")  # the body's own win
    assert judges(own) == ["trivial"] and own["rule"] == "trivial"
    # Issue 45, item 12: the key's rule (token_prob) was forced onto the body's own judges
    # (400); it follows them now, where it cannot decide from them.
    own_judges = judged(SUPPORT, judges=["trivial"])
    assert judges(own_judges) == ["trivial"] and own_judges["rule"] != "token_prob"
    own_rule = judged(SUPPORT, rule="majority")
    assert judges(own_rule) == ["trivial", "token_prob"] and own_rule["rule"] == "majority"
    legal = judged(LEGAL)  # the pinned policy version, and the judges it reads
    assert legal["rule"] == "policy:api-guard@1" and "token_prob" in judges(legal)
    assert legal["decision"] == "keep"
    plain = judged(PLAIN)  # a key without settings: the server's defaults
    assert plain["rule"] == settings.decision_rule and "p_true" in judges(plain)
    assert [(row.caller, row.rule) for row in read_decisions(sqlite_store)] == [
        ("support", "token_prob"), ("support", "trivial"), ("support", own_judges["rule"]),
        ("support", "majority"),
        ("legal", "policy:api-guard@1"), ("plain", settings.decision_rule)]


def test_a_keys_defaults_apply_to_ask_too(settings: Settings, sqlite_store: Store) -> None:
    llm = ScriptedLLM(respond=lambda messages: p_true_reply(messages)
                      if "yes or no" in messages[-1]["content"].lower()
                      else ScriptedReply("Answer: The Normans\nEvidence: ## Passage-0 ##"))
    client = keyed_client(settings, sqlite_store, llm=llm)
    response = client.post("/v1/ask", headers=bearer(SUPPORT), json={
        "question": "Who gave their name to Normandy?", "answerer": "evidence",
        "passages": [{"text": "The Normans gave their name to Normandy."}]})
    assert response.status_code == 200, response.text
    result = response.json()
    assert [v["judge"] for v in result["verdicts"]] == ["trivial", "token_prob"]
    assert result["rule"] == "token_prob"
    [row] = read_decisions(sqlite_store)
    assert (row.caller, row.endpoint) == ("support", "ask")


def test_the_proxy_field_takes_the_keys_defaults_and_the_callers_ids() -> None:
    """The helper the chat completions handler calls on `ragshield` (api/app.py)."""
    key = ApiKey("support", ("trivial", "token_prob"), "token_prob")
    request = Request({"type": "http", "state": {"api_key": key}})
    field = ProxyField(trace_id="ab" * 16, span_id="cd" * 8)
    filled, context = _keyed(request, "chat", field)
    assert (filled.judges, filled.rule) == (("trivial", "token_prob"), "token_prob")
    assert (context.endpoint, context.caller) == ("chat", "support")
    assert (context.trace_id, context.span_id) == ("ab" * 16, "cd" * 8)
    own, _ = _keyed(request, "chat", ProxyField(judges=["p_true"], rule="p_true"))
    assert (own.judges, own.rule) == (["p_true"], "p_true")
    unkeyed, open_context = _keyed(Request({"type": "http", "state": {"api_key": None}}),
                                   "chat", field)
    assert unkeyed == field and open_context.caller is None


def test_a_key_written_as_its_digest_lets_its_holder_in(settings: Settings, sqlite_store: Store,
                                                        tmp_path: Path) -> None:
    """`ragshield keys new` prints a key for its holder and a line holding only the key's
    SHA-256: a keys file that leaks does not leak the keys."""
    result = CliRunner().invoke(cli_app, ["keys", "new", "--name", "support", "--judges",
                                          "trivial", "--rule", "all"])
    assert result.exit_code == 0, result.output
    secret = result.output.split("key (for its holder): ")[1].split()[0]
    line = result.output.split("line for the keys file: ")[1].strip()
    assert line.startswith("sha256:") and secret not in line
    keys_file = tmp_path / "keys.txt"
    keys_file.write_text(f"{line}\n{PLAIN} name=plain\n")
    settings.api_keys_file = keys_file
    entries = read_keys(settings)
    assert entries[0].key == ApiKey("support", ("trivial",), "all")
    client = guarded_client(settings, sqlite_store, entries)
    body = {field: value for field, value in judge_body().items() if field != "judges"}
    assert client.post("/v1/judge", json=body, headers=bearer(secret)).status_code == 200
    assert client.post("/v1/judge", json=body, headers=bearer(PLAIN)).status_code == 200
    assert client.post("/v1/judge", json=body, headers=bearer(line)).status_code == 401
    assert [d.caller for d in read_decisions(sqlite_store)] == ["support", "plain"]


@pytest.mark.parametrize("written, problem", [
    ("sha256:abc", "sha256: and 64 hex digits"),
    ("sha256:" + "g" * 64, "sha256: and 64 hex digits"),
    ("sha256:" + hashlib.sha256(SUPPORT.encode()).hexdigest(), "the same key as at"),
])
def test_a_bad_digest_or_a_key_given_twice_that_way_is_refused(
        settings: Settings, tmp_path: Path, written: str, problem: str) -> None:
    keys_file = tmp_path / "keys.txt"
    keys_file.write_text(f"{SUPPORT}\n{written} name=other\n")
    settings.api_keys_file = keys_file
    with pytest.raises(ApiKeyError, match=f"^{keys_file}:2: .*{re.escape(problem)}"):
        read_keys(settings)


def test_keys_new_checks_its_fields() -> None:
    result = CliRunner().invoke(cli_app, ["keys", "new", "--judges", "nosuch"])
    assert result.exit_code == 1 and "field 'judges': unknown judge(s)" in result.output
    result = CliRunner().invoke(cli_app, ["keys", "new", "--on-unsupported", "hide"])
    assert result.exit_code == 1 and "'on_unsupported' must be withhold or redact" in result.output


def test_keys_new_warns_of_a_trained_judge_this_machine_lacks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The key may be for a server elsewhere, so the line is still made; but a server
    without the judge would refuse it, and its maker is told so now."""
    monkeypatch.setenv("RAGSHIELD_CACHE_DIR", str(tmp_path))
    result = CliRunner().invoke(cli_app, ["keys", "new", "--judges", "trained:absent,p_true",
                                          "--on-unsupported", "redact"])
    assert result.exit_code == 0, result.output
    line = result.output.split("line for the keys file: ")[1].splitlines()[0]
    assert line.endswith(" judges=trained:absent,p_true on_unsupported=redact")
    assert "warning: " in result.stderr and "absent" in result.stderr
    assert "warning" not in CliRunner().invoke(
        cli_app, ["keys", "new", "--judges", "p_true"]).stderr


def test_a_fixed_key_s_calls_may_not_name_other_judges_or_rules(settings: Settings,
                                                                 sqlite_store: Store,
                                                                 tmp_path: Path) -> None:
    """fixed=yes: the promise is the key's; an application cannot loosen it per call."""
    keys_file = tmp_path / "keys.txt"
    keys_file.write_text(f"{SUPPORT} name=support judges=trivial,token_prob rule=token_prob "
                         f"on_unsupported=withhold fixed=yes\n{LEGAL} name=legal rule=all\n")
    settings.api_keys_file = keys_file
    entries = read_keys(settings)
    assert entries[0].key.fixed and not entries[1].key.fixed
    client = guarded_client(settings, sqlite_store, entries)
    plain = {field: value for field, value in judge_body().items() if field != "judges"}
    same = {**plain, "judges": ["Token_Prob", "trivial"], "rule": "token_prob",
            "on_unsupported": "withhold"}
    for body in (plain, same):
        assert client.post("/v1/judge", json=body, headers=bearer(SUPPORT)).status_code == 200
    for field, value in (("rule", "trivial"), ("judges", ["trivial"]),
                         ("on_unsupported", "redact")):
        refused = client.post("/v1/judge", json={**plain, field: value},
                              headers=bearer(SUPPORT))
        assert refused.status_code == 422
        assert refused.json()["error"]["param"] == field
        assert "this API key fixes the" in refused.json()["error"]["message"]
    # a key that does not fix them lets the body choose
    assert client.post("/v1/judge", json={**plain, "rule": "trivial", "judges": ["trivial"]},
                       headers=bearer(LEGAL)).status_code == 200
