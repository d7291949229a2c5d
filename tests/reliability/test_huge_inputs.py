"""Huge inputs: a 5 MB passage (English, digits, Chinese, emoji, one-letter words) is cut to
the model's context window in real tokens, with the question kept whole, for every answerer
and judge; and a 100,000-line dataset file is imported with bounded memory (peak RSS of the
import process measured against a 1,000-line import)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Callable

import pytest

from ragshield.answerers.context import TRUNCATION_MARK
from ragshield.answerers.registry import make_answerer
from ragshield.config import Settings
from ragshield.datasets import load_dataset
from ragshield.judges.builtin import JUDGES
from ragshield.judges.registry import make_judges
from ragshield.judging import judge_sample, rule_of
from ragshield.pipeline import RunModels, execute_run, start_run
from ragshield.run_config import RunConfig
from ragshield.store.runs import answer_records
from ragshield.store.sample_import import import_samples
from ragshield.types import Passage, Sample
from tests.fakes import ScriptedLLM, ScriptedReply
from tests.reliability.scale import sized
from tests.conftest import lane
from tests.cli_support import ROOT

MB = 5_000_000
QUESTION = "Which city is named in the last sentence of the second passage?"
PASSAGES = {
    "English": "The expedition walked north across the ice for many days. ",
    "digits": "3141592653 5897932384 6264338327 9502884197 ",
    "Chinese": "东京是日本的首都，也是世界上人口最多的都市圈之一。",
    "emoji": "🙂🚀🎉👍🔥",
    "one-letter words": "a b c d e f g h i j ",
}
# nli_llm reads a passage whole, window by window: a 5 MB one means hundreds of calls, so it
# is left out here (its windows use the same estimate as the shared prefix).
HUGE_JUDGES = ",".join(name for name in JUDGES if name != "nli_llm")


def huge_sample(text: str) -> Sample:
    return Sample(id="huge", question=QUESTION, reference_answers=["Lyon"], passages=[
        Passage((text * (MB // len(text) + 1))[:MB]), Passage("Lyon is a city in France.")])


def reply(_messages: object) -> ScriptedReply:
    return ScriptedReply("Answer: Lyon\nEvidence: ## Passage-1 ##", top={"Yes": -0.2, "No": -1.7})


@pytest.mark.scenario("Huge inputs: a 5 MB passage and a 100k-line dataset file")
def test_a_5mb_passage_fits_the_window_with_the_question_whole(embedded_llm, scenario):
    judges = make_judges(HUGE_JUDGES, Settings())
    n_ctx = embedded_llm._llama.n_ctx()
    for kind, text in PASSAGES.items():
        llm = ScriptedLLM(respond=reply)
        judge_sample(huge_sample(text), llm, make_answerer("evidence"), judges, rule=rule_of("all"))
        sizes, kept, cut = [], True, True
        for messages, params in zip(llm.seen, llm.params):
            prompt = "\n".join(m["content"] for m in messages)
            sizes.append(len(embedded_llm._prompt_tokens(messages)) + params["max_tokens"])
            kept &= QUESTION in prompt
            cut &= "Passage-0" not in prompt or TRUNCATION_MARK in prompt
        scenario.figure(f"{kind}: largest prompt + reply (tokens of {n_ctx})", max(sizes))
        scenario.check(f"{kind}: every call fits the {n_ctx}-token window in real tokens",
                       max(sizes) <= n_ctx, sizes)
        scenario.check(f"{kind}: the question is in every prompt, whole", kept)
        scenario.check(f"{kind}: the passage is cut, with a mark", cut)


@pytest.mark.scenario("Huge inputs: a 5 MB passage and a 100k-line dataset file")
def test_a_run_on_a_5mb_passage_stores_it_whole(store, settings, scenario):
    import_samples(store, "huge", [huge_sample(PASSAGES["English"])])
    run_id = start_run(store, RunConfig(dataset="huge", judges=["trivial", "p_true"],
                                        rule="p_true"))
    outcome = execute_run(store, run_id, settings, progress=False,
                          models=RunModels(main=ScriptedLLM(respond=reply)))
    scenario.check("the run completes", outcome.status == "done", outcome)
    [answer] = answer_records(store, run_id)
    scenario.check("the stored passage is the whole 5 MB", len(answer["passages"][0]["text"]) == MB)


MEASURE = """
import resource, sys
sys.argv = ["ragshield", *sys.argv[1:]]
from ragshield.cli import main
try:
    main()
finally:
    print("PEAK_RSS_KB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""


def write_dataset(path: Path, lines: int) -> None:
    with path.open("w") as out:
        for i in range(lines):
            out.write(json.dumps({
                "id": f"q{i}", "question": f"What is the capital of country number {i}?",
                "passages": [{"title": f"Country {i}", "text": f"Country number {i} is a "
                              f"made-up place whose capital is City{i}; it has rivers, hills "
                              f"and about {i * 7} inhabitants."}],
                "reference_answers": [f"City{i}"], "answerable": i % 2 == 0}) + "\n")


def import_peak_mb(path: Path, db: Path) -> tuple[float, dict]:
    """Peak RSS (MB) of `python -m ragshield datasets import` of `path`, and its output."""
    result = subprocess.run(
        [sys.executable, "-c", MEASURE, "datasets", "import", "big", str(path), "--json"],
        cwd=ROOT, env={**os.environ, "RAGSHIELD_DATABASE_URL": f"sqlite:///{db}"},
        capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr
    peak = int(result.stderr.rsplit("PEAK_RSS_KB", 1)[1].split()[0])
    return peak / 1024, json.loads(result.stdout)


@pytest.fixture
@lane("slow")
def measured_import() -> Callable[[Path, Path], tuple[float, dict]]:
    """`import_peak_mb`: an import process measured on a file of 100k lines or more (a
    minute of work and hundreds of MB written)."""
    return import_peak_mb


@pytest.mark.scenario("Huge inputs: a 5 MB passage and a 100k-line dataset file")
def test_a_100k_line_file_is_imported_with_bounded_memory(tmp_path, scenario, measured_import):
    lines = sized(100_000, 1_000_000)
    small, big = tmp_path / "small.jsonl", tmp_path / "big.jsonl"
    write_dataset(small, 1_000)
    write_dataset(big, lines)
    baseline, _ = measured_import(small, tmp_path / "small.db")
    peak, result = measured_import(big, tmp_path / "big.db")
    # What streaming saves: the file's first 100k samples held as objects at once.
    tracemalloc.start()
    held = list(load_dataset(big, limit=100_000))
    held_mb = tracemalloc.get_traced_memory()[0] / 1e6 * lines / len(held)
    tracemalloc.stop()
    del held
    growth = peak - baseline
    scenario.figure("lines", lines)
    scenario.figure("file MB", round(big.stat().st_size / 1e6, 1))
    scenario.figure("peak RSS growth over a 1k-line import (MB)", round(growth, 1))
    scenario.figure("memory to hold every sample at once (MB)", round(held_mb, 1))
    scenario.check("every line is imported", result["added"] == lines, result)
    scenario.check("the import's peak memory grows by less than half of what holding the "
                   "samples would take, and under 500 MB", growth < min(held_mb / 2, 500),
                   (growth, held_mb))
