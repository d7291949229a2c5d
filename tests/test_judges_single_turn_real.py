"""The single-turn and probability judges against real models: the embedded Qwen 0.5B on one
short sample (shapes and sane values, not the model's opinions) and the classifier NLI engine
on a tiny BERT built here from a config (random weights: the hub is out of reach)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from ragshield.answerers.context import shared_messages
from ragshield.judges.calibration import CalibrationJudge
from ragshield.judges.cot_hybrid import CoTHybridJudge
from ragshield.judges.intrinsic import IntrinsicJudge
from ragshield.judges.nli import ClassifierNLIJudge, LLMNLIJudge, NLIModelError, hypothesis
from ragshield.judges.p_true import PTrueJudge
from ragshield.judges.pre_answer import PreAnswerJudge
from ragshield.judges.priori import PrioriJudge
from ragshield.judges.support import SupportJudge
from ragshield.judges.token_prob import TokenProbJudge
from ragshield.types import Answer, Passage, Sample
from tests.fakes import ScriptedLLM

SAMPLE = Sample(
    id="paris",
    question="What is the capital of France?",
    passages=[Passage("Paris is the capital and largest city of France."),
              Passage("The Loire is the longest river in France.")],
    reference_answers=["Paris"],
)


@pytest.fixture(scope="module")
def base_answer(embedded_llm) -> Answer:
    """A plain answer without generation log-probs (token_prob then re-scores it)."""
    messages = shared_messages(SAMPLE, "Answer the question in as few words as possible.")
    completion = embedded_llm.chat(messages, max_tokens=16)
    return Answer(answerer="vanilla", text=completion.text.strip(), raw=completion.text,
                  messages=messages)


@pytest.mark.parametrize("judge", [
    IntrinsicJudge(), CoTHybridJudge(), PrioriJudge(), PreAnswerJudge(), PTrueJudge(),
    CalibrationJudge(), TokenProbJudge(), LLMNLIJudge(), SupportJudge(),
], ids=lambda judge: judge.name)
def test_judge_on_the_embedded_model(judge, embedded_llm, base_answer: Answer) -> None:
    verdict = judge.judge(SAMPLE, base_answer, embedded_llm)
    assert verdict.available and verdict.error is None, verdict.rationale
    assert isinstance(verdict.keep, bool) and verdict.rationale
    assert verdict.score is None or 0.0 <= verdict.score <= 1.0
    if verdict.parse_error is None and judge.name not in {"intrinsic", "cot_hybrid", "priori"}:
        assert verdict.score is not None  # a scored judge that read its reply has a score
    assert verdict.trace and all(call.purpose.startswith(judge.name) for call in verdict.trace)
    assert all(call.prompt_tokens > 0 or call.kind == "score" for call in verdict.trace)
    assert verdict.cost.completion_tokens > 0
    # Every single-turn prompt after the first reuses the cached passages.
    if verdict.trace[0].kind == "chat":
        assert verdict.trace[0].cached_prompt_tokens > 0


# -- classifier NLI engine on a tiny BERT --------------------------------------------------

WORDS = ("the answer to question is what capital of france paris city largest river loire "
         "longest in").split()
MAX_LENGTH = 64


def build_tiny_nli(folder: Path, id2label: dict[int, str]) -> Path:
    """A one-layer BERT classifier with random weights and a WordPiece tokenizer in which
    every test word is one token, saved like a hub model."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokens = specials + WORDS + [f"w{i}" for i in range(200)] + list('"?:.,')
    vocab = {token: i for i, token in enumerate(tokens)}
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
        sep_token="[SEP]", mask_token="[MASK]", model_max_length=MAX_LENGTH,
    ).save_pretrained(folder)
    config = BertConfig(
        vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=MAX_LENGTH, initializer_range=0.5,
        num_labels=len(id2label), id2label=id2label,
        label2id={label: i for i, label in id2label.items()},
    )
    BertForSequenceClassification(config).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny_nli(tmp_path_factory) -> Path:
    return build_tiny_nli(tmp_path_factory.mktemp("tiny_nli"),
                          {0: "ENTAILMENT", 1: "NEUTRAL", 2: "CONTRADICTION"})


LONG = " ".join(f"w{i}" for i in range(120))
NLI_SAMPLE = Sample(id="nli", question="what is the capital of france?",
                    passages=[Passage("paris is the capital of france."), Passage(LONG)])
NLI_ANSWER = Answer(answerer="vanilla", text="paris", raw="paris", messages=[])


def test_classifier_nli_windows_long_passages(tiny_nli: Path) -> None:
    judge = ClassifierNLIJudge(str(tiny_nli), device="cpu")
    assert judge.max_length == MAX_LENGTH and judge.entailment_index == 0
    llm = ScriptedLLM(capabilities=frozenset())
    verdict = judge.judge(NLI_SAMPLE, NLI_ANSWER, llm)
    assert verdict.available and verdict.error is None and not llm.seen  # no LLM used
    claim = hypothesis(NLI_SAMPLE.question, "paris")
    # Every word and character of the claim is one token here; 3 special tokens per pair.
    room = MAX_LENGTH - 3 - len(judge.tokenizer(claim, add_special_tokens=False)["input_ids"])
    spans = [w["words"] for w in verdict.details["windows"]]
    expected = [[0, 6]] + [[start, min(start + room, 120)]
                           for start in range(0, 120 - 20, room - 20)]
    assert spans == expected and len(spans) == 1 + math.ceil((120 - room) / (room - 20)) + 1
    for before, after in zip(spans[1:], spans[2:]):
        assert before[1] - after[0] == 20
    assert len(verdict.trace) == len(spans)
    for call in verdict.trace:
        assert call.kind == "classify" and call.messages[0]["content"].endswith(claim)
        assert call.prompt_tokens <= MAX_LENGTH


def test_classifier_nli_score_is_the_max_of_the_models_own_softmax(tiny_nli: Path) -> None:
    import torch

    judge = ClassifierNLIJudge(str(tiny_nli), device="cpu")
    verdict = judge.judge(NLI_SAMPLE, NLI_ANSWER, ScriptedLLM(capabilities=frozenset()))
    claim = hypothesis(NLI_SAMPLE.question, "paris")
    premises = []
    for window in verdict.details["windows"]:
        text = NLI_SAMPLE.passages[window["passage"]].text
        start, end = window["words"]
        premises.append(" ".join(text.split()[start:end]) if window["split"] else text)
    encoded = judge.tokenizer(premises, [claim] * len(premises), padding=True,
                              return_tensors="pt")
    with torch.no_grad():
        expected = torch.softmax(judge.model(**encoded).logits, dim=-1)[:, 0].tolist()
    got = [w["entailment"] for w in verdict.details["windows"]]
    assert got == pytest.approx(expected, abs=1e-5)
    assert len(set(round(p, 4) for p in expected)) > 1  # windows really differ
    assert verdict.score == pytest.approx(max(expected), abs=1e-5)
    assert verdict.keep is (verdict.score >= 0.5)
    best = verdict.details["best"]
    assert premises[got.index(max(got))] == best["text"]


def test_classifier_nli_batches_the_pairs(tiny_nli: Path) -> None:
    judge = ClassifierNLIJudge(str(tiny_nli), batch_size=4, device="cpu")
    sizes: list[int] = []
    forward = judge.model.forward

    def counting_forward(*args, **kwargs):
        sizes.append(len(kwargs["input_ids"]))
        return forward(*args, **kwargs)

    judge.model.forward = counting_forward
    verdict = judge.judge(NLI_SAMPLE, NLI_ANSWER, ScriptedLLM(capabilities=frozenset()))
    windows = len(verdict.details["windows"])
    assert sizes == [4] * (windows // 4) + ([windows % 4] if windows % 4 else [])


def test_classifier_nli_threshold_and_an_overlong_hypothesis(tiny_nli: Path) -> None:
    llm = ScriptedLLM(capabilities=frozenset())
    assert ClassifierNLIJudge(str(tiny_nli), threshold=0.0).judge(
        NLI_SAMPLE, NLI_ANSWER, llm).keep is True
    assert ClassifierNLIJudge(str(tiny_nli), threshold=1.0).judge(
        NLI_SAMPLE, NLI_ANSWER, llm).keep is False
    rambling = Answer(answerer="vanilla", text=" ".join(["paris"] * 80), raw="", messages=[])
    verdict = ClassifierNLIJudge(str(tiny_nli)).judge(NLI_SAMPLE, rambling, llm)
    assert verdict.keep is None and "hypothesis alone fills" in verdict.error


def test_classifier_nli_needs_an_entailment_label(tmp_path: Path) -> None:
    folder = build_tiny_nli(tmp_path / "no_entailment", {0: "LABEL_0", 1: "LABEL_1"})
    with pytest.raises(NLIModelError, match="entailment label"):
        ClassifierNLIJudge(str(folder))


def test_classifier_nli_finds_a_lower_case_entailment_label(tmp_path: Path) -> None:
    folder = build_tiny_nli(tmp_path / "lower",
                            {0: "contradiction", 1: "entailment", 2: "neutral"})
    assert ClassifierNLIJudge(str(folder)).entailment_index == 1
