"""Secrets: with the API key set in the environment, run, ask, grade, report and export
through the CLI against a real HTTP server that even echoes the key back in its errors; the
key then appears nowhere ragshield writes (database, outputs, logs, exports). The run is a
process of its own; the other commands run in the test's process, to save start-up time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from ragshield.cli.app import app
from tests.reliability.fake_openai import Fault, FakeOpenAIServer, Request
from tests.reliability.secrets_scan import check_no_secret
from tests.cli_support import ROOT

KEY = "sk-ragshield-marker-7f3a9c"  # RAGSHIELD_OPENAI_API_KEY: the one used
OTHER_KEY = "sk-openai-marker-51be2d"  # OPENAI_API_KEY: shadowed, must not appear either


def echo_key(request: Request, answered: set[str]) -> Fault | None:
    """Refuse one sample's answer with a 401 that repeats the key, and fail another's first
    attempt with a 500 that does the same (a retry then succeeds)."""
    echoed = json.dumps({"error": {"message": f"bad key {request.authorization}"}}).encode()
    if "Proposed answer" in request.prompt:
        return None
    for marker, status in (("sample-one", 401), ("sample-two", 500)):
        if marker in request.prompt and (status == 401 or marker not in answered):
            answered.add(marker)
            return Fault(status=status, body=echoed)
    return None


def cli(logs: Path, name: str, *args: str) -> Result:
    """`python -m ragshield ARGS` in this process (the environment is the test's), keeping
    its stdout and stderr as log files."""
    result = CliRunner().invoke(app, list(args))
    (logs / f"{name}.stdout").write_text(result.stdout)
    (logs / f"{name}.stderr").write_text(result.stderr)
    return result


@pytest.mark.scenario("Secrets never stored, logged or exported")
def test_the_api_key_appears_nowhere(python_processes, tmp_path, monkeypatch, scenario):
    logs, exports = tmp_path / "logs", tmp_path / "exports"
    logs.mkdir()
    exports.mkdir()
    url = f"sqlite:///{tmp_path / 'secrets.db'}"
    dataset = tmp_path / "toy.jsonl"
    dataset.write_text("".join(json.dumps({
        "id": f"q{i}", "question": f"What is the capital in {name}?",
        "passages": [{"title": name, "text": f"The capital of {name} is City{i}."}],
        "reference_answers": [f"City{i}"], "answerable": True}) + "\n"
        for i, name in enumerate(["sample-one", "sample-two", "sample-three", "sample-four"])))
    env = {"RAGSHIELD_DATABASE_URL": url, "RAGSHIELD_OPENAI_API_KEY": KEY,
           "OPENAI_API_KEY": OTHER_KEY, "RAGSHIELD_MAX_RETRIES": "1",
           "RAGSHIELD_RETRY_BACKOFF_S": "0.01"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    answered: set[str] = set()
    with FakeOpenAIServer(lambda request: echo_key(request, answered)) as server:
        model = ["--backend", "openai", "--base-url", server.url]
        assert cli(logs, "import", "datasets", "import", "toy", str(dataset)).exit_code == 0
        ran = subprocess.run(  # the run as a user starts it: its own process and environment
            [sys.executable, "-m", "ragshield", "run", "--dataset", "toy", "--judges",
             "trivial,p_true", "--rule", "p_true", *model, "--json"],
            cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True, timeout=300)
        (logs / "run.stdout").write_text(ran.stdout)
        (logs / "run.stderr").write_text(ran.stderr)
        scenario.check("the refused sample fails the run (exit 1), the others are saved",
                       ran.returncode == 1 and json.loads(ran.stdout)["done"] == 3, ran.stdout)
        steps = {
            "ask": cli(logs, "ask", "ask", "--sample", "q2", "--dataset", "toy", "--judges",
                       "p_true", "--rule", "p_true", *model, "--json"),
            "metrics": cli(logs, "metrics", "metrics", "1", "--json", "--resamples", "50",
                           "--llm-grader", *model),
            "report": cli(logs, "report", "report", "1", "--out", str(exports / "report"),
                          "--resamples", "50"),
            "annotator": cli(logs, "annotator", "labels", "annotator", "ann"),
            "label": cli(logs, "label", "labels", "add", "--sample", "q1", "--dataset", "toy",
                         "--annotator", "ann", "--label", "answerable"),
        }
        steps.update({f"export {fmt}": cli(logs, f"export-{fmt}", "labels", "export",
                                           "--format", fmt, "--out",
                                           str(exports / f"labels.{fmt}"))
                      for fmt in ("csv", "jsonl", "parquet")})
        seen = {request.authorization for request in server.requests}
    failed = {name: step.output for name, step in steps.items() if step.exit_code != 0}
    scenario.check("ask, metrics with the LLM grader, report, labels and exports succeed",
                   not failed, failed)
    scenario.check("the key reached the server (so the scan is meaningful)",
                   seen == {f"Bearer {KEY}"}, seen)
    scenario.check("the server's echo of the key reached ragshield's error path",
                   "sample-one" in answered and "refused" in ran.stdout, ran.stdout)
    check_no_secret(scenario, [KEY, OTHER_KEY], url, [logs, exports])
