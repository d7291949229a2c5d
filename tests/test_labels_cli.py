"""`ragshield labels ...` as a user runs it (in this process: tests/test_cli.py `invoke`), on
the demo dataset."""

from __future__ import annotations

import json

from tests.cli_support import invoke


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


def test_sentence_labels_from_the_command_line_and_their_agreement(tmp_path):
    """Issue 57: two people label the sentences of the demo run's answers by number; the
    sentences, a refused number and span, and the agreement on sentences."""
    from ragshield.services.data.demo_run import load_demo_run
    from ragshield.store.database import open_store

    url = f"sqlite:///{tmp_path / 's.db'}"
    env = {"RAGSHIELD_DATABASE_URL": url}
    store = open_store(url)
    load_demo_run(store)
    store.close()
    for name in ("ann", "bob"):
        assert invoke("labels", "annotator", name, env=env).exit_code == 0
    samples = [s["id"] for s in json.loads(invoke("datasets", "samples", "demo", "--limit",
                                                  "40", "--json", env=env).stdout)]
    views = [json.loads(invoke("labels", "sentences", "--sample", sample, "--annotator", "ann",
                               "--json", env=env).stdout) for sample in samples]
    views = [view for view in views if len(view["sentences"]) >= 2][:3]
    assert len(views) == 3
    for view in views:
        for sentence in view["sentences"]:
            assert view["answer"][sentence["start"]:sentence["end"]] == sentence["text"]
    marks = {"ann": ["supported", "supported", "unsupported"],
             "bob": ["supported", "unsupported", "unsupported"]}
    for name, values in marks.items():
        for view, value in zip(views, values):
            result = invoke("labels", "sentence", "--sample", view["sample"], "--annotator",
                            name, "--index", "1", "--label", value, "--json", env=env)
            assert result.exit_code == 0, result.stderr
            assert json.loads(result.stdout)["stored"] is True
    again = invoke("labels", "sentence", "--sample", views[0]["sample"], "--annotator", "ann",
                   "--index", "1", "--label", "supported", env=env)
    assert again.stdout.startswith("already there")
    too_far = invoke("labels", "sentence", "--sample", views[0]["sample"], "--annotator", "ann",
                     "--index", "99", "--label", "supported", env=env)
    assert too_far.exit_code == 1 and "there is no sentence 99" in too_far.stderr
    outside = invoke("labels", "sentence", "--sample", views[0]["sample"], "--annotator", "ann",
                     "--span", "0:99999", "--label", "supported", env=env)
    assert outside.exit_code == 1 and "outside the answer" in outside.stderr
    shown = json.loads(invoke("labels", "sentences", "--sample", views[1]["sample"],
                              "--annotator", "ann", "--json", env=env).stdout)
    assert shown["sentences"][0]["mine"] == "supported"
    assert shown["sentences"][0]["others"] == {"bob": "unsupported"}
    agreement = json.loads(invoke("labels", "agreement", "--dataset", "demo", "--sentences",
                                  "--json", env=env).stdout)
    assert agreement["sentences"] == 3 and agreement["people"] == 2
    assert agreement["percent"] == 2 / 3
    [pair] = agreement["pairs"]
    assert pair["annotators"] == ["ann", "bob"] and pair["shared"] == 3
    # kappa: p_o = 2/3; ann 2 supported of 3, bob 1: p_e = (2*1 + 1*2) / 9 = 4/9 -> 2/5
    assert abs(pair["kappa"] - 0.4) < 1e-12
    # The shipped demo run's support marks against the people's majority: the two sentences
    # they agree on (a tie has no majority).
    assert agreement["judge"]["n"] == 2
