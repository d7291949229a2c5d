"""Policies end to end on the demo set: its samples judged by a scripted model (so the
judge's score is known to be informative), labelled by "people" whose labels are the demo
set's own flags, a policy fitted on them, a second run deciding by it, Browse and the
Dashboard's watch panel showing it; and the policy files and commands."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ragshield.cli import app
from ragshield.errors import OptionError, UserError
from ragshield.evaluation import run_tables
from ragshield.holdout import in_holdout
from ragshield.judges.judge_readers import SELF
from ragshield.judges.yes_no import REPLY_YES_OR_NO
from ragshield.pipeline import RunModels
from ragshield.policies.fitting import REFERENCE, LabelledScores, fit_policy
from ragshield.policies.policy import Policy, PolicyFormatError
from ragshield.policies.promise_check import check_promise
from ragshield.policies.risk_control import PolicyFitError
from ragshield.run_config import RunConfig
from ragshield.services.annotation.labelling import (Queue, add_annotator, label_sample,
                                                     next_to_label, parse_mix)
from ragshield.services.data.demo_run import load_demo_run
from ragshield.services.learning.policies import (export_policy, fit_run_policy, get_policy,
                                                  import_policy, judge_scores, labelled_scores,
                                                  policy_watch_table, save_policy, value_mix,
                                                  watch_stored_policy)
from ragshield.services.runs.browse import BrowseFrames, DECISION, run_frame
from ragshield.services.runs.run_tables import RunTablesCache
from ragshield.services.runs.run_views import DashboardCache
from ragshield.services.runs.runs import execute, record_run
from ragshield.store.annotation_queue import ValueMix
from ragshield.store.policies import UnknownPolicyError
from ragshield.store.sample_import import import_samples
from ragshield.types import Passage, Sample
from ragshield.ui.context import UiContext
from ragshield.ui.dashboard_tab import refresh_dashboard
from tests.fakes import ScriptedLLM, ScriptedReply
from tests.judged_demo import JUDGE, judged_demo_run
from tests.cli_support import invoke

@pytest.fixture
def demo_run(store, settings):
    """A run of the demo set judged by p_true, every sample labelled from its flags."""
    return judged_demo_run(store, settings, [JUDGE])


def test_a_stacked_policy_trains_on_half_and_calibrates_on_the_other(store, settings,
                                                                      tmp_path):
    world, run_id = judged_demo_run(store, settings, [JUDGE, "token_prob", "trivial"])
    policy = fit_run_policy(store, run_id, "stacked", "stack", alpha=0.25, delta=0.1,
                            holdout=0.2)
    assert policy.stacker is not None and policy.judges == [JUDGE, "token_prob", "trivial"]
    labelled = [s.id for s in world.samples.values() if not in_holdout(s.id, 0.2)]
    assert sorted(policy.fitted_on.sample_ids) == sorted(labelled)
    assert 0.3 * len(labelled) < policy.calibration.labels < 0.7 * len(labelled)
    assert "trained on" in policy.notes[0]
    # The model rides in the policy's JSON and decides without the run.
    path = tmp_path / "stack.json"
    path.write_text(json.dumps(policy.to_dict()))
    again = import_policy(store, path)
    assert again.stacker == policy.stacker and again.version == 2
    second = record_run(store, settings, RunConfig(
        dataset="demo", judges=[JUDGE, "token_prob", "trivial"], rule="policy:stack@1")).run_id
    execute(store, settings, second, models=RunModels(main=ScriptedLLM(respond=world.respond)))
    _, frame = run_frame(RunTablesCache(store), BrowseFrames(), second, "human")
    words = frame.rows[DECISION].value_counts().to_dict()
    assert words.get("keep", 0) > 0 and set(words) <= {"keep", "abstain", "defer"}
    with pytest.raises(OptionError, match="add token_prob, trivial to the judges"):
        record_run(store, settings, RunConfig(dataset="demo", judges=[JUDGE],
                                              rule="policy:stack"))


def test_fit_decide_and_watch_on_the_demo_set(store, settings, demo_run):
    world, run_id = demo_run
    policy = fit_run_policy(store, run_id, JUDGE, "demo-guard", alpha=0.2, delta=0.1,
                            beta=0.1, holdout=0.3)
    held = [s.id for s in world.samples.values() if in_holdout(s.id, 0.3)]
    c = policy.calibration
    assert policy.version == 1 and policy.rule == "policy:demo-guard@1"
    assert c.labels == 160 - len(held) == policy.fitted_on.human_labels
    assert not set(held) & set(policy.fitted_on.sample_ids)
    assert c.answered > 0 and c.risk <= 0.2  # what it promised, seen on its own labels
    assert c.answered + c.withheld + c.deferred == c.labels

    second = record_run(store, settings, RunConfig(dataset="demo", judges=[JUDGE],
                                                   rule="policy:demo-guard")).run_id
    execute(store, settings, second,
            models=RunModels(main=ScriptedLLM(respond=world.respond)))
    cache = RunTablesCache(store)
    tables, frame = run_frame(cache, BrowseFrames(), second, "human")
    assert tables.config["rule"] == "policy:demo-guard@1"  # pinned to the version fitted
    words = frame.rows[DECISION].value_counts().to_dict()
    assert set(words) <= {"keep", "abstain", "defer"} and words.get("defer", 0) > 0

    slice_row, unused_row = watch_stored_policy(store, "demo-guard", None, second)
    assert slice_row.samples == len(held) and unused_row.samples == len(held)
    assert slice_row.answered > 0 and not slice_row.breach
    human = cache.get(second, "human")
    table = policy_watch_table(store, human, lambda: human, "demo")
    assert [row[0] for row in table.rows] == ["policy:demo-guard@1"] * 2
    assert table.rows[0][2] == "random slice" and table.rows[0][-1] == "kept"
    # The Dashboard's watch panel, as the page gets it.
    panel = refresh_dashboard(UiContext(settings=settings, store=store), DashboardCache(),
                              second, "auto", 0).agreement_html
    assert "Policies: promised and observed risk" in panel
    assert panel.count("policy:demo-guard@1") == 2 and "<td>BREACH</td>" not in panel

    # Refitting adds a version; the second run still decides by the one it began with.
    refit = fit_run_policy(store, run_id, JUDGE, "demo-guard", alpha=0.3, delta=0.1)
    assert refit.version == 2 and get_policy(store, "demo-guard").alpha == 0.3
    assert run_frame(cache, BrowseFrames(), second, "human")[0].config["policy"]["version"] == 1


def test_the_calibration_counts_the_unanswerable_samples_by_their_flag(store, store_url,
                                                                      settings, monkeypatch):
    # Half the demo set is flagged unanswerable and has no reference answer. Nobody labelled
    # anything: the references grade the answerable half, the flag the other (every answer
    # shown there is bad). Leaving the flagged half out would calibrate on a good-answer
    # rate twice the real one.
    world, run_id = judged_demo_run(store, settings, [JUDGE], labelled=False)
    policy = fit_run_policy(store, run_id, JUDGE, "flags", alpha=0.3, delta=0.1, holdout=0.2)
    calibration = [s for s in world.samples.values() if not in_holdout(s.id, 0.2)]
    flagged = [s for s in calibration if not s.answerable]
    on, c = policy.fitted_on, policy.calibration
    assert c.labels == len(calibration) and len(flagged) > 0.3 * len(calibration)
    assert on.human_labels == 0 and on.unanswerable_flags == len(flagged)
    assert sorted(on.sample_ids) == sorted(s.id for s in calibration)
    # Every bad answer of the calibration samples is counted: shown (bad_answered) or not.
    samples = run_tables(store, run_id, "human").samples.set_index("sample_id")
    truth = samples.loc[[s.id for s in calibration]]
    bad = int((~(truth["answer_correct"] & truth["passages_support"])).sum())
    assert bad > len(flagged)  # the flagged ones and some of the answerable ones
    assert c.bad_answered + (c.withheld + c.deferred - c.good_withheld) == bad
    monkeypatch.setenv("RAGSHIELD_DATABASE_URL", store_url)
    shown = CliRunner().invoke(app, ["policy", "show", "flags"])
    assert (f"0 by people, {len(calibration) - len(flagged)} from reference answers, "
            f"{len(flagged)} from the dataset's unanswerable flag") in shown.stdout
    assert f"read by: {JUDGE} by qwen-0.5b" in shown.stdout  # the scripted run's "self"


def test_the_promise_holds_on_the_shipped_demo_run(store):
    # Real answers of the embedded model, 28 of 160 good. Fit on a random half, watch the
    # other, 200 times: the unseen half shows more than alpha wrong in at most delta of the
    # splits (plus three Monte Carlo standard errors). At alpha .7 these judges get fitted,
    # by one sequence and by two.
    tables = run_tables(store, load_demo_run(store), "human")
    for judge in ("pre_answer", "self_consistency"):
        data = labelled_scores(tables, judge_scores(tables, judge))
        assert data.scores.size == 160
        assert set(data.source) == {"reference", "unanswerable flag"}
        for starts in (1, 2):
            check = check_promise(data.scores, data.good, alpha=0.7, delta=0.1, splits=200,
                                  starts=starts)
            assert check.fitted >= 5 and check.held, (judge, starts, check)


def test_a_breach_is_flagged_when_the_labels_turn(store, settings, demo_run):
    world, run_id = demo_run
    fit_run_policy(store, run_id, JUDGE, "turned", alpha=0.2, delta=0.1, holdout=0.3)
    # People now say every answer in the random slice is wrong.
    for sample in world.samples.values():
        if in_holdout(sample.id, 0.3):
            label_sample(store, "demo", sample.id, "second-reader", "unanswerable",
                         answer_correct=False)
            label_sample(store, "demo", sample.id, "third-reader", "unanswerable",
                         answer_correct=False)
    slice_row, _ = watch_stored_policy(store, "turned", None, run_id)
    assert slice_row.risk == 1.0 and slice_row.breach


def test_policy_refusals_name_the_reason(store, settings, demo_run):
    _, run_id = demo_run
    # alpha .01 at delta .05, two sequences at .025 each: 0.99^n <= .025 first at n = 368.
    with pytest.raises(PolicyFitError, match="needs at least 368 labelled samples"):
        fit_run_policy(store, run_id, JUDGE, "strict", alpha=0.01, delta=0.05)
    with pytest.raises(OptionError, match="judge 'nli' gave no score.*judges with scores: p_true"):
        fit_run_policy(store, run_id, "nli", "other", alpha=0.2, delta=0.1)
    with pytest.raises(UnknownPolicyError, match="no policy 'missing'; stored policies: none"):
        record_run(store, settings, RunConfig(dataset="demo", judges=[JUDGE],
                                              rule="policy:missing"))
    fit_run_policy(store, run_id, JUDGE, "p", alpha=0.3, delta=0.1)
    with pytest.raises(OptionError, match="decides from the scores of p_true: add p_true"):
        record_run(store, settings, RunConfig(dataset="demo", judges=["trivial"],
                                              rule="policy:p"))


def test_a_run_without_any_truth_or_with_one_class_is_refused_saying_what_is_missing(
        store, settings):
    # Questions with no reference, no flag and no label: nothing to calibrate on.
    blind = [Sample(id=f"b{i}", question=f"Question {i}?", passages=[Passage(text="Text.")])
             for i in range(30)]
    # Every question flagged unanswerable and nobody labelled: every answer shown is bad.
    flagged = [Sample(id=f"f{i}", question=f"Question {i}?", passages=[Passage(text="Text.")],
                      answerable=False) for i in range(30)]
    llm = ScriptedLLM(respond=lambda m: ScriptedReply(
        "yes", top={"yes": -0.5, "no": -1.0}) if REPLY_YES_OR_NO in m[-1]["content"]
        else ScriptedReply("Answer: Atlantis\nEvidence: ## Passage-0 ##"))
    runs = {}
    for name, samples in (("blind", blind), ("flagged", flagged)):
        import_samples(store, name, samples)
        runs[name] = record_run(store, settings, RunConfig(dataset=name, judges=[JUDGE],
                                                           rule=JUDGE, judge_model=SELF)).run_id
        execute(store, settings, runs[name], models=RunModels(main=llm))
    with pytest.raises(UserError, match=f"run {runs['blind']} has no sample whose truth is "
                                        "known: a policy needs people's labels"):
        fit_run_policy(store, runs["blind"], JUDGE, "blind", alpha=0.3, delta=0.1)
    with pytest.raises(PolicyFitError, match="every one of the .* labelled answers is bad"):
        fit_run_policy(store, runs["flagged"], JUDGE, "flagged", alpha=0.3, delta=0.1)


def test_cli_fit_show_list_export_import_watch(store, store_url, settings, demo_run,
                                               monkeypatch, tmp_path):
    _, run_id = demo_run
    monkeypatch.setenv("RAGSHIELD_DATABASE_URL", store_url)
    cli = CliRunner()
    fitted = cli.invoke(app, ["policy", "fit", "cli-guard", "--run", str(run_id), "--judge",
                              JUDGE, "--alpha", "0.25", "--delta", "0.1", "--holdout", "0.2"])
    assert fitted.exit_code == 0, fitted.output
    assert "policy policy:cli-guard@1: judge p_true; answer when score >=" in fitted.stdout
    assert "at most 25% of the answers it shows are wrong" in fitted.stdout
    shown = cli.invoke(app, ["policy", "show", "cli-guard", "--json"])
    body = json.loads(shown.stdout)
    assert body["format"] == "ragshield-policy/1" and body["fitted_on"]["run_id"] == run_id
    listed = cli.invoke(app, ["policy", "list", "--json"])
    assert [row["rule"] for row in json.loads(listed.stdout)] == ["policy:cli-guard@1"]
    exported = tmp_path / "guard.json"
    assert cli.invoke(app, ["policy", "export", "cli-guard", "--out", str(exported)]).exit_code == 0
    imported = cli.invoke(app, ["policy", "import", str(exported)])
    assert imported.exit_code == 0 and imported.stdout == "stored policy:cli-guard@2\n"
    watched = cli.invoke(app, ["policy", "watch", "cli-guard", "--run", str(run_id), "--json"])
    rows = json.loads(watched.stdout)
    assert [row["labels"] for row in rows] == ["random slice", "every unused label"]
    missing = cli.invoke(app, ["policy", "show", "nope"])
    assert missing.exit_code == 1
    assert "no policy 'nope'; stored policies: cli-guard" in missing.stderr


# Each change breaks one field of a good policy file; the error names that field.
BAD_POLICY_FILES = [
    (lambda b: b.pop("format"), "policy.json.format: expected 'ragshield-policy/1'"),
    (lambda b: b.update(alpha="high"), "policy.json.alpha: expected int or float"),
    (lambda b: b.update(alpha=3), r"policy.json.alpha: 3 is outside \[0, 1\]"),
    (lambda b: b["calibration"].update(answered=-1), "policy.json.calibration.answered: must not"),
    (lambda b: b["fitted_on"].update(sample_ids=[1]), "policy.json.fitted_on.sample_ids"),
    (lambda b: b.update(name="a@b"), "policy.json.name: 1-100 printable characters"),
    (lambda b: b.update(withhold_below=b["answer_at"] + 1), "withhold_below: .* is above"),
    (lambda b: b.update(source="stacked"), "policy.json.stacker: a policy on source 'stacked'"),
    (lambda b: b.update(stacker={"columns": ["a:score"], "fill": [0.5], "flagged": [],
                                 "mean": [0.1], "scale": [1.0], "coef": [1.0, 2.0],
                                 "intercept": 0}), "stacker: the lengths of columns"),
]


def test_bad_policy_files_name_the_field_and_store_nothing(store, settings, demo_run, tmp_path):
    _, run_id = demo_run
    good = fit_run_policy(store, run_id, JUDGE, "good", alpha=0.3, delta=0.1).to_dict()
    path = tmp_path / "policy.json"
    for change, message in BAD_POLICY_FILES:  # one fit for all: it is the slow part
        body = json.loads(json.dumps(good))
        change(body)
        path.write_text(json.dumps(body))
        with pytest.raises(PolicyFormatError, match=message):
            import_policy(store, path)
        assert get_policy(store, "good").version == 1
    path.write_text('{"format": "ragshield-policy/1", "alpha": NaN}')
    with pytest.raises(PolicyFormatError, match="not valid JSON"):
        import_policy(store, path)


def test_a_policy_decides_like_a_rule():
    body = {"format": "ragshield-policy/1", "name": "x", "source": JUDGE, "answer_at": 0.7,
            "withhold_below": 0.3, "alpha": 0.1, "delta": 0.1, "beta": 0.2,
            "calibration": {"labels": 10, "answered": 5, "withheld": 3, "deferred": 2,
                            "bad_answered": 0, "good_withheld": 0},
            "fitted_on": {"truth": "human", "human_labels": 10, "automatic_labels": 0,
                          "unscored": 0, "fingerprint": "f", "sample_ids": []},
            "code_version": "test", "created_at": "2026-11-25T00:00:00+00:00", "version": 4}
    policy = Policy.from_dict(body)
    from ragshield.types import Verdict

    def decision(score):
        return policy.decide([Verdict(judge=JUDGE, keep=True, score=score, rationale="")])

    assert decision(0.8).keep is True and "answer" in decision(0.8).reason
    assert decision(0.1).keep is False and decision(0.1).rule == "policy:x@4"
    middle = decision(0.5)
    assert middle.keep is None and middle.deferred and "ask a person" in middle.reason
    assert policy.decide([]).deferred  # its judge did not run
    assert list(policy.decision_codes([0.8, 0.5, 0.1, float("nan")])) == [1, -3, 0, -3]


def _handed(store, queue, annotator: str, count: int) -> list[str]:
    """The samples the queue hands `annotator`, labelled one after another."""
    add_annotator(store, annotator)
    handed = []
    for _ in range(count):
        sample_id = next_to_label(store, annotator, queue)
        if sample_id is None:
            break
        handed.append(sample_id)
        label_sample(store, "demo", sample_id, annotator, "unsure")
    return handed


def test_the_value_queue_draws_from_the_band_the_disagreements_and_the_random_slice(
        store, settings, demo_run):
    world, run_id = demo_run
    policy = fit_run_policy(store, run_id, JUDGE, "band", alpha=0.2, delta=0.1, beta=0.1,
                            holdout=0.3)
    tables = RunTablesCache(store).get(run_id, "human")
    scores = tables.verdicts.set_index("sample_id")["score"]
    in_band = {i for i, s in scores.items()
               if policy.withhold_below <= s < policy.answer_at and not in_holdout(i, 0.3)}
    assert len(in_band) >= 10
    only_band = Queue("demo", "value", overlap=2, run_id=run_id, shares=(1, 0, 0))
    handed = _handed(store, only_band, "band-reader", 10)
    assert len(handed) == 10 and set(handed) <= in_band
    only_slice = Queue("demo", "value", overlap=2, run_id=run_id, shares=(0, 0, 1))
    sliced = _handed(store, only_slice, "slice-reader", 10)
    assert len(sliced) == 10 and all(in_holdout(i, 0.3) for i in sliced)
    # The default mix: the newest policy fitted on the dataset, one label in five from
    # the slice; the teaching sources never hand out a sample of the slice.
    mixed = _handed(store, Queue("demo", "value", overlap=2, run_id=run_id), "mixed", 40)
    from_slice = [i for i in mixed if in_holdout(i, 0.3)]
    assert len(mixed) == 40 and 2 <= len(from_slice) <= 16
    assert len(set(mixed) & in_band) >= 8
    # Once the band is labelled, the queue goes on with the other sources.
    rest = _handed(store, only_band, "band-reader", 200)
    assert set(rest) - in_band and len(rest) < 200  # then nothing is left open to it


def _fitted(name: str, judge: str, dataset: str = "bom") -> Policy:
    """A policy fitted on 300 labels of `dataset` whose `judge` score tells good from bad."""
    rng = np.random.default_rng(0)
    scores = rng.random(300)
    data = LabelledScores(np.asarray([f"s{i}" for i in range(300)]), scores,
                          rng.random(300) < scores, np.full(300, REFERENCE))
    return fit_policy(name, judge, data, alpha=0.2, delta=0.1, dataset=dataset)


def test_the_value_queue_defaults_to_the_newest_policy_fitted_on_the_dataset(store):
    save_policy(store, _fitted("zeta", "judge-a"))
    save_policy(store, _fitted("alpha", "judge-b"))  # fitted later, though first by name
    save_policy(store, _fitted("beta", "judge-c", dataset="elsewhere"))
    assert value_mix(store, "bom").judge == "judge-b"
    save_policy(store, _fitted("zeta", "judge-a"))  # its version 2 is now the newest
    assert value_mix(store, "bom").judge == "judge-a"
    assert value_mix(store, "bom", policy="alpha").judge == "judge-b"
    assert value_mix(store, "elsewhere").judge == "judge-c"


def test_a_policy_export_names_a_path_it_cannot_write_and_keeps_an_earlier_file_whole(
        store, tmp_path, monkeypatch):
    save_policy(store, _fitted("guard", "judge-a"))
    folder = tmp_path / "exports"
    folder.mkdir()
    missing = folder / "nowhere" / "guard.json"
    with pytest.raises(UserError, match=f"^cannot write {missing}: the folder "
                                        f"{missing.parent} does not exist$"):
        export_policy(store, "guard", None, missing)
    with pytest.raises(UserError, match=f"^{folder} is a folder; --out takes a file name$"):
        export_policy(store, "guard", None, folder)
    out = folder / "guard.json"
    assert export_policy(store, "guard", None, out) == get_policy(store, "guard")
    earlier = out.read_bytes()
    assert Policy.from_dict(json.loads(earlier)) == get_policy(store, "guard")
    save_policy(store, _fitted("guard", "judge-b"))
    write_text = Path.write_text

    def disk_full_halfway(path: Path, text: str, *args, **kwargs) -> int:
        write_text(path, text[:len(text) // 2], *args, **kwargs)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", disk_full_halfway)
    with pytest.raises(UserError, match=f"^cannot write {out}: No space left on device"):
        export_policy(store, "guard", None, out)
    monkeypatch.undo()
    assert out.read_bytes() == earlier  # the earlier export, whole
    assert [p.name for p in folder.iterdir()] == ["guard.json"]  # no partial file left


def test_cli_policy_export_to_a_bad_path_is_one_error_line(store, store_url, tmp_path):
    save_policy(store, _fitted("guard", "judge-a"))
    env = {"RAGSHIELD_DATABASE_URL": store_url}
    missing = tmp_path / "nowhere" / "guard.json"
    for out, message in ((missing, f"the folder {missing.parent} does not exist"),
                         (tmp_path, "is a folder; --out takes a file name")):
        result = invoke("policy", "export", "guard", "--out", str(out), env=env)
        assert result.exit_code == 1 and result.stdout == ""
        assert result.stderr.startswith("error: ") and message in result.stderr
        assert str(out) in result.stderr and result.stderr.count("\n") == 1
    assert not missing.parent.exists()


def test_value_mix_text_errors_name_the_source():
    assert parse_mix("band=0.5, random=0.5") == (0.5, 0.0, 0.5)
    with pytest.raises(OptionError, match="unknown source 'bands'"):
        parse_mix("bands=1")
    with pytest.raises(OptionError, match="random needs a number"):
        parse_mix("random=lots")
    with pytest.raises(OptionError, match="shares >= 0 with a positive sum"):
        ValueMix(*parse_mix("band=0"))


def test_the_demo_badge_speaks_as_the_policy():
    from ragshield.types import RuleDecision
    from ragshield.ui.demo_render import decision_html

    asked = decision_html(RuleDecision(None, "policy:x@1", "p_true score 0.5 <b>", deferred=True))
    assert 'rs-demo-badge-ask">ask a human<' in asked and "&lt;b&gt;" in asked
    assert ">answer<" in decision_html(RuleDecision(True, "policy:x@1", "ok"))
    assert ">withhold<" in decision_html(RuleDecision(False, "policy:x@1", "no"))
    assert ">keep<" in decision_html(RuleDecision(True, "majority", "2 of 3"))


def test_the_rule_choices_offer_the_policies_that_fit():
    from ragshield.services.questions.ask_choices import rule_choices

    choices, chosen = rule_choices(["p_true"], "policy:a",
                                   {"a": "p_true", "b": "token_prob", "s": "stacked"})
    assert choices == ["majority", "all", "p_true", "policy:a", "policy:s"]
    assert chosen == "policy:a"
