"""Shared pieces of the retrieval tests: a small real corpus and an encoder that records what
it was asked to embed. The real embedding model is the `embedder` fixture (tests/conftest.py),
with `recording_embedder` around it; the scripted LLM is tests/fakes.py's ScriptedLLM."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np

DOCUMENTS = [
    {"id": "eiffel", "title": "Eiffel Tower", "source": "wiki",
     "text": "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris. "
             "It was designed by the company of Gustave Eiffel and completed in 1889."},
    {"id": "everest", "title": "Mount Everest",
     "text": "Mount Everest is the highest mountain on Earth above sea level. It lies in the "
             "Mahalangur Himal sub-range of the Himalayas, on the border of Nepal and China."},
    {"id": "photosynthesis", "title": "Photosynthesis",
     "text": "Photosynthesis is how green plants use sunlight, water and carbon dioxide to make "
             "glucose, releasing oxygen as a by-product."},
    {"id": "python", "title": "Python",
     "text": "Python is a programming language created by Guido van Rossum and first released "
             "in 1991. Its design emphasises code readability."},
    {"id": "zx81", "title": "Sinclair ZX81",
     "text": "The Sinclair ZX81 was a home computer sold from 1981. Service manuals list its "
             "board under the part code QW7731."},
    {"id": "heart", "title": "Heart",
     "text": "The human heart pumps blood through the circulatory system and beats about one "
             "hundred thousand times a day."},
    {"id": "coffee", "title": "Coffee",
     "text": "Coffee is a drink brewed from roasted coffee beans, the seeds of berries of the "
             "Coffea plant. Coffee plants grow in tropical regions."},
    {"id": "apollo", "title": "Apollo 11",
     "text": "Apollo 11 was the spaceflight that first landed humans on the Moon, in July 1969. "
             "Neil Armstrong was the first to step onto the lunar surface."},
    {"id": "tea", "title": "Tea",
     "text": "Tea is a drink made by pouring hot water over cured leaves of the tea plant, "
             "grown in China, India and many tropical regions."},
    {"id": "volcano", "title": "Volcano",
     "text": "A volcano is a rupture in the crust of a planet through which lava, ash and gases "
             "escape from a magma chamber below the surface."},
]


def write_jsonl(path: Path, records: Sequence[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


class RecordingEncoder:
    """Wraps a sentence encoder and keeps every batch of texts it was given."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.batches: list[list[str]] = []
        self.max_seq_length = getattr(inner, "max_seq_length", None)

    def encode(self, sentences: list[str], **options: Any) -> np.ndarray:
        self.batches.append(list(sentences))
        return self.inner.encode(sentences, **options)

    @property
    def texts(self) -> list[str]:
        return [text for batch in self.batches for text in batch]
