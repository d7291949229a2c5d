"""Answerers (METHODS 4.1): prompt shape, the shared prefix, parsing into an Answer, refusals,
the registry; and a smoke test of each with the real embedded model."""

from __future__ import annotations

from typing import Any

import pytest

from ragshield.answerers.base import Answerer
from ragshield.answerers.context import (
    RESERVED_TOKENS,
    SYSTEM_TEXT,
    TRUNCATION_MARK,
    PromptOptions,
    estimated_tokens,
    shared_messages,
)
from ragshield.answerers.crag import CragAnswerer
from ragshield.answerers.evidence import EvidenceAnswerer
from ragshield.answerers.instructrag import DEFAULT_EXAMPLES, FewShotExample, InstructRagAnswerer
from ragshield.answerers.norag import NoRagAnswerer
from ragshield.answerers.prompted import PromptedAnswerer
from ragshield.answerers.registry import ANSWERERS, make_answerer
from ragshield.answerers.vanilla import VanillaAnswerer
from ragshield.types import Passage, Sample
from tests.fakes import ScriptedLLM


def make_sample(**changes: Any) -> Sample:
    fields: dict[str, Any] = dict(
        id="q1",
        question="What is the capital of France?",
        passages=[
            Passage("Lyon is a city in France known for its cuisine."),
            Passage("Paris is the capital and largest city of France.", title="Paris"),
            Passage("The Seine flows through Paris."),
        ],
        reference_answers=["Paris"],
        meta={"query_time": "03/05/2024, 10:15:00 PT"},
    )
    fields.update(changes)
    return Sample(**fields)


# Every registered answerer and the CRAG variants, built as a run configuration would.
CONFIGS = [
    ("vanilla", {}),
    ("evidence", {}),
    ("instructrag", {}),
    ("norag", {}),
    ("crag", {}),
    ("crag", {"cot": True}),
    ("crag", {"own_knowledge": True}),
    ("crag", {"cot": True, "own_knowledge": True}),
]
CONFIG_IDS = [name + "".join(f"-{k}" for k in options) for name, options in CONFIGS]
SHARING = [c for c in CONFIGS if c[0] != "norag"]
SHARING_IDS = [i for i in CONFIG_IDS if not i.startswith("norag")]


def reply_for(answerer: Answerer, answer: str) -> str:
    """A well-formed reply in the shape the answerer asks for."""
    if isinstance(answerer, EvidenceAnswerer):
        return f"Answer: {answer}\nEvidence: ## Passage-1 ##"
    if isinstance(answerer, InstructRagAnswerer):
        return f"Passage-1 says so.\nResponse: {answer}"
    if isinstance(answerer, CragAnswerer) and answerer.cot:
        return f"Thought: Passage-1 says so.\nFinal Answer: {answer}"
    return answer


def shared_prefix(sample: Sample) -> str:
    """The user turn's common part: passages and question, before any instructions."""
    content = shared_messages(sample, "INSTRUCTIONS")[1]["content"]
    return content[: content.index("INSTRUCTIONS")]


# -- prompt shape -------------------------------------------------------------------------

@pytest.mark.parametrize("name, options", SHARING, ids=SHARING_IDS)
def test_prompt_is_the_shared_prefix_then_instructions(name: str, options: dict) -> None:
    answerer = make_answerer(name, **options)
    sample = make_sample()
    llm = ScriptedLLM([reply_for(answerer, "Paris")])
    answer = answerer.answer(sample, llm)

    messages = llm.seen[0]
    assert messages == shared_messages(sample, answerer.instructions(sample))
    assert messages[0] == {"role": "system", "content": SYSTEM_TEXT}
    assert messages[1]["content"].startswith(shared_prefix(sample))
    assert answer.messages == messages
    assert answerer.shares_prefix


@pytest.mark.parametrize("name, options", SHARING, ids=SHARING_IDS)
def test_every_answerer_sends_the_same_prefix_as_vanilla(
    name: str, options: dict
) -> None:
    """Two answerers on the same sample send the same prefix, character for character."""
    sample = make_sample()
    vanilla = shared_messages(sample, VanillaAnswerer().instructions(sample))
    other = make_answerer(name, **options).messages(sample)
    prefix = shared_prefix(sample)
    assert other[0] == vanilla[0]
    assert other[1]["content"][: len(prefix)] == vanilla[1]["content"][: len(prefix)]
    assert "Paris is the capital" not in other[1]["content"][len(prefix):]


@pytest.mark.parametrize("name, options", CONFIGS, ids=CONFIG_IDS)
def test_answer_fields_and_trace(name: str, options: dict) -> None:
    answerer = make_answerer(name, **options)
    llm = ScriptedLLM([reply_for(answerer, "Paris")])
    answer = answerer.answer(make_sample(), llm)

    assert answer.answerer == name
    assert answer.text == "Paris"
    assert answer.raw == reply_for(answerer, "Paris")
    assert not answer.refusal
    assert answer.parse_error is None
    assert answer.conversation[-1] == {"role": "assistant", "content": answer.raw}
    [call] = answer.calls
    assert call.purpose == f"{name} answer"
    assert call.output == answer.raw
    assert call.parsed["answer"] == "Paris"
    assert call.parse_error is None
    assert call.prompt_tokens > 0


@pytest.mark.parametrize("name, options", CONFIGS, ids=CONFIG_IDS)
def test_reply_budget(name: str, options: dict) -> None:
    answerer = make_answerer(name, **options)
    llm = ScriptedLLM([reply_for(answerer, "Paris")])
    answerer.answer(make_sample(), llm)
    reasons_first = name == "instructrag" or options.get("cot", False)
    assert llm.params[0]["max_tokens"] == (96 if reasons_first else 64)


def test_norag_has_no_passages_but_the_same_system_text() -> None:
    answerer = NoRagAnswerer()
    sample = make_sample()
    llm = ScriptedLLM(["Paris"])
    answer = answerer.answer(sample, llm)

    system, user = llm.seen[0]
    assert system == {"role": "system", "content": SYSTEM_TEXT}
    assert sample.question in user["content"]
    assert "Passage" not in user["content"]
    assert all(p.text not in user["content"] for p in sample.passages)
    assert not answerer.shares_prefix
    assert answer.text == "Paris"


def test_norag_never_cites_passages_it_did_not_show() -> None:
    answer = NoRagAnswerer().answer(make_sample(), ScriptedLLM(["Paris (Passage-1)"]))
    assert answer.text == "Paris"
    assert answer.evidence == []
    assert "out of range: 1 (there are 0 passages)" in answer.parse_error


# -- refusals -----------------------------------------------------------------------------

@pytest.mark.parametrize("refusal", [
    "DONT_KNOW", "NOT_KNOW", "Dont know.", "I don't know", "__DONT_KNOW__", "I don\u2019t know.",
    "Unknown.", "The context does not mention it.", "invalid question", "",
])
@pytest.mark.parametrize("name, options", CONFIGS, ids=CONFIG_IDS)
def test_refusals_are_detected_in_every_answerer(name: str, options: dict, refusal: str) -> None:
    answerer = make_answerer(name, **options)
    answer = answerer.answer(make_sample(), ScriptedLLM([reply_for(answerer, refusal)]))
    assert answer.refusal


@pytest.mark.parametrize("text", ["Unknown Pleasures", "No, it was built in 1889.", "Na"])
def test_answers_that_look_like_refusals_are_not(text: str) -> None:
    answer = VanillaAnswerer().answer(make_sample(), ScriptedLLM([text]))
    assert answer.text == text
    assert not answer.refusal


# -- evidence -----------------------------------------------------------------------------

def test_evidence_prompt_asks_for_labels_or_internal_knowledge() -> None:
    instructions = EvidenceAnswerer().instructions(make_sample())
    assert "Evidence: ##" in instructions
    assert "internal knowledge" in instructions


@pytest.mark.parametrize("raw, text, evidence, internal, error", [
    ("Answer: Paris\nEvidence: ## Passage-1, Passage-2 ##", "Paris", [1, 2], False, None),
    ("Paris [Passage 1]", "Paris", [1], False, None),
    ("Answer: Paris\nEvidence: passages 0 and 2", "Paris", [0, 2], False, None),
    ("Answer: Rome\nEvidence: ## internal knowledge ##", "Rome", [], True, None),
    ("Answer: Paris\nEvidence: ## Passage-1, Passage-9 ##", "Paris", [1], False, "out of range: 9"),
    ("Answer: Paris", "Paris", [], False, "no passage ids"),
    ("Evidence: ## Passage-1 ##", "", [1], False, "empty answer"),
])
def test_evidence_answerer_reads_cited_passages(
    raw: str, text: str, evidence: list[int], internal: bool, error: str | None
) -> None:
    answer = EvidenceAnswerer().answer(make_sample(), ScriptedLLM([raw]))
    assert (answer.text, answer.evidence, answer.cites_internal_knowledge) == (
        text, evidence, internal)
    assert answer.raw == raw
    if error is None:
        assert answer.parse_error is None
    else:
        assert error in answer.parse_error
        assert answer.calls[0].parse_error == answer.parse_error


# -- InstructRAG ----------------------------------------------------------------------------

def test_instructrag_default_examples_are_in_the_prompt() -> None:
    instructions = InstructRagAnswerer().instructions(make_sample())
    assert len(DEFAULT_EXAMPLES) == 2
    for example in DEFAULT_EXAMPLES:
        assert example.question in instructions
        assert f"Response: {example.answer}" in instructions
    assert "own knowledge" in instructions


def test_instructrag_takes_examples_per_dataset_as_objects_or_mappings() -> None:
    custom = InstructRagAnswerer(examples=[
        FewShotExample("Which gene causes cystic fibrosis?", "Passage-0 names CFTR.", "CFTR"),
        {"question": "What does BRCA1 repair?", "rationale": "Passage-2 says so.",
         "answer": "double-strand breaks"},
    ])
    instructions = custom.instructions(make_sample())
    assert "Which gene causes cystic fibrosis?" in instructions
    assert "Response: double-strand breaks" in instructions
    assert DEFAULT_EXAMPLES[0].question not in instructions


def test_instructrag_without_examples() -> None:
    instructions = InstructRagAnswerer(examples=[]).instructions(make_sample())
    assert "Example" not in instructions
    assert "Response:" in instructions


@pytest.mark.parametrize("bad", [{"question": "q", "answer": "a"}, "just a string", None])
def test_instructrag_rejects_malformed_examples(bad: Any) -> None:
    with pytest.raises(ValueError, match="question, rationale and answer"):
        InstructRagAnswerer(examples=[bad])


def test_instructrag_without_response_line_is_flagged() -> None:
    raw = "Passage-1 says that Paris is the capital. So it is Paris."
    answer = InstructRagAnswerer().answer(make_sample(), ScriptedLLM([raw]))
    assert answer.text == "So it is Paris."
    assert answer.evidence == [1]
    assert "no 'Response:' line" in answer.parse_error
    assert answer.raw == raw


def test_instructrag_falling_back_on_own_knowledge() -> None:
    raw = "The passages do not mention it. From my own knowledge: Paris.\nResponse: Paris"
    answer = InstructRagAnswerer().answer(make_sample(), ScriptedLLM([raw]))
    assert answer.text == "Paris"
    assert answer.cites_internal_knowledge


# -- CRAG ---------------------------------------------------------------------------------

def test_crag_prompt_variants() -> None:
    sample = make_sample()
    plain = CragAnswerer().instructions(sample)
    assert "03/05/2024, 10:15:00 PT" in plain
    assert "invalid question" in plain and "I don't know" in plain
    assert "Use only the passages" in plain
    assert "Thought:" not in plain and "Final Answer:" not in plain
    assert CragAnswerer().expected_prefix is None

    cot = CragAnswerer(cot=True)
    assert "Thought:" in cot.instructions(sample) and "Final Answer:" in cot.instructions(sample)
    assert cot.expected_prefix == "Final Answer"

    own = CragAnswerer(own_knowledge=True).instructions(sample)
    assert "your own knowledge" in own
    assert "Use only the passages" not in own


def test_crag_without_query_time() -> None:
    instructions = CragAnswerer().instructions(make_sample(meta={}))
    assert "asked at" not in instructions


def test_crag_false_premise_and_unsure() -> None:
    llm = ScriptedLLM(["Thought: Paris has no sea port.\nFinal Answer: Invalid question.",
                       "Thought: not in the passages.\nFinal Answer: I don't know"])
    crag = CragAnswerer(cot=True)
    invalid = crag.answer(make_sample(), llm)
    unsure = crag.answer(make_sample(), llm)
    assert invalid.text == "Invalid question." and invalid.refusal
    assert unsure.text == "I don't know" and unsure.refusal


def test_crag_cot_without_final_answer_is_flagged() -> None:
    answer = CragAnswerer(cot=True).answer(make_sample(), ScriptedLLM(["Thought: It is Paris."]))
    assert answer.text == "It is Paris."
    assert "no 'Final Answer:' line" in answer.parse_error


# -- hard samples -------------------------------------------------------------------------

@pytest.mark.parametrize("name, options", CONFIGS, ids=CONFIG_IDS)
def test_empty_passage_list(name: str, options: dict) -> None:
    answerer = make_answerer(name, **options)
    sample = make_sample(passages=[])
    llm = ScriptedLLM([reply_for(answerer, "Paris")])
    answer = answerer.answer(sample, llm)
    user = llm.seen[0][1]["content"]
    assert sample.question in user
    if answerer.shares_prefix:
        assert "(no passages were retrieved)" in user
    assert answer.text == "Paris"
    assert answer.evidence == []  # "Passage-1" in the reply points at nothing


@pytest.mark.parametrize("name, options", SHARING, ids=SHARING_IDS)
def test_very_long_passage_is_truncated_never_the_question(name: str, options: dict) -> None:
    question = "In which year did the expedition described in the long report reach the pole? " * 3
    long_text = "The expedition walked north across the ice for many days. " * 2000  # ~118k chars
    sample = make_sample(question=question, passages=[Passage(long_text), Passage("Short.")])
    answerer = make_answerer(name, **options)
    llm = ScriptedLLM([reply_for(answerer, "1909")])
    answer = answerer.answer(sample, llm)
    user = llm.seen[0][1]["content"]
    assert question in user
    assert TRUNCATION_MARK in user
    assert long_text not in user
    assert "Passage-1: Short." in user
    assert len(user) < 4096 * 3.5  # fits the default window (about 3.5 characters a token)
    assert answer.text == "1909"


@pytest.mark.parametrize("unit", ["3141592653 ", "东京是日本的首都。", "🙂🚀", "a b c "])
def test_text_denser_in_tokens_than_english_is_cut_shorter(unit: str) -> None:
    """Digits, Chinese, emoji and one-letter words take about a token a character, not one
    per 3.5: their passages are cut so that the prompt still fits the window."""
    english = make_sample(passages=[Passage("The expedition walked north. " * 20000)])
    dense = make_sample(passages=[Passage(unit * (600000 // len(unit)))])
    cut = {name: VanillaAnswerer().messages(sample)[1]["content"]
           for name, sample in (("english", english), ("dense", dense))}
    assert len(cut["dense"]) < len(cut["english"]) / 1.8
    assert estimated_tokens(cut["dense"]) < 4096 - RESERVED_TOKENS + 200
    assert dense.question in cut["dense"] and TRUNCATION_MARK in cut["dense"]


def test_small_window_truncates_more() -> None:
    long_text = "word " * 5000
    sample = make_sample(passages=[Passage(long_text)])
    small = VanillaAnswerer(PromptOptions(n_ctx=1500)).messages(sample)[1]["content"]
    large = VanillaAnswerer(PromptOptions(n_ctx=4096)).messages(sample)[1]["content"]
    assert sample.question in small
    assert len(small) < len(large)


@pytest.mark.parametrize("name, options", CONFIGS, ids=CONFIG_IDS)
def test_non_english_sample(name: str, options: dict) -> None:
    sample = Sample(
        id="de1",
        question="Welche Stadt ist die Hauptstadt Deutschlands?",
        passages=[Passage("Berlin ist die Hauptstadt und größte Stadt Deutschlands."),
                  Passage("München liegt an der Isar.")],
        reference_answers=["Berlin"],
    )
    answerer = make_answerer(name, **options)
    llm = ScriptedLLM([reply_for(answerer, "\u201eBerlin\u201c")])
    answer = answerer.answer(sample, llm)
    user = llm.seen[0][1]["content"]
    assert sample.question in user
    if answerer.shares_prefix:
        assert "größte Stadt Deutschlands" in user and "München" in user
    assert answer.text == "Berlin"
    assert not answer.refusal


# -- registry -----------------------------------------------------------------------------

def test_registry_names_and_classes() -> None:
    assert ANSWERERS == {
        "vanilla": VanillaAnswerer, "evidence": EvidenceAnswerer,
        "instructrag": InstructRagAnswerer, "norag": NoRagAnswerer, "crag": CragAnswerer,
    }
    for name, cls in ANSWERERS.items():
        assert cls.name == name
        assert issubclass(cls, PromptedAnswerer)
        assert isinstance(make_answerer(name), cls)


def test_make_answerer_passes_options() -> None:
    crag = make_answerer("crag", cot=True, own_knowledge=True, options=PromptOptions(n_ctx=2048))
    assert isinstance(crag, CragAnswerer)
    assert crag.cot and crag.own_knowledge and crag.options.n_ctx == 2048
    assert isinstance(make_answerer(" InstructRAG "), InstructRagAnswerer)


def test_make_answerer_unknown_name_lists_valid_names() -> None:
    with pytest.raises(ValueError) as error:
        make_answerer("vanila")
    message = str(error.value)
    assert "vanila" in message
    assert all(name in message for name in ANSWERERS)


def test_make_answerer_unknown_option() -> None:
    with pytest.raises(ValueError, match="does not accept.*'chain'.*it accepts: options, cot"):
        make_answerer("crag", chain=True)
    with pytest.raises(ValueError, match="does not accept"):
        make_answerer("vanilla", examples=[])


# -- the real model -------------------------------------------------------------------------

SMOKE_SAMPLE = Sample(
    id="smoke",
    question="In which year was the Eiffel Tower completed?",
    passages=[
        Passage("The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris. "
                "It was designed by the company of Gustave Eiffel and completed in 1889 as the "
                "entrance arch of the World's Fair."),
        Passage("The Louvre, in Paris, is the most visited art museum in the world. It opened "
                "to the public in 1793 with 537 paintings."),
    ],
    reference_answers=["1889"],
    meta={"query_time": "03/05/2024, 10:15:00 PT"},
)


@pytest.mark.parametrize("name, options", [
    ("vanilla", {}), ("evidence", {}), ("instructrag", {}), ("crag", {}),
    ("crag", {"cot": True, "own_knowledge": True}), ("norag", {}),
], ids=["vanilla", "evidence", "instructrag", "crag", "crag-cot-own_knowledge", "norag"])
def test_real_model_smoke(embedded_llm, name: str, options: dict) -> None:
    # A vanilla call first puts the sample's prefix in llama.cpp's cache (almost free when
    # the previous test left it there); an answerer that shares the prefix then reuses it.
    primer = VanillaAnswerer().answer(SMOKE_SAMPLE, embedded_llm).calls[0]
    answerer = make_answerer(name, **options)
    answer = answerer.answer(SMOKE_SAMPLE, embedded_llm)

    assert answer.answerer == name
    assert isinstance(answer.text, str) and answer.raw.strip()
    assert answer.text == answer.text.strip()
    assert isinstance(answer.refusal, bool)
    assert all(0 <= i < len(SMOKE_SAMPLE.passages) for i in answer.evidence)
    assert answer.parse_error is None or isinstance(answer.parse_error, str)
    assert answer.messages == answerer.messages(SMOKE_SAMPLE)
    [call] = answer.calls
    assert call.purpose == f"{name} answer"
    assert call.prompt_tokens > 0 and call.completion_tokens > 0
    assert call.parsed["answer"] == answer.text
    if answerer.shares_prefix:
        assert call.cached_prompt_tokens > primer.prompt_tokens // 2
    else:
        assert call.cached_prompt_tokens < primer.prompt_tokens // 2
