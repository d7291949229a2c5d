"""Run bundles (`runs export` / `runs import`): a bundle goes only into a dataset whose
samples ask the same questions, and a malformed one is one error line naming the file and
the entry, with nothing imported."""

from __future__ import annotations

import json
import lzma
from pathlib import Path
from typing import Any, Callable

import pytest

from ragshield.services.data.run_bundles import export_run, import_run
from ragshield.store.database import Store, open_store
from ragshield.store.run_bundle import BundleError, run_count
from ragshield.store.runs import get_run
from ragshield.store.sample_import import import_samples
from ragshield.store.samples import list_samples, load_sample
from ragshield.testing.synthetic_run import fill_synthetic_run
from ragshield.types import Sample


@pytest.fixture
def exported(sqlite_store: Store, tmp_path: Path) -> tuple[Path, str, list[Sample]]:
    run_id = fill_synthetic_run(sqlite_store, 6, ["trivial", "p_true"], seed=3)
    dataset = get_run(sqlite_store, run_id).dataset
    samples = [load_sample(sqlite_store, dataset, s.id)
               for s in list_samples(sqlite_store, dataset)]
    return export_run(sqlite_store, run_id, tmp_path / "run.json.xz"), dataset, samples


def test_a_bundle_goes_only_into_samples_that_ask_the_same_questions(exported, tmp_path):
    path, dataset, samples = exported
    same = open_store(f"sqlite:///{tmp_path / 'same.db'}")
    import_samples(same, dataset, samples)
    assert get_run(same, import_run(same, path)).dataset == dataset

    other = open_store(f"sqlite:///{tmp_path / 'other.db'}")
    import_samples(other, dataset, [Sample(id=s.id, question=f"Who wrote book {i}?",
                                           passages=s.passages)
                                    for i, s in enumerate(samples)])
    with pytest.raises(BundleError, match=f"{len(samples)} answered sample\\(s\\) of dataset "
                                          f"'{dataset}' here ask another question"):
        import_run(other, path)
    assert run_count(other) == 0


def _rewritten(path: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    with lzma.open(path, "rt", encoding="utf-8") as handle:
        body = json.load(handle)
    change(body)
    changed = path.with_name("changed.json.xz")
    with lzma.open(changed, "wt", encoding="utf-8") as handle:
        json.dump(body, handle)
    return changed


@pytest.mark.parametrize("change, where", [
    (lambda b: b["answers"][0]["verdicts"].append(5), "answers[0]: each entry must be an object"),
    (lambda b: b["run"].__setitem__("seed", "abc"), "run: a value this store cannot take"),
    (lambda b: b["answers"].append(dict(b["answers"][0])), "answers[6]: a value this store"),
    (lambda b: b["answers"][0].__setitem__("refusal", "yes"), "answers[0]: a value this"),
    (lambda b: b["llm_calls"].append(3), "llm_calls: each entry must be an object"),
    (lambda b: b["run"]["config"].__setitem__("bogus", 1), "run.config: run config: unknown"),
    (lambda b: b["answers"][0].__setitem__("raw", "Par\x00is"),  # PostgreSQL keeps no NUL
     "field 'answers[0].raw': a NUL character"),
    (lambda b: b["answers"][1]["verdicts"][0].__setitem__("details", {"claims": [{}] * 41}),
     "field answers[1].verdicts[0].details.claims holds 41 claims; a verdict has at most 40"),
])
def test_a_malformed_bundle_is_one_error_line_and_imports_nothing(exported, tmp_path, change,
                                                                  where):
    """Each was a traceback, or a database error naming no file."""
    path, dataset, samples = exported
    target = open_store(f"sqlite:///{tmp_path / 'target.db'}")
    import_samples(target, dataset, samples)
    bad = _rewritten(path, change)
    with pytest.raises(BundleError) as raised:
        import_run(target, bad)
    assert str(raised.value).startswith(f"{bad}: {where}") and "\n" not in str(raised.value)
    assert run_count(target) == 0


def test_a_run_s_failures_and_end_time_go_with_it(sqlite_store, tmp_path):
    """Lost before: an imported incomplete run listed no failure, and had no end time."""
    from ragshield.store.labels import sample_row_id
    from ragshield.store.runs import failures, list_runs, record_failure, set_run_status

    run_id = fill_synthetic_run(sqlite_store, 6, ["trivial"], seed=4)
    dataset = get_run(sqlite_store, run_id).dataset
    samples = [load_sample(sqlite_store, dataset, s.id)
               for s in list_samples(sqlite_store, dataset)]
    with sqlite_store.session() as session:
        failed_row = sample_row_id(session, dataset, samples[2].id)
    record_failure(sqlite_store, run_id, failed_row, "LLMError: server said 503")
    set_run_status(sqlite_store, run_id, "incomplete", finished=True)
    path = export_run(sqlite_store, run_id, tmp_path / "run.json.xz")

    target = open_store(f"sqlite:///{tmp_path / 'target.db'}")
    import_samples(target, dataset, samples)
    copy_id = import_run(target, path)
    [original] = [run for run in list_runs(sqlite_store) if run.id == run_id]
    [copy] = list_runs(target)
    assert copy.status == "incomplete" and copy.finished_at == original.finished_at
    assert failures(target, copy_id) == {samples[2].id: "LLMError: server said 503"}
