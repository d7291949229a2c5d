"""The yes/no judges' thresholds follow the model they read from (judges/reader_thresholds.py)."""

from __future__ import annotations

from dataclasses import replace

from ragshield.judges.reader_thresholds import THRESHOLDS, reader_options
from ragshield.judges.registry import make_judges
from ragshield.llm.packaged_models import DEFAULT_MODEL, LARGER_MODEL
from ragshield.pipeline import _SampleWorker
from ragshield.run_config import RunConfig
from ragshield.services.asking import AskRequest, prepare
from ragshield.types import Passage


def _thresholds(judges) -> dict[str, float]:
    return {judge.name: judge.threshold for judge in judges if hasattr(judge, "threshold")}


def test_the_larger_reader_gets_its_measured_thresholds_and_others_the_judges_own(settings):
    larger = _thresholds(make_judges("pre_answer,p_true", settings, reader_options(LARGER_MODEL)))
    assert larger == THRESHOLDS[LARGER_MODEL] and all(t > 0.5 for t in larger.values())
    for reader in (None, DEFAULT_MODEL, "/models/own.gguf"):
        own = _thresholds(make_judges("pre_answer,p_true", settings, reader_options(reader)))
        assert own == {"pre_answer": 0.5, "p_true": 0.5}


def test_an_ask_read_by_the_larger_model_decides_at_its_thresholds(store, settings):
    """The same question asked with the 1.5B reader and without: prepare() builds the judges
    (no model is called) with the thresholds of the model they will read from."""
    request = AskRequest(question="Who?", passages=(Passage("Text."),),
                         judges=("pre_answer", "p_true"), keep_record=False)
    default = prepare(store, settings, request)
    larger = prepare(store, settings, replace(request, judge_model=LARGER_MODEL))
    assert _thresholds(default.judges) == {"pre_answer": 0.5, "p_true": 0.5}
    assert _thresholds(larger.judges) == THRESHOLDS[LARGER_MODEL]


def test_a_run_read_by_the_larger_model_decides_at_its_thresholds(settings):
    config = RunConfig(dataset="toy", judges=["pre_answer", "p_true"], judge_model=LARGER_MODEL)
    worker = _SampleWorker(config, settings, models=None)  # type: ignore[arg-type]  # unused
    assert _thresholds(worker.judges) == THRESHOLDS[LARGER_MODEL]
    plain = _SampleWorker(replace(config, judge_model=None), settings, models=None)  # type: ignore[arg-type]
    assert _thresholds(plain.judges) == {"pre_answer": 0.5, "p_true": 0.5}
