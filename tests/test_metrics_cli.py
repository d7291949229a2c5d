"""`ragshield metrics --verdicts FILE`: the output shape, and bad files rejected with the
file, line and field named; `ragshield metrics RUN` and `ragshield report RUN`. The commands
run in this process (tests/test_cli.py `invoke`)."""

from __future__ import annotations

import json

import pytest

from ragshield.pipeline import RunModels, execute_run, start_run
from ragshield.run_config import RunConfig
from ragshield.store.sample_import import import_samples
from ragshield.types import Passage, Sample
from ragshield.verdict_files import VerdictFileError, read_verdicts_file
from tests.fakes import ScriptedLLM
from tests.cli_support import invoke

GOOD = [
    {"sample_id": "a", "judge": "j", "keep": True, "score": 0.9, "answer_correct": True,
     "passages_support": True},
    {"sample_id": "b", "judge": "j", "keep": True, "score": 0.7, "answer_correct": False,
     "passages_support": True},
    {"sample_id": "c", "judge": "j", "keep": False, "score": None, "answer_correct": False,
     "passages_support": False},
    {"sample_id": "d", "judge": "j", "keep": False, "score": 0.1, "answer_correct": True,
     "passages_support": False},
]


def write(path, rows, extra_lines=()):
    path.write_text("\n".join([*(json.dumps(r) for r in rows), *extra_lines]) + "\n")
    return path


def test_metrics_from_a_verdict_file(tmp_path):
    result = invoke("metrics", "--verdicts", str(write(tmp_path / "v.jsonl", GOOD)), "--json",
                    "--resamples", "100")
    assert result.exit_code == 0, result.stderr
    m = json.loads(result.stdout)["j"]
    expected_keys = {"n", "counts", "risk", "carefulness", "alignment", "coverage", "precision",
                     "recall", "f1", "max_f1", "max_f1_threshold", "pr_auc", "ci"}
    assert expected_keys <= set(m)
    # kept a (correct) and b (wrong): AK=1, UK=1; discarded c (wrong) and d (correct): UD=1, AD=1
    assert m["counts"] == {"AK": 1, "AD": 1, "UK": 1, "UD": 1}
    assert m["risk"] == 0.5 and m["coverage"] == 0.5
    # V = {a}; F-Answerable = {a, b}: precision 1/2, recall 1/2
    assert (m["precision"], m["recall"]) == (0.5, 0.5)


def test_no_answerable_questions_gives_null_not_an_error(tmp_path):
    rows = [{**r, "passages_support": False, "answer_correct": False} for r in GOOD]
    m = json.loads(invoke("metrics", "--verdicts", str(write(tmp_path / "v.jsonl", rows)),
                          "--json", "--resamples", "0").stdout)["j"]
    assert m["recall"] is None and m["risk"] == 1.0 and m["ci"] == {}


@pytest.mark.parametrize("bad_line, fragment", [
    ('{"sample_id": "x", "judge": "j", "keep": true, "score": 1}',
     "line 5: missing field 'answer_correct'"),
    ('{"sample_id": "x", "judge": "j", "keep": "yes", "score": 1, "answer_correct": true, '
     '"passages_support": true}',
     "line 5: field 'keep' must be true, false or null"),
    ('{"sample_id": "x", "judge": "j", "keep": true, "score": "high", "answer_correct": true, '
     '"passages_support": true}',
     "line 5: field 'score' must be a number or null"),
    ('{"sample_id": "a", "judge": "j", "keep": true, "score": 1, "answer_correct": true, '
     '"passages_support": true}',
     "line 5: sample 'a' judged twice"),
    ("{not json", "line 5: not valid JSON"),
])
def test_bad_verdict_lines_are_named(tmp_path, bad_line, fragment):
    path = write(tmp_path / "bad.jsonl", GOOD[:3], ["", bad_line])  # a blank line 4, bad line 5
    with pytest.raises(VerdictFileError) as error:
        read_verdicts_file(path)
    assert str(path) in str(error.value) and fragment in str(error.value)


def test_a_latin_1_verdict_file_is_refused_at_its_line(tmp_path):
    path = write(tmp_path / "latin.jsonl", GOOD[:2])
    path.write_bytes(path.read_bytes() + '{"sample_id": "caf\u00e9"}\n'.encode("latin-1"))
    with pytest.raises(VerdictFileError, match=r"latin.jsonl, line 3: not valid UTF-8 \(byte "
                                               r"0xe9 at column 19\)"):
        read_verdicts_file(path)


def test_cli_reports_a_bad_file_and_exits_1(tmp_path):
    path = write(tmp_path / "bad.jsonl", [{k: v for k, v in GOOD[0].items() if k != "judge"}])
    result = invoke("metrics", "--verdicts", str(path), "--json")
    assert result.exit_code == 1
    assert "bad.jsonl, line 1" in result.stderr and "'judge'" in result.stderr
    missing = invoke("metrics", "--verdicts", str(tmp_path / "none.jsonl"))
    assert missing.exit_code == 1 and "cannot read" in missing.stderr


def test_a_byte_order_mark_is_read_and_seeds_are_bounded(tmp_path):
    """Windows tools write a BOM; numpy and scikit-learn take seeds from 0 to 2**32 - 1
    (a traceback before)."""
    path = tmp_path / "v.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + write(tmp_path / "plain.jsonl", GOOD).read_bytes())
    read = invoke("metrics", "--verdicts", str(path), "--json", "--resamples", "0")
    assert read.exit_code == 0, read.stderr
    for seed in ("-1", str(2**32)):
        refused = invoke("metrics", "--verdicts", str(path), "--seed", seed)
        assert refused.exit_code == 2 and "--seed" in refused.stderr
    assert invoke("metrics", "--verdicts", str(path), "--resamples", "100000000").exit_code == 2


def test_run_metrics_of_an_unknown_run_fail_clearly(tmp_path):
    result = invoke("metrics", "7", env={"RAGSHIELD_DATABASE_URL": f"sqlite:///{tmp_path}/m.db"})
    assert result.exit_code == 1 and "no run with id 7" in result.stderr


def test_report_and_metrics_of_a_stored_run(store, store_url, settings, tmp_path):
    env = {"RAGSHIELD_DATABASE_URL": store_url}
    import_samples(store, "toy", [Sample(id=f"s{i}", question=f"What is {i}?",
                                         passages=[Passage(text=f"It is {i}.")],
                                         reference_answers=[str(i)]) for i in range(3)])
    run = start_run(store, RunConfig(dataset="toy", judges=["trivial"], rule="trivial"))
    out = tmp_path / "report"
    empty = invoke("report", str(run), "--out", str(out), env=env)
    assert empty.exit_code == 1 and empty.stderr == f"error: run {run} has no saved answers yet\n"
    assert not out.exists()  # nor a folder left behind, nor for an unknown run
    assert invoke("report", "999", "--out", str(out), env=env).exit_code == 1
    assert not out.exists()
    nothing = invoke("metrics", str(run), "--json", env=env)  # not an empty {} as a result
    assert nothing.exit_code == 1 and "has no saved answers yet" in nothing.stderr
    execute_run(store, run, settings, progress=False,
                models=RunModels(main=ScriptedLLM(respond=lambda messages: "Answer: 1")))
    written = invoke("report", str(run), "--out", str(out), "--resamples", "0", env=env)
    assert written.exit_code == 0, written.output
    assert written.stdout.startswith(f"wrote {out / 'report.md'}, ") and written.stderr == ""
    assert (out / "report.html").is_file()
    shown = invoke("metrics", str(run), "--json", "--resamples", "0", env=env)
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["trivial"]["n"] == 3
