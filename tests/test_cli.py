"""`python -m ragshield` as a user runs it: real subprocesses, real models, real database.
A test whose command loads a model asks for `packaged_models` (which marks it `model`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "ragshield", *args], cwd=ROOT, env=full_env,
        capture_output=True, text=True, timeout=timeout,
    )


def test_doctor_reports_every_part_ok(python_processes, tmp_path, packaged_models):
    result = run_cli("doctor", "--json", env={"RAGSHIELD_DATABASE_URL": f"sqlite:///{tmp_path}/d.db"})
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert set(report) == {"llm", "small_llm", "larger_llm", "embeddings", "database"}
    assert all(part["ok"] for part in report.values())
    llm = report["llm"]
    assert "paris" in llm["answer"].lower()
    assert llm["model"] == "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    assert llm["logprobs"] is True and llm["tokens_per_s"] > 0
    assert report["larger_llm"]["model"] == "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    assert "paris" in report["larger_llm"]["answer"].lower()
    assert report["embeddings"]["dimension"] == 384
    assert report["database"]["revision"]


def test_doctor_fails_with_reasons_and_still_reports_the_rest(
        python_processes, tmp_path, packaged_models):
    result = run_cli(
        "doctor", "--json", "--only", "database,small_llm,llm",
        env={"RAGSHIELD_DATABASE_URL": "postgresql+psycopg://u:hunter2@127.0.0.1:1/x",
             "RAGSHIELD_MODEL": str(tmp_path / "missing.gguf")},
    )
    assert result.returncode != 0
    report = json.loads(result.stdout)
    assert list(report) == ["llm", "small_llm", "database"]  # the chosen parts, in order
    assert not report["database"]["ok"] and "cannot open database" in report["database"]["error"]
    assert "hunter2" not in result.stdout + result.stderr
    assert not report["llm"]["ok"] and "missing.gguf" in report["llm"]["error"]
    assert report["small_llm"]["ok"]


def test_doctor_against_an_unreachable_endpoint_ends_quickly(
        python_processes, tmp_path, packaged_models):
    result = run_cli(
        "doctor", "--json", "--only", "llm",
        env={"RAGSHIELD_BACKEND": "openai",
             "RAGSHIELD_OPENAI_BASE_URL": f"http://127.0.0.1:{free_port()}/v1",
             "RAGSHIELD_MAX_RETRIES": "2", "RAGSHIELD_RETRY_BACKOFF_S": "0.05",
             "RAGSHIELD_DATABASE_URL": f"sqlite:///{tmp_path}/d.db"},
        timeout=120,
    )
    assert result.returncode != 0
    report = json.loads(result.stdout)
    assert "after 3 attempts" in report["llm"]["error"] and list(report) == ["llm"]


def test_doctor_refuses_an_unknown_part_by_name():
    from ragshield.doctor import DOCTOR_PARTS, doctor_parts
    from ragshield.errors import OptionError

    assert doctor_parts(None) == DOCTOR_PARTS
    assert doctor_parts(" database , llm") == ("llm", "database")
    for names in ("databse", "llm,gpu", ","):
        with pytest.raises(OptionError, match="choose from llm, small_llm, larger_llm"):
            doctor_parts(names)


def test_models_prepare_reports_verified_paths(python_processes, packaged_models):
    result = run_cli("models", "prepare", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert all(item["ok"] and Path(item["path"]).is_file() for item in report.values())


def test_unknown_command_is_a_usage_error(python_processes):
    result = run_cli("frobnicate")
    assert result.returncode == 2 and "frobnicate" in result.stderr


def first_demo_sample_id() -> str:
    return json.loads((ROOT / "assets" / "demo" / "samples.jsonl").open().readline())["id"]


def test_ask_judges_a_demo_sample_and_prints_the_documented_json(
        python_processes, tmp_path, packaged_models):
    result = run_cli(
        "ask", "--sample", first_demo_sample_id(), "--judges", "trivial,p_true",
        "--rule", "trivial", "--json",
        env={"RAGSHIELD_DATABASE_URL": f"sqlite:///{tmp_path}/a.db"},
    )
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert {"question", "passages", "answer", "verdicts", "decision"} <= set(payload)
    assert payload["passages"] and {"id", "text", "score"} <= set(payload["passages"][0])
    assert {"text", "evidence"} <= set(payload["answer"])
    assert [v["judge"] for v in payload["verdicts"]] == ["trivial", "p_true"]
    p_true = payload["verdicts"][1]
    assert p_true["available"] and p_true["calls"] == 1 and p_true["prompt_tokens"] > 0
    assert 0.0 <= p_true["score"] <= 1.0 and p_true["trace"][0]["purpose"]
    assert payload["decision"] == "keep"


def test_ask_rejects_bad_options_with_a_message(python_processes, tmp_path):
    env = {"RAGSHIELD_DATABASE_URL": f"sqlite:///{tmp_path}/a.db"}
    both = run_cli("ask", "--question", "q", "--sample", "s", env=env)
    assert both.returncode == 2 and "exactly one" in both.stderr
    unknown = run_cli("ask", "--sample", "s", "--judges", "oracle", env=env)
    assert unknown.returncode == 1 and "unknown judge" in unknown.stderr
    missing = run_cli("ask", "--sample", "no-such-id", "--judges", "trivial", env=env)
    assert missing.returncode == 1 and "no-such-id" in missing.stderr
