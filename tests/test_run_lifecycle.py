"""Runs from their start to a re-judge: a run on a corpus that is not there is refused before
it is recorded; today's live run (the guard's and the Demo's asks) is named by the UTC day;
a re-judge judges again the verdicts a live run kept failed, and adds its judges to the
run's config as it is when the re-judge ends."""

from __future__ import annotations

from ragshield.config import Settings
from ragshield.llm.base import LLMError
from ragshield.pipeline import RunModels, rejudge_run
from ragshield.services.questions import live_runs
from ragshield.services.questions.ask_types import AskRequest
from ragshield.services.questions.asking import ask
from ragshield.store import runs as run_store
from ragshield.store.database import Store
from ragshield.types import Passage
from tests.fakes import FakeModels, ScriptedLLM, ScriptedReply

def test_the_live_run_s_day_is_the_utc_day_whatever_the_time_zone(monkeypatch) -> None:
    """Replicas in other time zones sharing one database made two 'today' runs."""
    import time
    from datetime import datetime, timezone

    from ragshield.run_config import RunConfig
    from ragshield.services.questions.live_runs import _run_name

    config = RunConfig(dataset="live")
    names = set()
    for zone in ("Etc/GMT+12", "Etc/GMT-14"):
        monkeypatch.setenv("TZ", zone)
        time.tzset()
        names.add(_run_name(config))
    monkeypatch.undo()
    time.tzset()
    (name,) = names
    assert name.startswith(f"live {datetime.now(timezone.utc).date().isoformat()} ")


def test_a_failed_verdict_of_a_live_run_is_judged_again_and_replaced(sqlite_store: Store,
                                                                     settings: Settings) -> None:
    """A live run keeps every verdict of an ask, a failed one too; re-judging skipped it as
    judged, so the error stayed for good."""
    calls: list[int] = []

    def flaky(messages):  # the answer comes back; p_true's question meets a 503
        calls.append(1)
        if len(calls) > 1:
            raise LLMError("server said 503")
        return ScriptedReply("Answer: Paris")

    asked = ask(sqlite_store, settings, FakeModels(ScriptedLLM(respond=flaky)),
                AskRequest(question="Capital of France?",
                           passages=(Passage(text="Paris is the capital of France."),),
                           judges=("trivial", "p_true"), keep_record=False))
    record = live_runs.keep_asked(sqlite_store, settings, asked)

    def verdicts() -> list[tuple[str, bool | None, str | None]]:
        return [(v["judge"], v["keep"], v["error"])
                for v in run_store.verdict_records(sqlite_store, record.run_id)]

    assert verdicts() == [("trivial", True, None), ("p_true", None, "server said 503")]
    healthy = ScriptedLLM(respond=lambda m: ScriptedReply("yes", top={"yes": -0.2, "no": -1.8}))
    outcome = rejudge_run(sqlite_store, record.run_id, "p_true", settings, progress=False,
                          models=RunModels(main=healthy, readers={"p_true": healthy}))
    assert (outcome.added, outcome.failed) == (1, 0)
    assert verdicts() == [("trivial", True, None), ("p_true", True, None)]


def test_a_rejudge_adds_its_judges_to_the_config_as_it_is_now(sqlite_store: Store,
                                                              settings: Settings) -> None:
    """It wrote back the config read at its start: a dataset renamed meanwhile (its runs'
    configs rewritten) was undone in this run's config, which then named no dataset."""
    from ragshield.services.data.datasets import rename_dataset
    from ragshield.testing.synthetic_run import fill_synthetic_run

    run_id = fill_synthetic_run(sqlite_store, 4, ["trivial"], seed=1)
    old = run_store.get_run(sqlite_store, run_id).dataset
    healthy = ScriptedLLM(respond=lambda m: ScriptedReply("yes", top={"yes": -0.2, "no": -1.8}))

    class RenamedMidway(RunModels):
        def reader(self, name: str):  # the first judge call: the dataset is renamed then
            if run_store.get_run(sqlite_store, run_id).dataset == old:
                rename_dataset(sqlite_store, old, "renamed")
            return super().reader(name)

    rejudge_run(sqlite_store, run_id, "p_true", settings, progress=False,
                models=RenamedMidway(main=healthy, readers={"p_true": healthy}))
    config = run_store.get_run(sqlite_store, run_id).config
    assert config["dataset"] == "renamed" and config["judges"] == ["trivial", "p_true"]


def test_a_run_on_a_corpus_that_is_not_there_is_refused_before_it_is_recorded(
        sqlite_store: Store, settings: Settings) -> None:
    """It failed at the first sample, after the models had opened, and left a pending run."""
    import pytest

    from ragshield.run_config import RunConfig, RunConfigError
    from ragshield.services.runs.runs import record_run
    from ragshield.store.runs import list_runs

    config = RunConfig(dataset="demo", judges=["trivial"], retrieval="dense",
                       corpus="no-such-corpus")
    with pytest.raises(RunConfigError, match="corpus: no corpus named 'no-such-corpus'"):
        record_run(sqlite_store, settings, config)
    assert list_runs(sqlite_store) == []
