"""`ragshield metrics --verdicts FILE`: the output shape, and bad files rejected with the
file, line and field named."""

from __future__ import annotations

import json

import pytest

from ragshield.verdict_files import VerdictFileError, read_verdicts_file
from tests.test_cli import run_cli

GOOD = [
    {"sample_id": "a", "judge": "j", "keep": True, "score": 0.9, "answer_correct": True, "passages_support": True},
    {"sample_id": "b", "judge": "j", "keep": True, "score": 0.7, "answer_correct": False, "passages_support": True},
    {"sample_id": "c", "judge": "j", "keep": False, "score": None, "answer_correct": False, "passages_support": False},
    {"sample_id": "d", "judge": "j", "keep": False, "score": 0.1, "answer_correct": True, "passages_support": False},
]


def write(path, rows, extra_lines=()):
    path.write_text("\n".join([*(json.dumps(r) for r in rows), *extra_lines]) + "\n")
    return path


def test_metrics_from_a_verdict_file(python_processes, tmp_path):
    result = run_cli("metrics", "--verdicts", str(write(tmp_path / "v.jsonl", GOOD)), "--json",
                     "--resamples", "100")
    assert result.returncode == 0, result.stderr
    m = json.loads(result.stdout)["j"]
    expected_keys = {"n", "counts", "risk", "carefulness", "alignment", "coverage", "precision",
                     "recall", "f1", "max_f1", "max_f1_threshold", "pr_auc", "ci"}
    assert expected_keys <= set(m)
    # kept a (correct) and b (wrong): AK=1, UK=1; discarded c (wrong) and d (correct): UD=1, AD=1
    assert m["counts"] == {"AK": 1, "AD": 1, "UK": 1, "UD": 1}
    assert m["risk"] == 0.5 and m["coverage"] == 0.5
    # V = {a}; F-Answerable = {a, b}: precision 1/2, recall 1/2
    assert (m["precision"], m["recall"]) == (0.5, 0.5)


def test_no_answerable_questions_gives_null_not_an_error(python_processes, tmp_path):
    rows = [{**r, "passages_support": False, "answer_correct": False} for r in GOOD]
    m = json.loads(run_cli("metrics", "--verdicts", str(write(tmp_path / "v.jsonl", rows)),
                           "--json", "--resamples", "0").stdout)["j"]
    assert m["recall"] is None and m["risk"] == 1.0 and m["ci"] == {}


@pytest.mark.parametrize("bad_line, fragment", [
    ('{"sample_id": "x", "judge": "j", "keep": true, "score": 1}', "line 5: missing field 'answer_correct'"),
    ('{"sample_id": "x", "judge": "j", "keep": "yes", "score": 1, "answer_correct": true, "passages_support": true}',
     "line 5: field 'keep' must be true, false or null"),
    ('{"sample_id": "x", "judge": "j", "keep": true, "score": "high", "answer_correct": true, "passages_support": true}',
     "line 5: field 'score' must be a number or null"),
    ('{"sample_id": "a", "judge": "j", "keep": true, "score": 1, "answer_correct": true, "passages_support": true}',
     "line 5: sample 'a' judged twice"),
    ("{not json", "line 5: not valid JSON"),
])
def test_bad_verdict_lines_are_named(tmp_path, bad_line, fragment):
    path = write(tmp_path / "bad.jsonl", GOOD[:3], ["", bad_line])  # a blank line 4, bad line 5
    with pytest.raises(VerdictFileError) as error:
        read_verdicts_file(path)
    assert str(path) in str(error.value) and fragment in str(error.value)


def test_cli_reports_a_bad_file_and_exits_1(python_processes, tmp_path):
    path = write(tmp_path / "bad.jsonl", [{k: v for k, v in GOOD[0].items() if k != "judge"}])
    result = run_cli("metrics", "--verdicts", str(path), "--json")
    assert result.returncode == 1
    assert "bad.jsonl, line 1" in result.stderr and "'judge'" in result.stderr
    missing = run_cli("metrics", "--verdicts", str(tmp_path / "none.jsonl"))
    assert missing.returncode == 1 and "cannot read" in missing.stderr


def test_run_metrics_of_an_unknown_run_fail_clearly(python_processes, tmp_path):
    result = run_cli("metrics", "7", env={"RAGSHIELD_DATABASE_URL": f"sqlite:///{tmp_path}/m.db"})
    assert result.returncode == 1 and "no run with id 7" in result.stderr
