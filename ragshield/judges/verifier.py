"""A trained claim verifier (issue 56): the packaged MiniLM fine-tuned as a cross-encoder
(scripts/train_verifier.py) reads a claim with its question, against the windows of the
passages that share the most of its words (verifier_text.py), and gives P(supported).

It is kept as a delta over the packaged MiniLM (the weights training changed, in fp16: about
22 MB) beside its model card, whose SHA-256 of the delta is checked at load: a mismatch is an
error, not a silently different model. None ships: trained on claims (9,000 rows on 2
cores) it ranked held-out claims at AUROC 0.50 to 0.75, below the support judge; trained on
short answers against wrong spans of their own passage (NQ-open) it ranked NQ's held-out titles
at 0.79 but SQuAD 2.0's articles at chance (docs/QUALITY.md, "Trained claim verifier, held
out" and "Trained answer verifier, held out"). No judge reads it; short answers read where
they sit in the passages instead (answer_alignment.py).
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ragshield.errors import UserError
from ragshield.judges.verifier_text import (MAX_TOKENS, READ_WINDOWS, claim_side,
                                            closest_windows, windows)
from ragshield.types import Passage

CARD_FILE = "verifier.json"
DELTA_FILE = "delta.safetensors"
BATCH = 16


class VerifierError(UserError, ValueError):
    """A verifier that cannot be used: missing, or its weights do not match its card."""


def save_delta(model: Any, base: Path, path: Path) -> Path:
    """Write the weights of `model` that differ from the packaged model at `base` (the
    encoder layers and the new head; the embeddings stay frozen in training), in fp16."""
    from safetensors.torch import save_file

    from ragshield.judges.training import load_base

    _, untouched = load_base(base)
    before = untouched.state_dict()
    changed = {name: value.detach().to("cpu").half().contiguous()
               for name, value in model.state_dict().items()
               if name.startswith("classifier.") or name not in before
               or not bool((before[name] == value).all())}  # the head is new: always in
    save_file(changed, str(path))
    return path


@dataclass
class Verifier:
    """The loaded model, read by one thread at a time (torch's CPU threads are its own)."""

    tokenizer: Any
    model: Any
    threshold: float
    card: dict[str, Any]

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def read(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """P(supported) of each (claim side, window) pair."""
        import torch

        out: list[float] = []
        with self._lock, torch.no_grad():
            for first in range(0, len(pairs), BATCH):
                chunk = pairs[first:first + BATCH]
                encoded = self.tokenizer([a for a, _ in chunk], [b for _, b in chunk],
                                         padding=True, truncation="longest_first",
                                         max_length=MAX_TOKENS, return_tensors="pt")
                out += torch.sigmoid(self.model(**encoded).logits[:, 0]).tolist()
        return out

    def claim_scores(self, question: str | None, claims: Sequence[str],
                     passages: Sequence[Passage]) -> list[float]:
        """Each claim's score: the best of its reads against its closest windows."""
        cut = windows(passages)
        pairs, owners = [], []
        for number, claim in enumerate(claims):
            for window in closest_windows(claim, cut, READ_WINDOWS):
                pairs.append((claim_side(question, claim), window.text))
                owners.append(number)
        scores = [0.0] * len(claims)
        for owner, score in zip(owners, self.read(pairs)):
            scores[owner] = max(scores[owner], score)
        return scores


def load_verifier(folder: Path) -> Verifier:
    """The verifier in `folder` (its card and delta) over the packaged MiniLM."""
    from safetensors.torch import load_file

    from ragshield.judges.training import load_base
    from ragshield.retrieval.embeddings import packaged_embedding_path

    card_path, delta_path = folder / CARD_FILE, folder / DELTA_FILE
    if not card_path.is_file() or not delta_path.is_file():
        raise VerifierError(f"{folder}: no verifier here ({CARD_FILE} and {DELTA_FILE}); "
                            "train one with scripts/train_verifier.py")
    card = json.loads(card_path.read_text(encoding="utf-8"))
    found = hashlib.sha256(delta_path.read_bytes()).hexdigest()
    if found != card.get("delta_sha256"):
        raise VerifierError(f"{delta_path}: its SHA-256 {found[:12]}... is not the one its "
                            f"card records ({str(card.get('delta_sha256'))[:12]}...): the "
                            "weights changed since they were measured")
    tokenizer, model = load_base(packaged_embedding_path())
    delta = {name: value.float() for name, value in load_file(str(delta_path)).items()}
    # What the delta leaves out is the packaged model's own; its head is new, so it is in.
    missing, unexpected = model.load_state_dict(delta, strict=False)
    if unexpected or any(name.startswith("classifier.") for name in missing):
        raise VerifierError(f"{delta_path}: its weights do not fit the packaged MiniLM")
    model.eval()
    return Verifier(tokenizer, model, float(card["threshold"]), card)
