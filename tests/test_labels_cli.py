"""`python -m ragshield labels ...` as a user runs it, on the demo dataset."""

from __future__ import annotations

import json

from tests.test_cli import run_cli


def test_label_workflow_agreement_and_transfer(python_processes, tmp_path):
    env = {"RAGSHIELD_DATABASE_URL": f"sqlite:///{tmp_path / 'l.db'}"}
    for name in ("ann", "bob"):
        assert run_cli("labels", "annotator", name, env=env).returncode == 0
    first = run_cli("labels", "next", "--annotator", "ann", env=env).stdout.strip()
    assert first
    votes = {"ann": ["answerable", "unanswerable", "answerable"],
             "bob": ["answerable", "answerable", "answerable"]}
    samples = json.loads(run_cli("datasets", "samples", "demo", "--limit", "3", "--json",
                                 env=env).stdout)
    for name, labels in votes.items():
        for sample, label in zip(samples, labels):
            result = run_cli("labels", "add", "--sample", sample["id"], "--annotator", name,
                             "--label", label, "--json", env=env)
            assert result.returncode == 0, result.stderr
            assert json.loads(result.stdout)["stored"] is True
    agreement = json.loads(run_cli("labels", "agreement", "--dataset", "demo", "--json",
                                   env=env).stdout)
    assert agreement["n_items"] == 3 and agreement["percent"] == 2 / 3
    assert set(agreement["cohen"]) == {"ann|bob"}
    assert {"fleiss", "krippendorff_alpha", "automatic", "judges"} <= set(agreement)
    # AC1: p_a = 2/3, pi_answerable = (1 + 1/2 + 1) / 3 = 5/6, p_e = 10/36 -> 7/13
    assert abs(agreement["gwet_ac1"] - 7 / 13) < 1e-12
    # Misses are named by the dataset's own ids (stable across stores, as checked below).
    automatic = agreement["automatic"]
    ids = {sample["id"] for sample in samples}
    assert set(automatic["false_keeps"]) | set(automatic["false_withholds"]) <= ids
    assert automatic["n"] == 2  # the tie on the second sample is left out
    text = run_cli("labels", "agreement", "--dataset", "demo", env=env).stdout
    assert "gwet_ac1: " in text and "automatic vs majority: n: 2" in text
    assert "  false keeps: " in text and "  false withholds: " in text

    out = tmp_path / "labels.parquet"
    assert run_cli("labels", "export", "--format", "parquet", "--out", str(out), env=env).returncode == 0
    other = {"RAGSHIELD_DATABASE_URL": f"sqlite:///{tmp_path / 'other.db'}"}
    imported = run_cli("labels", "import", str(out), env=other)
    assert imported.returncode == 0 and "6 label rows added" in imported.stdout
    again = json.loads(run_cli("labels", "agreement", "--dataset", "demo", "--json", env=other).stdout)
    assert again == agreement


def test_label_errors_are_clear(python_processes, tmp_path):
    env = {"RAGSHIELD_DATABASE_URL": f"sqlite:///{tmp_path / 'e.db'}"}
    unknown = run_cli("labels", "add", "--sample", "x", "--annotator", "nobody", "--label",
                      "answerable", env=env)
    assert unknown.returncode == 1 and "no sample 'x'" in unknown.stderr
    run_cli("labels", "annotator", "ann", env=env)
    sample = json.loads(run_cli("datasets", "samples", "demo", "--limit", "1", "--json",
                                env=env).stdout)[0]["id"]
    bad = run_cli("labels", "add", "--sample", sample, "--annotator", "ann", "--label", "yes", env=env)
    assert bad.returncode == 1 and "field 'label' must be one of" in bad.stderr
    who = run_cli("labels", "add", "--sample", sample, "--annotator", "zed", "--label",
                  "unsure", env=env)
    assert who.returncode == 1 and "no annotator named 'zed'" in who.stderr
    broken = tmp_path / "broken.csv"
    broken.write_text("dataset,sample_id,annotator,label,created_at\n"
                      f"demo,{sample},ann,answerable,2026-01-01T00:00:00+00:00\n"
                      f"demo,{sample},ann,maybe,2026-01-02T00:00:00+00:00\n")
    result = run_cli("labels", "import", str(broken), env=env)
    assert result.returncode == 1 and "line 3: field 'label'" in result.stderr
    history = json.loads(run_cli("labels", "history", "--sample", sample, "--json", env=env).stdout)
    assert history == []  # the good first row was rolled back too
