"""The command line with real models and a real database. The commands run in this process
(`invoke`: typer's CliRunner on the app that `python -m ragshield` starts, the settings given
as environment variables as a user gives them); `run_cli` starts `python -m ragshield` for
what only a process shows. A test whose command loads a model asks for `packaged_models`
(which marks it `model`)."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import pytest

from ragshield import __version__
from ragshield.testing.servers import free_port
from tests.cli_support import ROOT, first_demo_sample_id, invoke, run_cli


def test_doctor_reports_every_part_ok(tmp_path, packaged_models):
    result = invoke("doctor", "--json",
                    env={"RAGSHIELD_DATABASE_URL": f"sqlite:///{tmp_path}/d.db"})
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert set(report) == {"llm", "small_llm", "larger_llm", "embeddings", "database"}
    assert all(part["ok"] for part in report.values())
    llm = report["llm"]
    assert "paris" in llm["answer"].lower()
    assert llm["model"] == "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"  # the default answers
    assert llm["logprobs"] is True and llm["tokens_per_s"] > 0
    # `make setup` builds llama.cpp for the best instruction set this CPU runs.
    probe = subprocess.run(["bash", str(ROOT / "scripts" / "llama_cmake_args.sh")],
                           capture_output=True, text=True, check=True).stdout
    assert "AVX2" in llm["instruction_sets"]
    assert ("AVX512" in llm["instruction_sets"]) == ("GGML_AVX512=ON" in probe)
    assert "AMX_INT8" not in llm["instruction_sets"]
    assert report["larger_llm"]["model"] == "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    assert "paris" in report["larger_llm"]["answer"].lower()
    assert report["embeddings"]["dimension"] == 384
    assert report["database"]["revision"]


def test_doctor_fails_with_reasons_and_still_reports_the_rest(tmp_path, packaged_models):
    result = invoke(
        "doctor", "--json", "--only", "database,small_llm,llm",
        env={"RAGSHIELD_DATABASE_URL": "postgresql+psycopg://u:hunter2@127.0.0.1:1/x",
             "RAGSHIELD_MODEL": str(tmp_path / "missing.gguf")},
    )
    assert result.exit_code != 0
    report = json.loads(result.stdout)
    assert list(report) == ["llm", "small_llm", "database"]  # the chosen parts, in order
    assert not report["database"]["ok"] and "cannot open database" in report["database"]["error"]
    assert "hunter2" not in result.output
    assert not report["llm"]["ok"] and "missing.gguf" in report["llm"]["error"]
    assert report["small_llm"]["ok"]


def test_doctor_against_an_unreachable_endpoint_ends_quickly(tmp_path):
    result = invoke(
        "doctor", "--json", "--only", "llm",
        env={"RAGSHIELD_BACKEND": "openai",
             "RAGSHIELD_OPENAI_BASE_URL": f"http://127.0.0.1:{free_port()}/v1",
             "RAGSHIELD_MAX_RETRIES": "2", "RAGSHIELD_RETRY_BACKOFF_S": "0.05",
             "RAGSHIELD_DATABASE_URL": f"sqlite:///{tmp_path}/d.db"},
    )
    assert result.exit_code != 0
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


def test_models_prepare_reports_verified_paths(packaged_models):
    result = invoke("models", "prepare", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert all(item["ok"] and Path(item["path"]).is_file() for item in report.values())


def test_models_list_names_what_model_options_take():
    from ragshield.llm.packaged_models import PACKAGED_MODELS

    listed = json.loads(invoke("models", "list", "--json").stdout)
    assert [row["name"] for row in listed] == list(PACKAGED_MODELS)
    assert all(set(row) == {"name", "model", "file", "installed"} for row in listed)
    assert listed[0]["installed"] is True  # the default model's packages come with ragshield
    table = invoke("models", "list").stdout.splitlines()
    assert table[0].split() == ["name", "model", "file", "installed"]
    assert len(table) == 1 + len(PACKAGED_MODELS)


def test_unknown_command_is_a_usage_error():
    result = invoke("frobnicate")
    assert result.exit_code == 2 and "frobnicate" in result.stderr


def test_version_is_printed_by_the_installed_entry_point(python_processes):
    assert invoke("--version").stdout == f"ragshield {__version__}\n"
    launched = run_cli("--version")
    assert (launched.returncode, launched.stdout) == (0, f"ragshield {__version__}\n")


def test_ask_judges_a_demo_sample_and_prints_the_documented_json(tmp_path, packaged_models):
    result = invoke(
        "ask", "--sample", first_demo_sample_id(), "--judges", "trivial,p_true",
        "--rule", "trivial", "--json",
        env={"RAGSHIELD_DATABASE_URL": f"sqlite:///{tmp_path}/a.db"},
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert {"question", "passages", "answer", "verdicts", "decision"} <= set(payload)
    assert payload["passages"] and {"id", "text", "score"} <= set(payload["passages"][0])
    assert {"text", "cited_passages"} <= set(payload["answer"])
    assert [v["judge"] for v in payload["verdicts"]] == ["trivial", "p_true"]
    p_true = payload["verdicts"][1]
    assert p_true["available"] and p_true["cost"]["calls"] == 1
    assert p_true["cost"]["prompt_tokens"] > 0
    assert 0.0 <= p_true["score"] <= 1.0 and p_true["trace"][0]["purpose"]
    assert payload["decision"] == "keep"


def test_ask_rejects_bad_options_with_a_message(tmp_path):
    env = {"RAGSHIELD_DATABASE_URL": f"sqlite:///{tmp_path}/a.db"}
    both = invoke("ask", "--question", "q", "--sample", "s", env=env)
    assert both.exit_code == 2 and "exactly one" in both.stderr
    unknown = invoke("ask", "--sample", "s", "--judges", "oracle", env=env)
    assert unknown.exit_code == 1 and "unknown judge" in unknown.stderr
    missing = invoke("ask", "--sample", "no-such-id", "--judges", "trivial", env=env)
    assert missing.exit_code == 1 and "no-such-id" in missing.stderr
    cut = invoke("ask", "--sample", "s", "--on-unsupported", "cut", env=env)
    assert cut.exit_code == 1 and "on_unsupported must be one of withhold, redact" in cut.stderr


def test_serve_refuses_a_bad_setup_in_one_line(tmp_path):
    env = {"RAGSHIELD_DATABASE_URL": f"sqlite:///{tmp_path}/s.db"}
    with socket.socket() as taken:  # every call gets a taken port: none may go on to serve
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        open_api = invoke("serve", "--api-only", "--host", "0.0.0.0", "--port", port, env=env)
        no_keys = invoke("serve", "--api-only", "--port", port, "--api-keys",
                         str(tmp_path / "none.txt"), env=env)
        busy = invoke("serve", "--api-only", "--port", port, env=env)
        # Issue 45, item 13: a 45-line traceback.
        bad_setting = invoke("serve", "--api-only", "--port", port,
                             env={**env, "RAGSHIELD_GUARD_ON_BUDGET": "bogus"})
    assert open_api.stderr.startswith("error: the guard API on 0.0.0.0 would be open")
    assert bad_setting.stderr.startswith("error: settings: RAGSHIELD_GUARD_ON_BUDGET: ")
    assert no_keys.stderr.startswith("error: ") and str(tmp_path / "none.txt") in no_keys.stderr
    assert busy.stderr == f"error: cannot serve on 127.0.0.1:{port}: Address already in use\n"
    for result in (open_api, no_keys, busy, bad_setting):
        assert result.exit_code == 1 and result.stdout == ""
        assert len(result.stderr.splitlines()) == 1
