"""The demo run that ships with the app: a run bundle written from one store loads into
another whole (answers, verdicts with traces, the LLM calls behind them); a bad file is
refused naming the file and field and stores nothing; a new database gets the shipped run
once; and the shipped file is not stale: every call the code makes for it today is in it."""

from __future__ import annotations

import json
import lzma
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy import func, select

from ragshield.datasets.demo import DEMO_EXAMPLES, DEMO_RUN
from ragshield.judges.judge_readers import SELF
from ragshield.llm.base import CHAT, LOGPROBS, SCORE, BackendBase
from ragshield.llm.call_cache import CachedLLM
from ragshield.llm.packaged_models import SMALLER_MODEL, default_answer_model
from ragshield.pipeline import RunModels
from ragshield.run_config import RunConfig, with_readers
from ragshield.services.data import demo_run
from ragshield.services.data.datasets import ensure_demo_dataset
from ragshield.services.data.demo_run import load_demo_run
from ragshield.services.questions.asking import OpenedModels, ask
from ragshield.services.questions.demo_examples import demo_request, read_examples
from ragshield.services.runs.runs import execute, record_run
from ragshield.store.database import open_store
from ragshield.store.models import AnswerRow, LLMCallRow, Run, VerdictRow
from ragshield.store.run_bundle import (BundleError, load_bundle, read_bundle, run_count,
                                        write_bundle)
from ragshield.store.runs import answer_records, verdict_records
from tests.fakes import ScriptedLLM, ScriptedReply

SHIPPED_STALE = ("the shipped demo run (ragshield/assets/demo/run.json.xz) is stale: the code "
                 "now makes a call it does not hold; regenerate it with "
                 "`python scripts/make_demo_run.py`")


def scripted(messages) -> ScriptedReply:
    text = messages[-1]["content"]
    if "yes" in text.lower() and "no" in text.lower():
        return ScriptedReply("Yes", top={"Yes": -0.2, "No": -1.7})
    return ScriptedReply("Answer: Paris\nEvidence: ## Passage-0 ##")


@pytest.fixture
def bundled(store, settings, tmp_path) -> tuple[int, Path]:
    return scripted_bundle(store, settings, tmp_path)


def scripted_bundle(store, settings, tmp_path) -> tuple[int, Path]:
    """A cached, scripted run of 6 demo samples by two judges, written to a bundle."""
    ensure_demo_dataset(store)
    run_id = record_run(store, settings, RunConfig(dataset="demo", limit=6,
                                                   judges=["trivial", "p_true"], rule="p_true",
                                                   judge_model=SELF), name="shipped").run_id
    llm = CachedLLM(ScriptedLLM(respond=scripted), store)
    execute(store, settings, run_id, models=RunModels(main=llm))
    return run_id, write_bundle(store, run_id, tmp_path / "run.json.xz", code_version="0.1.0+t",
                                calls=True)


def verdict_scores(store, run_id: int) -> dict[tuple[int, str], float | None]:
    """(sample row id, judge) -> score, of the run's main answers."""
    return {(v["sample_id"], v["judge"]): v["score"] for v in verdict_records(store, run_id)}


def _without_ids(rows: list[dict]) -> list[dict]:
    local = {"id", "answer_id", "run_id", "sample_id", "created_at"}
    return [{k: v for k, v in row.items() if k not in local} for row in rows]


def test_a_bundle_loads_into_a_new_store_whole(store, bundled, tmp_path):
    run_id, path = bundled
    other = open_store(f"sqlite:///{tmp_path / 'other.db'}")
    try:
        new_id = load_demo_run(other, path)
        assert new_id is not None
        assert load_demo_run(other, path) is None  # a store with a run gets no second one
        assert run_count(other) == 1
        with other.session() as session:
            run = session.get(Run, new_id)
            assert run.name == "shipped" and run.config["judges"] == ["trivial", "p_true"]
        for read in (answer_records, verdict_records):
            assert _without_ids(read(other, new_id)) == _without_ids(read(store, run_id))
        with store.session() as a, other.session() as b:
            calls = sorted(a.scalars(select(LLMCallRow.key)))
            assert calls and sorted(b.scalars(select(LLMCallRow.key))) == calls
    finally:
        other.close()


def test_two_apps_starting_at_once_on_an_empty_database_load_the_demo_run_once(
        store_url, settings, tmp_path, monkeypatch):
    """Two app processes (a store each, so a connection each) start together on a new
    database: one loads the demo run, the other finds it there; neither fails. Both have
    found the database empty before either loads (they meet after reading the file)."""
    source = open_store(f"sqlite:///{tmp_path / 'source.db'}")
    try:
        _, path = scripted_bundle(source, settings, tmp_path)
    finally:
        source.close()
    stores = [open_store(store_url) for _ in range(2)]
    both_found_it_empty = threading.Barrier(len(stores))

    def read_then_meet(read_path):
        bundle = read_bundle(read_path)
        both_found_it_empty.wait(timeout=30)
        return bundle

    monkeypatch.setattr(demo_run, "read_bundle", read_then_meet)

    def starting_app(store) -> int | None:
        return load_demo_run(store, path)

    try:
        with ThreadPoolExecutor(len(stores)) as apps:
            loaded = list(apps.map(starting_app, stores))
        assert sum(run_id is not None for run_id in loaded) == 1, loaded
        assert run_count(stores[0]) == 1
    finally:
        for store in stores:
            store.close()


def test_a_loaded_run_replays_from_the_call_cache(store, settings, bundled, tmp_path):
    """Asking a stored sample again with the run's settings calls no model."""
    _, path = bundled
    other = open_store(f"sqlite:///{tmp_path / 'other.db'}")
    try:
        new_id = load_demo_run(other, path)
        sample = answer_records(other, new_id)[0]
        refusing = RunModels(main=CachedLLM(Refusing("scripted", "test-double"), other))
        rerun = record_run(other, settings, RunConfig(dataset="demo", limit=6,
                                                      judges=["trivial", "p_true"],
                                                      rule="p_true", judge_model=SELF)).run_id
        result = execute(other, settings, rerun, models=refusing)
        assert not result.failures and result.outcome.done == 6
        assert verdict_scores(other, rerun) == verdict_scores(other, new_id)
        assert sample["text"] == "Paris"
    finally:
        other.close()


def _rewrite(path: Path, change) -> Path:
    with lzma.open(path, "rt") as handle:
        body = json.load(handle)
    change(body)
    bad = path.with_name("bad.json.xz")
    with lzma.open(bad, "wt") as handle:
        json.dump(body, handle)
    return bad


# Each change breaks one field of a good bundle; the error names the file and that field.
BAD_BUNDLES = [
    (lambda b: b.update(format="something else"), "field 'format'"),
    (lambda b: b.update(format_version=99), "field 'format_version' is 99"),
    (lambda b: b.update(answers="many"), "field 'answers' must be a list"),
    (lambda b: b["answers"][0].pop("sample"), "answers[0] needs a 'sample' id"),
    (lambda b: b["answers"][2].update(colour="red"), "answers[2] has unknown field(s) ['colour']"),
    (lambda b: b["answers"][1].update(sample="demo:nope"), "not in dataset 'demo'"),
    (lambda b: b["llm_calls"][0].update(extra=1), "llm_calls has unknown field(s) ['extra']"),
    # No database stores a lone surrogate, and a page holding one cannot be sent.
    (lambda b: b["llm_calls"][0].update(output="x\ud800y"), "lone surrogate"),
]


def test_a_bad_bundle_names_the_file_and_field_and_stores_nothing(store, bundled, tmp_path):
    _, path = bundled
    other = open_store(f"sqlite:///{tmp_path / 'other.db'}")
    try:
        ensure_demo_dataset(other)
        for change, fragment in BAD_BUNDLES:
            bad = _rewrite(path, change)
            with pytest.raises(BundleError, match="bad.json.xz") as error:
                load_bundle(other, read_bundle(bad))
            assert fragment in str(error.value)
            with other.session() as session:
                for table in (Run, AnswerRow, VerdictRow, LLMCallRow):
                    assert session.scalar(select(func.count()).select_from(table)) == 0
    finally:
        other.close()


def test_a_file_that_is_no_bundle_is_refused(tmp_path):
    plain = tmp_path / "plain.json.xz"
    plain.write_text("{}")
    with pytest.raises(BundleError, match="plain.json.xz: not an xz-compressed JSON"):
        read_bundle(plain)
    with pytest.raises(BundleError, match="missing.json.xz: no such file"):
        read_bundle(tmp_path / "missing.json.xz")


class Refusing(BackendBase):
    """A model that is never to be called: the call cache must answer everything."""

    capabilities = frozenset({CHAT, LOGPROBS, SCORE})

    def __init__(self, backend: str, model: str) -> None:
        self.backend, self.model = backend, model

    def chat(self, messages, **_options):
        raise AssertionError(SHIPPED_STALE)

    def score(self, prompt_messages, continuation):
        raise AssertionError(SHIPPED_STALE)


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    """A new database with the shipped demo run loaded, and the run's id."""
    if not DEMO_RUN.is_file():
        pytest.fail(f"{DEMO_RUN} is missing: make it with `python scripts/make_demo_run.py`")
    store = open_store(f"sqlite:///{tmp_path_factory.mktemp('shipped') / 'demo.db'}")
    run_id = load_demo_run(store)
    yield store, run_id
    store.close()


def _replaying(store, answered_by: str) -> CachedLLM:
    """The call cache over a model that refuses every call, named as the answers name theirs
    ("backend:model")."""
    backend, model = answered_by.split(":", 1)
    return CachedLLM(Refusing(backend, model), store)


def test_the_shipped_demo_run_is_full_and_not_stale(shipped, settings):
    """Run the shipped run's configuration again over models that refuse every call: each
    call the code makes today must be in the file, and every verdict must come out the
    same. A prompt changed without regenerating the file fails here."""
    store, run_id = shipped
    with store.session() as session:
        run = session.get(Run, run_id)
        config = RunConfig.from_dict(run.config)
        models = dict(session.execute(select(AnswerRow.role, AnswerRow.model).where(
            AnswerRow.run_id == run_id).group_by(AnswerRow.role, AnswerRow.model)).all())
    assert run.samples_total == 160 and config.switch and config.fallback
    assert set(models) == {"main", "norag", "larger"} and "1.5b" in models["larger"]
    # The 0.5B answers the shipped run (its switch curve hands withheld answers to the
    # 1.5B), and its judges read from the models a new run of the same judges and model reads
    # them from by default.
    assert config.answer_model(settings) == SMALLER_MODEL
    assert config.readers() == with_readers(RunConfig(
        dataset="demo", judges=config.judges, model=SMALLER_MODEL), settings).readers()
    rerun = record_run(store, settings, RunConfig(**{**config.to_dict(), "policy": None})).run_id
    larger = _replaying(store, models["larger"])
    result = execute(store, settings, rerun, models=RunModels(
        main=_replaying(store, models["main"]), larger=larger,
        readers={judge: larger for judge in config.judge_readers or {}}))
    assert not result.failures, f"{SHIPPED_STALE}: {list(result.failures.items())[:2]}"
    assert result.outcome.done == 160
    assert verdict_scores(store, rerun) == verdict_scores(store, run_id)


@pytest.mark.usefixtures("long_computation")
def test_the_shipped_examples_replay_and_show_what_they_say(shipped, settings):
    store, run_id = shipped
    examples = {example.title: example for example in read_examples(DEMO_EXAMPLES)}
    assert set(examples) == {"A kept answer", "A withheld answer", "Noise flips it"}
    with store.session() as session:
        models = dict(session.execute(select(AnswerRow.role, AnswerRow.model).where(
            AnswerRow.run_id == run_id).group_by(AnswerRow.role, AnswerRow.model)).all())

    class Replaying(OpenedModels):
        """The Demo's models, each over the call cache (the 1.5B answers the Demo by default;
        it answered the shipped run's switch curve under the same name)."""

        def llm(self, packaged=None):
            chosen = packaged or default_answer_model()
            return _replaying(store, models["main" if chosen == SMALLER_MODEL else "larger"])

    words = {}
    for title, example in examples.items():
        result = ask(store, settings, Replaying(settings, store),
                     demo_request(example.sample_id, settings, example.noise))
        words[title] = result.judged.decision.keep
    assert words == {"A kept answer": True, "A withheld answer": False, "Noise flips it": False}
    kept_without_noise = ask(store, settings, Replaying(settings, store),
                             demo_request(examples["Noise flips it"].sample_id, settings))
    assert kept_without_noise.judged.decision.keep


def test_runs_export_and_import_through_the_cli(store, store_url, bundled, monkeypatch,
                                                tmp_path):
    from typer.testing import CliRunner

    from ragshield.cli.app import app

    run_id, _ = bundled
    cli = CliRunner()
    monkeypatch.setenv("RAGSHIELD_DATABASE_URL", store_url)
    out = tmp_path / "exported.json.xz"
    exported = cli.invoke(app, ["runs", "export", str(run_id), "--out", str(out)])
    assert exported.exit_code == 0 and f"wrote run {run_id} to {out}" in exported.stdout
    assert read_bundle(out).llm_calls == []  # calls only with --with-calls
    with_calls = cli.invoke(app, ["runs", "export", str(run_id), "--out", str(out),
                                  "--with-calls"])
    assert with_calls.exit_code == 0 and read_bundle(out).llm_calls

    monkeypatch.setenv("RAGSHIELD_DATABASE_URL", f"sqlite:///{tmp_path / 'other.db'}")
    imported = cli.invoke(app, ["runs", "import", str(out)])
    assert imported.exit_code == 0 and imported.stdout == f"imported {out} as run 1\n"
    listed = json.loads(cli.invoke(app, ["runs", "list", "--json"]).stdout)
    assert [(r["name"], r["dataset"], r["done"]) for r in listed] == [("shipped", "demo", 6)]
    bad = cli.invoke(app, ["runs", "import", str(tmp_path / "nothing.json.xz")])
    assert bad.exit_code == 1 and "nothing.json.xz: no such file" in bad.output
    unknown = cli.invoke(app, ["runs", "export", "99", "--out", str(out)])
    assert unknown.exit_code == 1 and "no run 99" in unknown.output
    # A folder on either side: one line each (tracebacks before, and a .partial left).
    monkeypatch.setenv("RAGSHIELD_DATABASE_URL", store_url)
    folder = tmp_path / "folder"
    folder.mkdir()
    into_folder = cli.invoke(app, ["runs", "export", str(run_id), "--out", str(folder)])
    assert into_folder.exit_code == 1 and f"{folder} is a folder" in into_folder.output
    from_folder = cli.invoke(app, ["runs", "import", str(folder)])
    assert from_folder.exit_code == 1 and "is a folder, not a run bundle" in from_folder.output
    assert list(folder.iterdir()) == [] and not list(tmp_path.glob("*.partial"))


def test_the_maintenance_script_imports_and_replaces_a_run_config(store):
    """scripts/make_demo_run.py refreshes the shipped run's config with set_run_config."""
    import importlib.util

    from ragshield.store.runs import create_run, get_run, set_run_config

    ensure_demo_dataset(store)
    run_id = create_run(store, dataset="demo", config={"judges": ["trivial"], "rule": "trivial"},
                        seed=0, code_version="test", samples_total=1)
    set_run_config(store, run_id, {"judges": ["trivial"], "rule": "majority"})
    assert get_run(store, run_id).config == {"judges": ["trivial"], "rule": "majority"}
    script = Path(__file__).resolve().parents[1] / "scripts" / "make_demo_run.py"
    spec = importlib.util.spec_from_file_location("make_demo_run", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # its imports resolve (one named a removed function)
    assert callable(module.new_readers)
