"""The trained claim verifier's parts (judges/verifier.py, verifier_text.py): what it reads of
the passages and the claim, its weights checked against its card, and, on the packaged
MiniLM for real, a delta that reads back as the model it was cut from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragshield.judges.verifier import (CARD_FILE, DELTA_FILE, VerifierError, load_verifier,
                                       save_delta)
from ragshield.judges.verifier_text import (STRIDE_WORDS, WINDOW_WORDS, claim_side,
                                            closest_windows, windows)
from ragshield.types import Passage
from tests.conftest import lane

NORMANS = Passage(title="Normans", text=(
    "The Normans (Norman: Nourmands; French: Normands; Latin: Normanni) were the people who in "
    "the 10th and 11th centuries gave their name to Normandy, a region in France. They were "
    "descended from Norse raiders and pirates from Denmark, Iceland and Norway who, under "
    "their leader Rollo, agreed to swear fealty to King Charles III of West Francia."))
LUSIGNAN = Passage(title="Normans", text=(
    "The Norman dynasty had a major political, cultural and military impact on medieval "
    "Europe. In 1185 Guy de Lusignan, King of Jerusalem, married into the dynasty."))
QUESTION = "Who gave their name to Normandy?"


def test_long_passages_are_cut_into_overlapping_windows_that_keep_their_title() -> None:
    words = [f"w{i}" for i in range(WINDOW_WORDS + 2 * STRIDE_WORDS)]
    cut = windows([Passage(text=" ".join(words), title="Page"), Passage(text="Short one.")])
    assert [w.passage for w in cut] == [0, 0, 0, 1]
    assert all(w.text.startswith("Page: ") for w in cut[:3]) and cut[3].text == "Short one."
    firsts = [w.text.split()[1] for w in cut[:3]]
    assert firsts == ["w0", f"w{STRIDE_WORDS}", f"w{2 * STRIDE_WORDS}"]
    assert all(len(w.text.split()) <= WINDOW_WORDS + 1 for w in cut)  # + the title
    # every word is in some window
    assert set(words) <= {word for w in cut for word in w.text.split()}


def test_a_claim_is_read_against_the_windows_that_share_its_words() -> None:
    cut = windows([LUSIGNAN, NORMANS])
    best = closest_windows("Rollo led the Norse raiders", cut, 1)
    assert best[0].passage == 1
    assert [w.passage for w in closest_windows("nothing in common here", cut, 2)] == [0, 1]


def test_the_claim_side_carries_the_question_when_there_is_one() -> None:
    assert claim_side(QUESTION, "Rollo.") == f"Question: {QUESTION}\nClaim: Rollo."
    assert claim_side(None, "Paris is in France.") == "Claim: Paris is in France."
    assert claim_side("  ", "x") == "Claim: x"


def test_weights_that_do_not_match_the_card_are_refused(tmp_path: Path) -> None:
    (tmp_path / CARD_FILE).write_text(json.dumps({"delta_sha256": "0" * 64, "threshold": 0.5}))
    (tmp_path / DELTA_FILE).write_bytes(b"not the weights")
    with pytest.raises(VerifierError, match="is not the one its card records"):
        load_verifier(tmp_path)
    with pytest.raises(VerifierError, match="no verifier here"):
        load_verifier(tmp_path / "absent")


@pytest.fixture(scope="module")
@lane("model")
def packaged_minilm() -> Path:
    from ragshield.retrieval.embeddings import packaged_embedding_path

    return packaged_embedding_path()


def test_a_delta_over_the_packaged_minilm_reads_as_the_model_it_was_cut_from(
        packaged_minilm: Path, tmp_path: Path) -> None:
    """The weights written are those that differ from the packaged model (its embeddings
    are not), and read back over it they give the model's own scores, to fp16's rounding."""
    import hashlib

    import torch

    from ragshield.judges.training import load_base

    torch.manual_seed(0)
    _, model = load_base(packaged_minilm)  # its head is new: it differs from the package
    with torch.no_grad():
        model.base_model.encoder.layer[0].output.dense.bias.add_(0.01)  # as training would
    delta = save_delta(model, packaged_minilm, tmp_path / DELTA_FILE)
    from safetensors.torch import load_file

    names = set(load_file(str(delta)))
    assert "classifier.weight" in names and not any("embeddings" in n for n in names)
    (tmp_path / CARD_FILE).write_text(json.dumps({
        "delta_sha256": hashlib.sha256(delta.read_bytes()).hexdigest(), "threshold": 0.5}))
    verifier = load_verifier(tmp_path)
    pairs = [(claim_side(QUESTION, "The Normans."), NORMANS.text),
             (claim_side(QUESTION, "Guy de Lusignan."), LUSIGNAN.text)]
    model.eval()
    encoded = verifier.tokenizer([a for a, _ in pairs], [b for _, b in pairs], padding=True,
                                 truncation="longest_first", max_length=160,
                                 return_tensors="pt")
    with torch.no_grad():
        expected = torch.sigmoid(model(**encoded).logits[:, 0]).tolist()
    assert verifier.read(pairs) == pytest.approx(expected, abs=2e-3)
    scores = verifier.claim_scores(QUESTION, ["The Normans.", "Guy de Lusignan."],
                                   [NORMANS, LUSIGNAN])
    assert len(scores) == 2 and all(0 <= score <= 1 for score in scores)
