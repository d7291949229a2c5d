"""`ragshield labels ...` as a user runs it (in this process: tests/test_cli.py `invoke`), on
the demo dataset."""

from __future__ import annotations

import json

from tests.test_cli import invoke


def test_label_workflow_agreement_and_transfer(tmp_path):
    env = {"RAGSHIELD_DATABASE_URL": f"sqlite:///{tmp_path / 'l.db'}"}
    for name in ("ann", "bob"):
        assert invoke("labels", "annotator", name, env=env).exit_code == 0
    first = invoke("labels", "next", "--annotator", "ann", env=env).stdout.strip()
    assert first
    votes = {"ann": ["answerable", "unanswerable", "answerable"],
             "bob": ["answerable", "answerable", "answerable"]}
    samples = json.loads(invoke("datasets", "samples", "demo", "--limit", "3", "--json",
                                env=env).stdout)
    for name, labels in votes.items():
        for sample, label in zip(samples, labels):
            result = invoke("labels", "add", "--sample", sample["id"], "--annotator", name,
                            "--label", label, "--json", env=env)
            assert result.exit_code == 0, result.stderr
            assert json.loads(result.stdout)["stored"] is True
    agreement = json.loads(invoke("labels", "agreement", "--dataset", "demo", "--json",
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
    shown = json.loads(invoke("labels", "show", "--sample", samples[1]["id"], "--annotator",
                              "ann", "--json", env=env).stdout)
    assert shown["mine"]["label"] == "unanswerable"
    assert [other["label"] for other in shown["others"]] == ["answerable"]
    page = invoke("labels", "show", "--sample", samples[1]["id"], "--annotator", "ann",
                  env=env).stdout.splitlines()
    assert page[0] == f"Q: {shown['question']}" and page[-1] == "your label: unanswerable"
    assert "  label by bob: answerable" in page
    text = invoke("labels", "agreement", "--dataset", "demo", env=env).stdout
    assert "gwet_ac1: " in text and "automatic vs majority: n: 2" in text
    assert "  false keeps: " in text and "  false withholds: " in text

    out = tmp_path / "labels.parquet"
    assert invoke("labels", "export", "--format", "parquet", "--out", str(out),
                  env=env).exit_code == 0
    other = {"RAGSHIELD_DATABASE_URL": f"sqlite:///{tmp_path / 'other.db'}"}
    imported = invoke("labels", "import", str(out), env=other)
    assert imported.exit_code == 0 and "6 label rows added" in imported.stdout
    again = json.loads(invoke("labels", "agreement", "--dataset", "demo", "--json",
                              env=other).stdout)
    assert again == agreement


def test_label_errors_are_clear(tmp_path):
    env = {"RAGSHIELD_DATABASE_URL": f"sqlite:///{tmp_path / 'e.db'}"}
    unknown = invoke("labels", "add", "--sample", "x", "--annotator", "nobody", "--label",
                     "answerable", env=env)
    assert unknown.exit_code == 1 and "no sample 'x'" in unknown.stderr
    invoke("labels", "annotator", "ann", env=env)
    sample = json.loads(invoke("datasets", "samples", "demo", "--limit", "1", "--json",
                               env=env).stdout)[0]["id"]
    bad = invoke("labels", "add", "--sample", sample, "--annotator", "ann", "--label", "yes",
                 env=env)
    assert bad.exit_code == 1 and "field 'label' must be one of" in bad.stderr
    who = invoke("labels", "add", "--sample", sample, "--annotator", "zed", "--label",
                 "unsure", env=env)
    assert who.exit_code == 1 and "no annotator named 'zed'" in who.stderr
    broken = tmp_path / "broken.csv"
    broken.write_text("dataset,sample_id,annotator,label,created_at\n"
                      f"demo,{sample},ann,answerable,2026-01-01T00:00:00+00:00\n"
                      f"demo,{sample},ann,maybe,2026-01-02T00:00:00+00:00\n")
    result = invoke("labels", "import", str(broken), env=env)
    assert result.exit_code == 1 and "line 3: field 'label'" in result.stderr
    history = json.loads(invoke("labels", "history", "--sample", sample, "--json", env=env).stdout)
    assert history == []  # the good first row was rolled back too
