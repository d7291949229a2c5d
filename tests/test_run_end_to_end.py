"""run -> metrics -> report as a user runs them: real subprocesses, the embedded model, 4
demo samples, a real SQLite file. Also a run process killed with SIGKILL and resumed."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest

from tests.run_helpers import kill_when, saved_answers
from tests.cli_support import ROOT, run_cli

JUDGES = "trivial,p_true,token_prob"
SAMPLES = 4  # the first 4 demo samples: answerable and unanswerable ones


@pytest.fixture(scope="module")
def e2e(python_processes, tmp_path_factory, packaged_models):
    """One real run of SAMPLES demo samples shared by the tests of this module."""
    folder = tmp_path_factory.mktemp("e2e")
    env = {"RAGSHIELD_DATABASE_URL": f"sqlite:///{folder / 'e2e.db'}"}
    result = run_cli("run", "--dataset", "demo", "--limit", str(SAMPLES), "--judges", JUDGES,
                     "--rule", "p_true", "--fallback", "--json", env=env, timeout=900)
    assert result.returncode == 0, result.stderr
    return folder, env, json.loads(result.stdout)


def test_run_stores_every_sample(e2e):
    _, env, outcome = e2e
    assert ((outcome["status"], outcome["done"], outcome["total"], outcome["failed"])
            == ("done", SAMPLES, SAMPLES, 0))
    [listed] = json.loads(run_cli("runs", "list", "--json", env=env).stdout)
    assert ((listed["id"], listed["done"], listed["total"], listed["failures"])
            == (outcome["run_id"], SAMPLES, SAMPLES, 0))


def test_metrics_are_consistent_with_their_counts(e2e):
    _, env, outcome = e2e
    result = run_cli("metrics", str(outcome["run_id"]), "--json", "--resamples", "200", env=env)
    assert result.returncode == 0, result.stderr
    metrics = json.loads(result.stdout)
    assert set(metrics) == set(JUDGES.split(","))
    for judge, m in metrics.items():
        c = m["counts"]
        assert sum(c.values()) == m["n"] == SAMPLES, judge
        kept = c["AK"] + c["UK"]
        assert m["coverage"] == pytest.approx(kept / SAMPLES)
        assert m["risk"] == (pytest.approx(c["UK"] / kept) if kept else None)
        for name, (lo, hi) in m["ci"].items():
            if m[name] is not None and lo is not None:
                assert lo <= m[name] + 1e-9 and m[name] <= hi + 1e-9, (judge, name)
    assert metrics["trivial"]["coverage"] == 1.0


def test_verdict_file_gives_the_same_metrics_as_the_run(e2e):
    folder, env, outcome = e2e
    from ragshield.evaluation import run_tables
    from ragshield.store.database import open_store

    store = open_store(env["RAGSHIELD_DATABASE_URL"])
    table = run_tables(store, outcome["run_id"]).verdicts
    store.close()
    path = folder / "verdicts.jsonl"
    with open(path, "w") as out:
        for row in table.itertuples(index=False):
            out.write(json.dumps({"sample_id": row.sample_id, "judge": row.judge,
                                  "keep": bool(row.keep),
                                  "score": None if row.score != row.score else float(row.score),
                                  "answer_correct": bool(row.answer_correct),
                                  "passages_support": bool(row.passages_support)}) + "\n")
    from_file = json.loads(run_cli("metrics", "--verdicts", str(path), "--json", env=env).stdout)
    from_run = json.loads(run_cli("metrics", str(outcome["run_id"]), "--json", env=env).stdout)
    assert from_file == from_run


def test_report_files(e2e):
    folder, env, outcome = e2e
    out = folder / "report"
    result = run_cli("report", str(outcome["run_id"]), "--out", str(out), env=env)
    assert result.returncode == 0, result.stderr
    md = (out / "report.md").read_text()
    assert "Risk control (RC-RAG)" in md and "No-RAG fallback" in md
    assert all(f"| {judge} | {SAMPLES} |" in md for judge in JUDGES.split(","))
    for name in ("pr_curves.png", "risk_coverage.png", "fallback.png"):
        assert (out / name).read_bytes()[:4] == b"\x89PNG"


def test_killed_run_resumes_without_losing_or_duplicating(
        python_processes, tmp_path, packaged_models):
    db = tmp_path / "kill.db"
    env = {**os.environ, "RAGSHIELD_DATABASE_URL": f"sqlite:///{db}"}
    process = subprocess.Popen(
        [sys.executable, "-m", "ragshield", "run", "--dataset", "demo", "--limit", "3",
         "--judges", "trivial", "--rule", "trivial", "--no-progress"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kill_when(process, lambda: bool(saved_answers(db)))
    saved = saved_answers(db)
    assert 1 <= len(saved) < 3, "the run should have been killed mid-way"

    result = run_cli("run", "--resume", "1", "--json",
                     env={"RAGSHIELD_DATABASE_URL": env["RAGSHIELD_DATABASE_URL"]})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["done"] == 3
    after = saved_answers(db)
    assert len(after) == 3 and all(count == 1 for _, count in after)
    with sqlite3.connect(db) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert connection.execute("SELECT COUNT(*) FROM verdicts").fetchone() == (3,)


def test_small_model_run_with_switch_answers_reports_the_switch_curve(
        python_processes, tmp_path, packaged_models):
    env = {"RAGSHIELD_DATABASE_URL": f"sqlite:///{tmp_path / 'switch.db'}"}
    result = run_cli("run", "--dataset", "demo", "--limit", "1", "--small-model", "--switch",
                     "--judges", "token_prob", "--rule", "token_prob", "--json", env=env)
    assert result.returncode == 0, result.stderr
    with sqlite3.connect(tmp_path / "switch.db") as connection:
        models = dict(connection.execute("SELECT role, model FROM answers GROUP BY role"))
    assert set(models) == {"main", "larger"}
    assert "smollm2" in models["main"].lower() and "1.5b" in models["larger"].lower()
    report = run_cli("report", "1", "--out", str(tmp_path / "r"), env=env)
    assert report.returncode == 0, report.stderr
    assert "Switch to a larger model" in (tmp_path / "r" / "report.md").read_text()
    assert (tmp_path / "r" / "switch.png").read_bytes()[:4] == b"\x89PNG"
