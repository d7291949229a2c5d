"""The Demo's example questions: stored demo samples that show, with the Demo's default
judges and rule, a kept right answer, a withheld answer to a question the passages cannot
answer, and an answer that added noise (random corpus chunks) flips from kept to withheld.
scripts/make_demo_run.py finds them on the shipped demo run and asks each once, so their
model calls ship in the call cache; the Demo reads them from ragshield/assets/demo/examples.json."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable

from ragshield.config import Settings
from ragshield.datasets.demo import DEMO_DATASET, DEMO_EXAMPLES
from ragshield.decision_rule import rule_judges
from ragshield.metrics.correctness import is_correct
from ragshield.services.questions.ask_types import AskRequest
from ragshield.services.questions.asking import OpenedModels, ask
from ragshield.services.questions.settlement import defaults
from ragshield.store.database import Store
from ragshield.store.runs import iter_main_answers
from ragshield.store.samples import load_sample
from ragshield.types import KEEP, decision_word

NOISE = 3  # random chunks added for the noise example
MAX_NOISE_TRIES = 16  # kept answers asked again with noise before giving up on that example


@dataclass(frozen=True)
class DemoExample:
    title: str  # the button's words
    sample_id: str
    question: str
    noise: int = 0
    shows: str = ""  # one sentence: what the example shows


def demo_request(sample_id: str, settings: Settings, noise: int = 0) -> AskRequest:
    """A stored demo sample asked as the Demo's form asks it by default."""
    found = defaults(settings)
    return AskRequest(sample_id=sample_id, dataset=DEMO_DATASET, noise=noise,
                      judges=found.judges, rule=found.rule.rule, keep_record=False)


def _decision(store: Store, settings: Settings, models: OpenedModels, sample_id: str,
              noise: int = 0) -> tuple[str | None, str, float]:
    """(decision word, None when undecided; answer text; the deciding judge's score, 1 when
    it has none) of the sample asked with the Demo's defaults."""
    request = demo_request(sample_id, settings, noise)
    result = ask(store, settings, models, request)
    reads = rule_judges(result.prepared.rule, request.judges or ())
    scores = [v.score for v in result.judged.verdicts if v.judge in reads and v.score is not None]
    return (decision_word(result.judged.decision), result.judged.answer.text or "",
            min(scores, default=1.0))


def find_examples(store: Store, settings: Settings, run_id: int) -> list[DemoExample]:
    """The examples, found among the run's samples in order (each is asked: the run's calls
    answer it from the cache; only the noise tries call the model). Noise is tried on the
    kept answers the deciding judge was least sure of first: the ones it can tip over."""
    models = OpenedModels(settings, store)
    kept: list[tuple[float, str]] = []
    right_ones: list[tuple[int, str]] = []  # (answer length, id) of kept right answers
    examples: dict[str, DemoExample] = {}
    for saved in iter_main_answers(store, run_id):
        sample = load_sample(store, DEMO_DATASET, saved.sample.id)
        word, text, score = _decision(store, settings, models, sample.id)
        right = bool(sample.reference_answers) and is_correct(text, sample.reference_answers)
        if word == KEEP:
            kept.append((score, sample.id))
        if word == KEEP and right:
            right_ones.append((len(text), sample.id))
        elif word != KEEP and sample.answerable is False:
            examples.setdefault("withheld", DemoExample(
                "A withheld answer", sample.id, sample.question,
                shows="The passages do not answer the question; the judges withhold the "
                      "model's guess."))
    if right_ones:  # the shortest right answer reads best on a screen
        sample = load_sample(store, DEMO_DATASET, min(right_ones)[1])
        examples["kept"] = DemoExample(
            "A kept answer", sample.id, sample.question,
            shows="The passages answer the question and the judges keep the answer.")
    for _, sample_id in sorted(kept)[:MAX_NOISE_TRIES]:
        word, _, _ = _decision(store, settings, models, sample_id, NOISE)
        if word != KEEP:
            sample = load_sample(store, DEMO_DATASET, sample_id)
            examples["noise"] = DemoExample(
                "Noise flips it", sample_id, sample.question, NOISE,
                shows=f"Kept from its own passages; with {NOISE} random chunks added, the "
                      "judges no longer keep it.")
            break
    return [examples[key] for key in ("kept", "withheld", "noise") if key in examples]


def write_examples(examples: Iterable[DemoExample], path: Path = DEMO_EXAMPLES) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([asdict(e) for e in examples], indent=1, ensure_ascii=False)
                    + "\n", encoding="utf-8")


def read_examples(path: Path = DEMO_EXAMPLES) -> list[DemoExample]:
    """The shipped examples; none when the file is missing. A damaged file is an error that
    names it."""
    if not path.is_file():
        return []
    try:
        return [DemoExample(**item) for item in json.loads(path.read_text(encoding="utf-8"))]
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{path}: not a list of demo examples ({exc})") from None
